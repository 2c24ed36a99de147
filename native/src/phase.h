/* phase.h - running one measured phase on N threads, and its results.
 *
 * A workload supplies a worker function; phase_run() starts the threads,
 * releases them together, samples the live op counters once per interval
 * from the main thread (also printing --progress lines), reacts to
 * SIGINT/SIGTERM, joins, merges the per-thread latency histograms and
 * computes wall-clock time (CLOCK_MONOTONIC) and CPU time (getrusage
 * deltas). Workers publish their op count with a relaxed atomic store into
 * their own cache line: no locks and no shared writes on the hot path.
 */
#ifndef BOATLOAD_PHASE_H
#define BOATLOAD_PHASE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "json.h"

#define PHASE_MAX_THREADS 256
#define PHASE_WHERE_MAX 1024

struct run_error {
    int set;
    const char *phase;
    int err;                       /* errno value */
    char where[PHASE_WHERE_MAX];   /* path relative to the target dir */
};

struct interval_sample {
    double t_s;        /* end of the interval, seconds since phase start */
    uint64_t ops;      /* ops completed within the interval */
    double ops_per_s;
};

struct phase_result {
    const char *name;
    uint64_t ops, dirs, bytes, existing;
    double seconds, cpu_user_s, cpu_sys_s;
    struct hist *lat;              /* merged latencies (ns) */
    struct interval_sample *iv;
    size_t n_iv, cap_iv;
    int interrupted;               /* stopped by SIGINT/SIGTERM */
    struct run_error error;        /* first failing system call, if any */
};

struct phase_opts {
    const char *name;          /* "create", ... */
    const char *unit;          /* for progress lines: "files" */
    unsigned threads;          /* 1..PHASE_MAX_THREADS */
    double interval_s;         /* sampling interval */
    int progress;              /* print progress lines to stderr */
    uint64_t expected_ops;     /* for progress percentage/ETA; 0 = unknown */
};

struct ops_slot {
    _Alignas(64) _Atomic uint64_t ops;
    char pad[64 - sizeof(uint64_t)];
};

struct phase_run;

struct phase_thread {
    struct phase_run *run;
    unsigned id;
    uint64_t ops, dirs, bytes, existing; /* totals, owned by the thread */
    uint64_t t_end;                      /* now_ns() when the worker returned */
    struct hist hist;                    /* latencies in ns */
};

typedef void (*phase_worker_fn)(struct phase_thread *t, void *arg);

struct phase_run {
    _Atomic int stop;
    _Atomic unsigned done;
    struct ops_slot *slots;
    pthread_mutex_t lock;     /* guards error and the start gate */
    pthread_cond_t go_cond;
    int go;
    struct phase_result *res;
    phase_worker_fn fn;
    void *arg;
};

static inline int phase_stopping(const struct phase_thread *t)
{
    return atomic_load_explicit(&t->run->stop, memory_order_relaxed);
}

/* Publish the thread's running op count for interval sampling/progress. */
static inline void phase_publish(struct phase_thread *t, uint64_t ops)
{
    atomic_store_explicit(&t->run->slots[t->id].ops, ops, memory_order_relaxed);
}

/* Record a failing system call (the first one wins) and stop all threads. */
void phase_fail(struct phase_thread *t, int err, const char *where);

/* Run the phase. res is initialised here (free with phase_result_free).
 * Returns 0, or -1 if the phase could not run at all (out of memory). */
int phase_run(struct phase_result *res, const struct phase_opts *o,
              phase_worker_fn fn, void *arg);

void phase_result_free(struct phase_result *res);

/* {"name":..,"ops":..,...,"latency_us":{..},"intervals":[..]} */
void phase_write_json(struct json *j, const struct phase_result *r);

#endif
