/* phase.h - running one measured phase on N threads, and its results.
 *
 * A workload supplies a worker function; phase_run() starts the threads,
 * releases them together, samples the live op counters once per interval
 * from the main thread (also printing --progress lines), reacts to
 * SIGINT/SIGTERM, joins, merges the per-thread latency histograms and
 * computes wall-clock time (CLOCK_MONOTONIC) and CPU time (getrusage
 * deltas). Workers publish their counts into their own cache line (slot.h):
 * no locks and no shared writes on the hot path.
 *
 * Optional extras, all off by default (tree uses none of them):
 *  - with_bytes: interval samples also carry bytes and MB/s;
 *  - op classes (randio: "read", "write"): each thread counts ops, bytes
 *    and latencies per class in t->cls[k]; the phase reports them as
 *    "<class>s" sub-objects and per-interval "<class>_ops" rates. A worker
 *    that uses classes records its latencies only into the class
 *    histograms: they are merged into the phase histogram as well;
 *  - "order" and "run" fields that tag the phase (meta, seqio).
 */
#ifndef BOATLOAD_PHASE_H
#define BOATLOAD_PHASE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "json.h"
#include "slot.h"

#define PHASE_MAX_THREADS 256
#define PHASE_WHERE_MAX 1024
#define PHASE_MAX_CLASSES SLOT_MAX_CLASSES

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
    uint64_t bytes;    /* bytes moved within the interval (with_bytes) */
    double mb_per_s;
    uint64_t cls_ops[PHASE_MAX_CLASSES];
    double cls_ops_per_s[PHASE_MAX_CLASSES];
};

struct phase_class_result {
    uint64_t ops, bytes;
    struct hist *lat;              /* latencies (ns) of this class */
};

struct phase_result {
    const char *name;
    const char *order;             /* written as "order" unless NULL */
    int has_run;                   /* write "run" */
    uint64_t run;
    int with_bytes;                /* intervals carry bytes, mb_per_s */
    unsigned nclasses;
    const char *const *class_names;
    struct phase_class_result cls[PHASE_MAX_CLASSES];
    uint64_t ops, dirs, bytes, existing;
    double seconds, cpu_user_s, cpu_sys_s;
    struct hist *lat;              /* merged latencies (ns) */
    struct interval_sample *iv;
    size_t n_iv, cap_iv;
    uint64_t *thread_ops;          /* per_thread: ops of each thread, nthreads entries */
    unsigned nthreads;
    int interrupted;               /* stopped by SIGINT/SIGTERM */
    struct run_error error;        /* first failing system call, if any */
    /* paired (meta --pair-dir, seqio --pair-file): each op's time and the
     * same op's on the pair, summed apart; written as "paired" when set */
    int paired;
    const char *pair;
    double paired_own_s, paired_pair_s;
};

struct phase_opts {
    const char *name;          /* "create", ... */
    const char *unit;          /* for progress lines: "files" */
    unsigned threads;          /* 1..PHASE_MAX_THREADS */
    double interval_s;         /* sampling interval */
    int progress;              /* print progress lines to stderr */
    uint64_t expected_ops;     /* for progress percentage/ETA; 0 = unknown */
    const char *order;         /* optional "order" field ("sequential", "random") */
    int has_run;               /* optional "run" field (seqio: run index from 0) */
    uint64_t run;
    int with_bytes;            /* bytes and MB/s in the interval samples */
    unsigned nclasses;         /* 0..PHASE_MAX_CLASSES op classes */
    const char *const *class_names; /* e.g. {"read", "write"} */
    int per_thread;            /* report "thread_ops", each thread's ops (tree, meta) */
    int no_sync;               /* not announced on BOATLOAD_PHASE_SYNC_FD (directory phases) */
};

/* Per-thread counters of one op class. */
struct phase_class {
    uint64_t ops, bytes;
    struct hist hist;                    /* latencies in ns */
};

struct phase_run;

struct phase_thread {
    struct phase_run *run;
    unsigned id;
    uint64_t ops, dirs, bytes, existing; /* totals, owned by the thread */
    uint64_t t_end;                      /* now_ns() when the worker returned */
    struct phase_class *cls;             /* nclasses entries; NULL without classes */
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
    int released; /* the end snapshot is taken: the threads may exit (go_cond) */
    struct phase_result *res;
    phase_worker_fn fn;
    void *arg;
};

static inline int phase_stopping(const struct phase_thread *t)
{
    return atomic_load_explicit(&t->run->stop, memory_order_relaxed);
}

/* Publish ops, bytes and the per-class op counts kept in t, as one
 * snapshot for the interval sampler. */
static inline void phase_publish_counts(struct phase_thread *t)
{
    struct slot_counts c = {.ops = t->ops, .bytes = t->bytes};
    unsigned ncls = t->cls ? t->run->res->nclasses : 0;
    for (unsigned k = 0; k < ncls; k++)
        c.cls[k] = t->cls[k].ops;
    slot_write(&t->run->slots[t->id], &c, ncls);
}

/* Record a failing system call (the first one wins) and stop all threads. */
void phase_fail(struct phase_thread *t, int err, const char *where);

/* Run the phase. res is initialised here (free with phase_result_free).
 * Returns 0, or -1 if the phase could not run at all (out of memory). */
int phase_run(struct phase_result *res, const struct phase_opts *o,
              phase_worker_fn fn, void *arg);

/* Initialise res as a phase that did not start because its set-up failed
 * with err at where (e.g. opening the files it works on): no ops, the
 * error recorded. Returns -1 only when out of memory (res->lat NULL). */
int phase_result_setup_failed(struct phase_result *res, const struct phase_opts *o, int err,
                              const char *where);

/* Initialise res as a phase that did not start because the phase before
 * it (cause: a directory phase) ended the run: no ops, cause's error or
 * interruption. Returns -1 only when out of memory (res->lat NULL). */
int phase_result_not_run(struct phase_result *res, const struct phase_opts *o,
                         const struct phase_result *cause);

void phase_result_free(struct phase_result *res);
/* phase_result_free of res[0..n). */
void phase_results_free(struct phase_result *res, size_t n);

/* The phase failed or was interrupted: the workload runs no further phases. */
static inline int phase_result_ends_run(const struct phase_result *r)
{
    return r->error.set || r->interrupted;
}

/* {"name":..,"ops":..,...,"latency_us":{..},"intervals":[..]} */
void phase_write_json(struct json *j, const struct phase_result *r);

/* A directory phase (mkdir, rmdir: ops are directories; run is the index
 * of the file phase it belongs to):
 * {"name":..,"phase":..,"dirs":..,"existing":..,"seconds":..,"dirs_per_s":..,
 *  "cpu_user_s":..,"cpu_sys_s":..} */
void phase_write_dir_json(struct json *j, const struct phase_result *r);

#endif
