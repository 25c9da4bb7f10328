/*
 * accept.c — Accept negotiation (md_http.h): the media range that matches
 * a type best, and its q, decide between JSON and text/plain (the
 * tool_result) and between the two formats of /metrics.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/md_http.h"

/* q of the best-matching media range for type/sub in an Accept value. */
static double accept_q(const char *accept, const char *type, const char *sub)
{
    double best = -1;
    int best_spec = -1;
    const char *p = accept;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        const char *semi = memchr(start, ';', (size_t)(end - start));
        const char *mend = semi ? semi : end;
        while (mend > start && (mend[-1] == ' ' || mend[-1] == '\t'))
            mend--;
        const char *slash = memchr(start, '/', (size_t)(mend - start));
        if (!slash)
            continue;
        size_t tl = (size_t)(slash - start), sl = (size_t)(mend - slash - 1);
        int spec;
        if (tl == 1 && *start == '*' && sl == 1 && slash[1] == '*')
            spec = 0;
        else if (tl == strlen(type) && strncasecmp(start, type, tl) == 0 && sl == 1 &&
                 slash[1] == '*')
            spec = 1;
        else if (tl == strlen(type) && strncasecmp(start, type, tl) == 0 && sl == strlen(sub) &&
                 strncasecmp(slash + 1, sub, sl) == 0)
            spec = 2;
        else
            continue;
        double q = 1;
        /* Parameters: ";q=0.5" (others ignored). */
        for (const char *a = semi; a;) {
            a++;
            while (a < end && (*a == ' ' || *a == '\t'))
                a++;
            if (a + 1 < end && (a[0] == 'q' || a[0] == 'Q') && a[1] == '=')
                q = strtod(a + 2, NULL);
            a = a < end ? memchr(a, ';', (size_t)(end - a)) : NULL;
        }
        if (spec > best_spec) {
            best_spec = spec;
            best = q;
        }
    }
    return best;
}

int md_http_wants_openmetrics(const char *accept)
{
    if (!accept || !*accept)
        return 0;
    /* Named: a wildcard alone keeps the Prometheus text format. */
    static const char name[] = "application/openmetrics-text";
    int named = 0;
    for (const char *p = accept; *p && !named; p++)
        named = strncasecmp(p, name, sizeof name - 1) == 0;
    double om = accept_q(accept, "application", "openmetrics-text");
    return named && om > 0 && om >= accept_q(accept, "text", "plain");
}

int md_http_wants_text(const char *accept)
{
    if (!accept || !*accept)
        return 0;
    double text = accept_q(accept, "text", "plain");
    double json = accept_q(accept, "application", "json");
    return text > 0 && text > json;
}
