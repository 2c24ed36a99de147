/* timing.h - monotonic clock and CPU accounting (shared by all workloads). */
#ifndef BOATLOAD_TIMING_H
#define BOATLOAD_TIMING_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds from CLOCK_MONOTONIC (vDSO on Linux: no system call). */
static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct cpu_times {
    double user_s;
    double sys_s;
};

/* Process-wide user/system CPU time so far (getrusage RUSAGE_SELF). */
void cpu_times_now(struct cpu_times *out);

/* The peak resident set size of this process's own address space since it
 * was exec'd, in KiB (VmHWM of /proc/self/status); -1 when unknown.
 * Unlike getrusage's ru_maxrss it does not carry the size of the parent
 * that forked us (a Python harness: tens of MiB). */
int64_t peak_rss_kib(void);

/* Sleep for ns nanoseconds; returns early (without error) on a signal. */
void sleep_ns(uint64_t ns);

#endif
