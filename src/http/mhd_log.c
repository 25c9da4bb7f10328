/*
 * mhd_log.c — libmicrohttpd's messages as memoryd's log lines, for both
 * daemons (daemon.c, metrics.c). The public port's also counts the
 * connections libmicrohttpd closes at --max-connections.
 */
#include <stdio.h>
#include <string.h>

#include "base/md_log.h"
#include "base/md_metrics.h"
#include "internal.h"

static void log_line(const char *fmt, va_list ap, int public_port)
{
    char text[512];
    vsnprintf(text, sizeof text, fmt, ap);
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
        text[--n] = '\0';
    /* libmicrohttpd closes a connection over MHD_OPTION_CONNECTION_LIMIT
     * itself; this message is the only sign of it. */
    static const char limit[] = "Server reached connection limit";
    if (public_port && strncmp(text, limit, sizeof limit - 1) == 0)
        md_metrics_refused(MD_MR_GLOBAL);
    md_log_msg(MD_LOG_WARN, "libmicrohttpd", text);
}

void md_http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    log_line(fmt, ap, 0);
}

void md_http_mhd_log_public(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    log_line(fmt, ap, 1);
}
