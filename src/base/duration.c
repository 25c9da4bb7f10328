/* duration.c — durations written as a number and a unit (see md_duration.h). */
#include "base/md_duration.h"

#include <stdio.h>
#include <string.h>

static const struct unit {
    const char *name;
    int64_t ms;
} units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};

int md_duration_parse(const char *s, size_t n, int64_t *ms)
{
    size_t i = 0;
    int64_t v = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        if (v > MD_DURATION_MAX_MS)
            return -1;
        v = v * 10 + (s[i++] - '0');
    }
    if (i == 0)
        return -1;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        size_t ul = strlen(units[u].name);
        if (n - i != ul || memcmp(s + i, units[u].name, ul) != 0)
            continue;
        if (v == 0 || v > MD_DURATION_MAX_MS / units[u].ms)
            return -1;
        *ms = v * units[u].ms;
        return 0;
    }
    return -1;
}

void md_duration_format(int64_t ms, char *buf, size_t len)
{
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        if (ms % units[u].ms == 0) {
            snprintf(buf, len, "%lld%s", (long long)(ms / units[u].ms), units[u].name);
            return;
        }
}
