/* tenant.c — tenant names (see md_tenant.h). */
#include "base/md_tenant.h"

int md_tenant_valid(const char *s, size_t n)
{
    if (n < 1 || n > MD_TENANT_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}
