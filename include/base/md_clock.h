/* md_clock.h — deadlines for pthread_cond_timedwait.
 *
 * Nothing allocated; no errors. */
#ifndef MD_CLOCK_H
#define MD_CLOCK_H

#include <time.h>

/* CLOCK_REALTIME `ms` milliseconds from now (ms >= 0), as
 * pthread_cond_timedwait takes it. */
static inline struct timespec md_deadline_ms(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

#endif
