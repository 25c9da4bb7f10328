/*
 * ceiling.c — the HTTP ceiling for memoryd's benchmark: a minimal
 * libmicrohttpd server that answers every request with a fixed small JSON
 * body, in the same threading mode as memoryd (internal polling thread,
 * epoll, a thread pool of one thread per CPU, suspend/resume allowed). It
 * reads and drops request bodies like any POST handler must.
 *
 *   ceiling PORT [THREADS]
 *
 * Runs until SIGINT/SIGTERM.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char BODY[] = "{\"type\":\"tool_result\",\"content\":\"ok\",\"is_error\":false}";

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    (void)upload_data;
    static int first_call_marker;
    if (*req_cls == NULL) {
        *req_cls = &first_call_marker; /* headers: wait for the body */
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        *upload_data_size = 0; /* body bytes: dropped */
        return MHD_YES;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(sizeof BODY - 1, (void *)BODY, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ceiling PORT [THREADS]\n");
        return 2;
    }
    unsigned port = (unsigned)strtoul(argv[1], NULL, 10);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads =
        argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : (unsigned)(ncpu > 0 ? ncpu : 2);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_Daemon *d =
        MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, NULL,
                         MHD_OPTION_THREAD_POOL_SIZE, threads > 1 ? threads : 0,
                         MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 << 10, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "ceiling: cannot listen on port %u\n", port);
        return 1;
    }
    fprintf(stderr, "ceiling: listening on %u with %u threads\n", port, threads);
    int sig;
    sigwait(&sigs, &sig);
    MHD_stop_daemon(d);
    return 0;
}
