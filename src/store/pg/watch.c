/*
 * watch.c — hearing of other instances' commits (PostgreSQL):
 * a thread with a connection of its own LISTENs on the channel
 * memoryd_changes, on which every write transaction NOTIFYs the tenants it
 * changed (payload: the tenant's name; PostgreSQL delivers it at the
 * commit). Each notification is passed to the callback: the change feed's
 * long polls wake on any instance's writes. An erasure's ("erased:" and the
 * name) first makes every tenant id cache of the process forget
 * (md_tenant_cache.h), then is passed on as the tenant's name.
 *
 * A lost connection is opened again (every second while the server cannot
 * be reached); notifications sent meanwhile are lost, so the callback is
 * also called with NULL (every tenant) once the thread listens again.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/md_log.h"
#include "internal.h"
#include "store/md_tenant_cache.h"

struct md_pg_watch {
    char *uri;
    md_pg_watch_cb cb;
    void *ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    int stop;
    int wake[2]; /* a pipe that ends the poll at stop */
};

static int stopping(struct md_pg_watch *w)
{
    pthread_mutex_lock(&w->mu);
    int s = w->stop;
    pthread_mutex_unlock(&w->mu);
    return s;
}

/* Wait up to `ms` for the connection's socket (or the stop pipe). */
static int wait_for(struct md_pg_watch *w, PGconn *c, int ms)
{
    struct pollfd fds[2] = {{w->wake[0], POLLIN, 0}, {c ? PQsocket(c) : -1, POLLIN, 0}};
    int n = poll(fds, c ? 2 : 1, ms);
    return n < 0 && errno != EINTR ? -1 : n;
}

static PGconn *listen_conn(struct md_pg_watch *w)
{
    char why[512];
    PGconn *c = md_pg_connect(w->uri, why, sizeof why);
    if (!c)
        return NULL;
    PGresult *r = PQexec(c, "LISTEN memoryd_changes");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

static void *watch_main(void *arg)
{
    struct md_pg_watch *w = arg;
    PGconn *c = NULL;
    int failures = 0;
    while (!stopping(w)) {
        if (!c) {
            c = listen_conn(w);
            if (!c) {
                if (failures++ == 0)
                    md_log_msg(MD_LOG_WARN, "change notifications: cannot listen; retrying", NULL);
                wait_for(w, NULL, 1000);
                continue;
            }
            if (failures)
                w->cb(w->ctx, NULL); /* what was said meanwhile is lost */
            failures = 0;
        }
        if (wait_for(w, c, 1000) < 0 || !PQconsumeInput(c) || PQstatus(c) != CONNECTION_OK) {
            PQfinish(c);
            c = NULL;
            failures = 1;
            continue;
        }
        PGnotify *n;
        while ((n = PQnotifies(c)) != NULL) {
            const char *tenant = n->extra;
            if (strncmp(tenant, MD_PG_ERASED, MD_PG_ERASED_LEN) == 0) {
                md_tenant_cache_forget();
                tenant += MD_PG_ERASED_LEN;
            }
            w->cb(w->ctx, tenant);
            PQfreemem(n);
        }
    }
    if (c)
        PQfinish(c);
    return NULL;
}

struct md_pg_watch *md_pg_watch_start(const char *uri, md_pg_watch_cb cb, void *ctx)
{
    struct md_pg_watch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->uri = strdup(uri);
    w->cb = cb;
    w->ctx = ctx;
    pthread_mutex_init(&w->mu, NULL);
    if (!w->uri || pipe(w->wake) != 0) {
        free(w->uri);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        close(w->wake[0]);
        close(w->wake[1]);
        free(w->uri);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

void md_pg_watch_stop(struct md_pg_watch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_mutex_unlock(&w->mu);
    if (write(w->wake[1], "x", 1) < 0) {
        /* the poll ends within a second anyway */
    }
    pthread_join(w->thread, NULL);
    close(w->wake[0]);
    close(w->wake[1]);
    pthread_mutex_destroy(&w->mu);
    free(w->uri);
    free(w);
}
