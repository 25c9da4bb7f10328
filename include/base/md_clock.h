/* md_clock.h — durations and deadlines for pthread_cond_timedwait.
 *
 * Nothing allocated; no errors. */
#ifndef MD_CLOCK_H
#define MD_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in microseconds (for durations). */
static inline uint64_t md_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* CLOCK_REALTIME in milliseconds since the epoch (times that are stored). */
static inline int64_t md_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + (int64_t)(ts.tv_nsec / 1000000);
}

/* CLOCK_REALTIME `us` microseconds from now (us >= 0), as
 * pthread_cond_timedwait takes it. */
static inline struct timespec md_deadline_us(long long us)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    long long ns = t.tv_nsec + (us % 1000000) * 1000;
    t.tv_sec += (time_t)(us / 1000000 + ns / 1000000000);
    t.tv_nsec = (long)(ns % 1000000000);
    return t;
}

/* The same `ms` milliseconds from now (ms >= 0). */
static inline struct timespec md_deadline_ms(long ms)
{
    return md_deadline_us((long long)ms * 1000);
}

#endif
