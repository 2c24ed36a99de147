/* timing.c - CPU accounting and sleeping. */
#include "timing.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static double tv_seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void cpu_times_now(struct cpu_times *out)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        out->user_s = 0.0;
        out->sys_s = 0.0;
        return;
    }
    out->user_s = tv_seconds(ru.ru_utime);
    out->sys_s = tv_seconds(ru.ru_stime);
}

int64_t peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return -1;
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            if (sscanf(line + 6, "%lld", &kib) != 1)
                kib = -1;
            break;
        }
    fclose(f);
    return kib;
}

void sleep_ns(uint64_t ns)
{
    struct timespec ts = {
        .tv_sec = (time_t)(ns / 1000000000ull),
        .tv_nsec = (long)(ns % 1000000000ull),
    };
    /* EINTR is fine: callers re-check their stop conditions. */
    (void)nanosleep(&ts, NULL);
}
