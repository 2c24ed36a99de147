/* phase.c - thread orchestration, interval sampling, result assembly. */
#include "phase.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "signals.h"
#include "timing.h"

struct thread_arg {
    struct phase_run *run;
    struct phase_thread *t;
};

void phase_fail(struct phase_thread *t, int err, const char *where)
{
    struct phase_run *run = t->run;
    pthread_mutex_lock(&run->lock);
    if (!run->res->error.set) {
        run->res->error.set = 1;
        run->res->error.phase = run->res->name;
        run->res->error.err = err;
        snprintf(run->res->error.where, sizeof run->res->error.where, "%s", where ? where : "");
    }
    pthread_mutex_unlock(&run->lock);
    atomic_store(&run->stop, 1);
}

/* The runner's monitor (boatload.measure.interference) snapshots the machine right
 * before and right after each timed phase. With BOATLOAD_PHASE_SYNC_FD
 * naming a socket, the worker says "begin NAME\n" and "end NAME\n" there
 * and waits for one byte back, outside the timed window, so the snapshots
 * neither fall into the phase nor miss its edges. A closed or broken socket
 * switches the handshake off for the rest of the run. */
static int sync_fd = -2; /* -2: not read yet, -1: off */

static void phase_sync(const char *what, const char *name)
{
    if (sync_fd == -2) {
        const char *env = getenv("BOATLOAD_PHASE_SYNC_FD");
        uint64_t fd;
        sync_fd = env && cli_parse_u64(env, &fd) == 0 && fd <= 1u << 20 ? (int)fd : -1;
    }
    if (sync_fd < 0)
        return;
    char line[160];
    int n = snprintf(line, sizeof line, "%s %s\n", what, name);
    if (n < 0 || (size_t)n >= sizeof line || send(sync_fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
        sync_fd = -1;
        return;
    }
    char ack;
    ssize_t r;
    do
        r = read(sync_fd, &ack, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1)
        sync_fd = -1;
}

static void *thread_main(void *p)
{
    struct phase_thread *t = p;
    struct phase_run *run = t->run;
    pthread_mutex_lock(&run->lock);
    while (!run->go)
        pthread_cond_wait(&run->go_cond, &run->lock);
    pthread_mutex_unlock(&run->lock);
    if (!atomic_load(&run->stop))
        run->fn(t, run->arg);
    phase_publish_counts(t);
    t->t_end = now_ns();
    atomic_fetch_add(&run->done, 1);
    /* Asleep until the end snapshot is taken: the monitor reads each
     * thread's run delay (/proc/PID/task/TID/schedstat) then, and a thread
     * that had exited would take its delay with it. */
    pthread_mutex_lock(&run->lock);
    while (!run->released)
        pthread_cond_wait(&run->go_cond, &run->lock);
    pthread_mutex_unlock(&run->lock);
    return NULL;
}

static void setup_failed(struct phase_result *res, int err)
{
    res->error.set = 1;
    res->error.phase = res->name;
    res->error.err = err;
    snprintf(res->error.where, sizeof res->error.where, "setup");
}

static void counts_sub(struct slot_counts *d, const struct slot_counts *a, const struct slot_counts *b)
{
    d->ops = a->ops - b->ops;
    d->bytes = a->bytes - b->bytes;
    for (unsigned k = 0; k < PHASE_MAX_CLASSES; k++)
        d->cls[k] = a->cls[k] - b->cls[k];
}

static double rate(uint64_t n, double dt)
{
    return dt > 0 ? (double)n / dt : 0.0;
}

static void sample_rates(struct interval_sample *s, double dt)
{
    s->ops_per_s = rate(s->ops, dt);
    s->mb_per_s = rate(s->bytes, dt) / 1e6;
    for (unsigned k = 0; k < PHASE_MAX_CLASSES; k++)
        s->cls_ops_per_s[k] = rate(s->cls_ops[k], dt);
}

static int add_sample(struct phase_result *r, double t_s, const struct slot_counts *c, double dt)
{
    if (r->n_iv == r->cap_iv) {
        size_t cap = r->cap_iv ? r->cap_iv * 2 : 64;
        struct interval_sample *n = realloc(r->iv, cap * sizeof *n);
        if (!n)
            return -1;
        r->iv = n;
        r->cap_iv = cap;
    }
    struct interval_sample *s = &r->iv[r->n_iv++];
    memset(s, 0, sizeof *s);
    s->t_s = t_s;
    s->ops = c->ops;
    s->bytes = c->bytes;
    for (unsigned k = 0; k < PHASE_MAX_CLASSES; k++)
        s->cls_ops[k] = c->cls[k];
    sample_rates(s, dt);
    return 0;
}

static void live_counts(const struct phase_run *run, unsigned n, struct slot_counts *c)
{
    memset(c, 0, sizeof *c);
    for (unsigned i = 0; i < n; i++) {
        struct slot_counts one;
        slot_read(&run->slots[i], &one);
        c->ops += one.ops;
        c->bytes += one.bytes;
        for (unsigned k = 0; k < PHASE_MAX_CLASSES; k++)
            c->cls[k] += one.cls[k];
    }
}

static void progress_line(const struct phase_opts *o, uint64_t done, uint64_t bytes, double elapsed,
                          double rate)
{
    char eta[32] = "?";
    if (o->expected_ops && rate > 0 && done <= o->expected_ops) {
        double s = (double)(o->expected_ops - done) / rate;
        if (s < 1e9) {
            unsigned long long u = (unsigned long long)(s + 0.5);
            snprintf(eta, sizeof eta, "%lluh%02llum%02llus", u / 3600, (u / 60) % 60, u % 60);
        }
    }
    char mb[48] = "";
    if (o->with_bytes)
        snprintf(mb, sizeof mb, ", %.1f MB/s", elapsed > 0 ? (double)bytes / 1e6 / elapsed : 0.0);
    if (o->expected_ops)
        fprintf(stderr, "boatload-worker: %s: %llu/%llu %s (%.1f%%), %.0f %s/s%s, ETA %s, elapsed %.1fs\n",
                o->name, (unsigned long long)done, (unsigned long long)o->expected_ops, o->unit,
                100.0 * (double)done / (double)o->expected_ops, rate, o->unit, mb, eta, elapsed);
    else
        fprintf(stderr, "boatload-worker: %s: %llu %s, %.0f %s/s%s, elapsed %.1fs\n", o->name,
                (unsigned long long)done, o->unit, rate, o->unit, mb, elapsed);
}

/* Zero res and set it up from o: name, tags, histograms. All or nothing:
 * -1 (and res->lat NULL) when out of memory. */
static int result_init(struct phase_result *res, const struct phase_opts *o)
{
    memset(res, 0, sizeof *res);
    res->name = o->name;
    res->order = o->order;
    res->has_run = o->has_run;
    res->run = o->run;
    res->with_bytes = o->with_bytes;
    res->nclasses = o->nclasses <= PHASE_MAX_CLASSES ? o->nclasses : PHASE_MAX_CLASSES;
    res->class_names = o->class_names;
    res->lat = malloc(sizeof *res->lat);
    int oom = !res->lat;
    if (o->per_thread) {
        res->nthreads = o->threads;
        res->thread_ops = calloc(o->threads ? o->threads : 1, sizeof *res->thread_ops);
        oom |= !res->thread_ops;
    }
    for (unsigned k = 0; k < res->nclasses; k++) {
        res->cls[k].lat = malloc(sizeof *res->cls[k].lat);
        oom |= !res->cls[k].lat;
    }
    if (oom) {
        phase_result_free(res);
        return -1;
    }
    hist_init(res->lat);
    for (unsigned k = 0; k < res->nclasses; k++)
        hist_init(res->cls[k].lat);
    return 0;
}

int phase_result_setup_failed(struct phase_result *res, const struct phase_opts *o, int err,
                              const char *where)
{
    if (result_init(res, o) != 0)
        return -1;
    res->error.set = 1;
    res->error.phase = res->name;
    res->error.err = err;
    snprintf(res->error.where, sizeof res->error.where, "%s", where ? where : "");
    /* one empty interval, like any phase that did no work */
    struct slot_counts none = {0};
    if (add_sample(res, 0.0, &none, 0.0) != 0) {
        phase_result_free(res);
        return -1;
    }
    return 0;
}

int phase_result_not_run(struct phase_result *res, const struct phase_opts *o,
                         const struct phase_result *cause)
{
    if (result_init(res, o) != 0)
        return -1;
    res->error = cause->error;
    res->interrupted = cause->interrupted;
    struct slot_counts none = {0};
    if (add_sample(res, 0.0, &none, 0.0) != 0) {
        phase_result_free(res);
        return -1;
    }
    return 0;
}

static void free_threads(struct phase_thread **th, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (th[i])
            free(th[i]->cls);
        free(th[i]);
    }
}

int phase_run(struct phase_result *res, const struct phase_opts *o,
              phase_worker_fn fn, void *arg)
{
    if (result_init(res, o) != 0)
        return -1;

    unsigned n = o->threads;
    struct phase_run run;
    memset(&run, 0, sizeof run);
    atomic_init(&run.stop, 0);
    atomic_init(&run.done, 0);
    run.res = res;
    run.fn = fn;
    run.arg = arg;
    pthread_mutex_init(&run.lock, NULL);
    pthread_cond_init(&run.go_cond, NULL);
    run.slots = aligned_alloc(64, n * sizeof *run.slots);
    struct phase_thread **th = calloc(n, sizeof *th);
    pthread_t *tids = calloc(n, sizeof *tids);
    if (!run.slots || !th || !tids) {
        setup_failed(res, ENOMEM);
        free(run.slots);
        free(th);
        free(tids);
        return -1;
    }
    memset(run.slots, 0, n * sizeof *run.slots);
    for (unsigned i = 0; i < n; i++) {
        th[i] = aligned_alloc(64, (sizeof **th + 63) / 64 * 64);
        if (th[i]) {
            memset(th[i], 0, sizeof **th);
            if (res->nclasses)
                th[i]->cls = malloc(res->nclasses * sizeof *th[i]->cls);
        }
        if (!th[i] || (res->nclasses && !th[i]->cls)) {
            setup_failed(res, ENOMEM);
            free_threads(th, i + 1);
            free(run.slots);
            free(th);
            free(tids);
            return -1;
        }
        th[i]->run = &run;
        th[i]->id = i;
        hist_init(&th[i]->hist);
        for (unsigned k = 0; k < res->nclasses; k++) {
            th[i]->cls[k].ops = th[i]->cls[k].bytes = 0;
            hist_init(&th[i]->cls[k].hist);
        }
    }

    /* Threads start with SIGINT/SIGTERM blocked: the main thread gets them. */
    sigset_t old;
    signals_block(&old);
    unsigned started = 0;
    for (; started < n; started++) {
        int rc = pthread_create(&tids[started], NULL, thread_main, th[started]);
        if (rc != 0) {
            phase_fail(th[started], rc, "pthread_create");
            break;
        }
    }
    signals_restore(&old);

    if (signal_stop) {
        res->interrupted = 1;
        atomic_store(&run.stop, 1);
    }
    struct cpu_times cpu0, cpu1;
    if (!o->no_sync)
        phase_sync("begin", o->name);
    cpu_times_now(&cpu0);
    uint64_t t_start = now_ns();
    pthread_mutex_lock(&run.lock);
    run.go = 1;
    pthread_cond_broadcast(&run.go_cond);
    pthread_mutex_unlock(&run.lock);

    uint64_t iv_ns = (uint64_t)(o->interval_s * 1e9);
    if (iv_ns < 1000000)
        iv_ns = 1000000;
    const uint64_t poll_ns = 10000000; /* 10 ms: reaction time to signals/end */
    uint64_t next = t_start + iv_ns, last_t = t_start;
    struct slot_counts last = {0}, cur, delta;
    int oom = 0;
    while (atomic_load(&run.done) < started) {
        if (signal_stop && !res->interrupted) {
            res->interrupted = 1;
            atomic_store(&run.stop, 1);
        }
        uint64_t now = now_ns();
        if (now >= next) {
            live_counts(&run, n, &cur);
            counts_sub(&delta, &cur, &last);
            double dt = (double)(now - last_t) / 1e9;
            if (add_sample(res, (double)(now - t_start) / 1e9, &delta, dt) != 0)
                oom = 1;
            if (o->progress) {
                double el = (double)(now - t_start) / 1e9;
                progress_line(o, cur.ops, cur.bytes, el, rate(cur.ops, el));
            }
            last_t = now;
            last = cur;
            next += iv_ns;
            if (next <= now)
                next = now + iv_ns;
            continue;
        }
        uint64_t wait = next - now;
        sleep_ns(wait < poll_ns ? wait : poll_ns);
    }
    cpu_times_now(&cpu1);
    if (!o->no_sync)
        phase_sync("end", o->name);
    pthread_mutex_lock(&run.lock);
    run.released = 1;
    pthread_cond_broadcast(&run.go_cond);
    pthread_mutex_unlock(&run.lock);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);

    uint64_t t_end = t_start;
    for (unsigned i = 0; i < started; i++) {
        if (th[i]->t_end > t_end)
            t_end = th[i]->t_end;
        res->ops += th[i]->ops;
        if (res->thread_ops)
            res->thread_ops[i] = th[i]->ops;
        res->dirs += th[i]->dirs;
        res->bytes += th[i]->bytes;
        res->existing += th[i]->existing;
        hist_merge(res->lat, &th[i]->hist);
        for (unsigned k = 0; k < res->nclasses; k++) {
            res->cls[k].ops += th[i]->cls[k].ops;
            res->cls[k].bytes += th[i]->cls[k].bytes;
            hist_merge(res->cls[k].lat, &th[i]->cls[k].hist);
            hist_merge(res->lat, &th[i]->cls[k].hist);
        }
    }
    if (signal_stop && !res->interrupted && res->ops < o->expected_ops)
        res->interrupted = 1;

    /* final (partial) interval, ending at the end of the phase */
    struct slot_counts total = {.ops = res->ops, .bytes = res->bytes};
    for (unsigned k = 0; k < res->nclasses; k++)
        total.cls[k] = res->cls[k].ops;
    counts_sub(&delta, &total, &last);
    if (t_end > last_t) {
        if (add_sample(res, (double)(t_end - t_start) / 1e9, &delta,
                       (double)(t_end - last_t) / 1e9) != 0)
            oom = 1;
    } else if (res->n_iv > 0) {
        /* the last sample was taken after the workers had finished:
         * make it end at the phase end and hold all remaining ops */
        struct interval_sample *s = &res->iv[res->n_iv - 1];
        double start = res->n_iv > 1 ? res->iv[res->n_iv - 2].t_s : 0.0;
        s->t_s = (double)(t_end - t_start) / 1e9;
        s->ops += delta.ops;
        s->bytes += delta.bytes;
        for (unsigned k = 0; k < PHASE_MAX_CLASSES; k++)
            s->cls_ops[k] += delta.cls[k];
        sample_rates(s, s->t_s - start);
    } else if (add_sample(res, 0.0, &total, 0.0) != 0) {
        oom = 1;
    }

    res->seconds = (double)(t_end - t_start) / 1e9;
    res->cpu_user_s = cpu1.user_s - cpu0.user_s;
    res->cpu_sys_s = cpu1.sys_s - cpu0.sys_s;
    if (o->progress) {
        progress_line(o, res->ops, res->bytes, res->seconds, rate(res->ops, res->seconds));
    }

    free_threads(th, n);
    free(th);
    free(tids);
    free(run.slots);
    pthread_mutex_destroy(&run.lock);
    pthread_cond_destroy(&run.go_cond);
    return oom ? -1 : 0;
}

void phase_result_free(struct phase_result *res)
{
    free(res->lat);
    free(res->iv);
    free(res->thread_ops);
    res->lat = NULL;
    res->iv = NULL;
    res->thread_ops = NULL;
    for (unsigned k = 0; k < PHASE_MAX_CLASSES; k++) {
        free(res->cls[k].lat);
        res->cls[k].lat = NULL;
    }
}

void phase_results_free(struct phase_result *res, size_t n)
{
    for (size_t k = 0; k < n; k++)
        phase_result_free(&res[k]);
}

static void lat_field(struct json *j, const char *k, double ns, int empty)
{
    json_key(j, k);
    if (empty)
        json_null(j);
    else
        json_double(j, ns / 1000.0);
}

static void write_latency(struct json *j, const struct hist *h)
{
    int empty = !h || h->count == 0;
    json_key(j, "latency_us");
    json_obj_begin(j);
    json_key(j, "count");
    json_u64(j, h ? h->count : 0);
    lat_field(j, "mean", empty ? 0 : hist_mean(h), empty);
    lat_field(j, "stddev", empty ? 0 : hist_stddev(h), empty);
    lat_field(j, "min", empty ? 0 : (double)h->min, empty);
    lat_field(j, "p50", empty ? 0 : hist_percentile(h, 50.0), empty);
    lat_field(j, "p90", empty ? 0 : hist_percentile(h, 90.0), empty);
    lat_field(j, "p99", empty ? 0 : hist_percentile(h, 99.0), empty);
    lat_field(j, "p99_9", empty ? 0 : hist_percentile(h, 99.9), empty);
    lat_field(j, "max", empty ? 0 : (double)h->max, empty);
    json_obj_end(j);
}

void phase_write_json(struct json *j, const struct phase_result *r)
{
    char key[64];
    json_obj_begin(j);
    json_key(j, "name");
    json_str(j, r->name);
    if (r->has_run) {
        json_key(j, "run");
        json_u64(j, r->run);
    }
    if (r->order) {
        json_key(j, "order");
        json_str(j, r->order);
    }
    json_key(j, "ops");
    json_u64(j, r->ops);
    json_key(j, "dirs");
    json_u64(j, r->dirs);
    json_key(j, "bytes");
    json_u64(j, r->bytes);
    json_key(j, "existing");
    json_u64(j, r->existing);
    json_key(j, "seconds");
    json_double(j, r->seconds);
    json_key(j, "ops_per_s");
    json_double(j, r->seconds > 0 ? (double)r->ops / r->seconds : 0.0);
    json_key(j, "mb_per_s");
    json_double(j, r->seconds > 0 ? (double)r->bytes / 1e6 / r->seconds : 0.0);
    json_key(j, "cpu_user_s");
    json_double(j, r->cpu_user_s);
    json_key(j, "cpu_sys_s");
    json_double(j, r->cpu_sys_s);

    if (r->thread_ops) {
        json_key(j, "thread_ops");
        json_arr_begin(j);
        for (unsigned i = 0; i < r->nthreads; i++)
            json_u64(j, r->thread_ops[i]);
        json_arr_end(j);
    }

    write_latency(j, r->lat);

    if (r->paired) {
        json_key(j, "paired");
        json_obj_begin(j);
        json_key(j, "pair");
        json_str(j, r->pair);
        json_key(j, "seconds");
        json_double(j, r->paired_own_s);
        json_key(j, "pair_seconds");
        json_double(j, r->paired_pair_s);
        json_key(j, "ratio");
        json_double(j, r->paired_pair_s > 0 ? r->paired_own_s / r->paired_pair_s : 0.0);
        json_obj_end(j);
    }

    for (unsigned k = 0; k < r->nclasses; k++) {
        const struct phase_class_result *c = &r->cls[k];
        snprintf(key, sizeof key, "%ss", r->class_names[k]);
        json_key(j, key);
        json_obj_begin(j);
        json_key(j, "ops");
        json_u64(j, c->ops);
        json_key(j, "bytes");
        json_u64(j, c->bytes);
        json_key(j, "ops_per_s");
        json_double(j, rate(c->ops, r->seconds));
        json_key(j, "mb_per_s");
        json_double(j, rate(c->bytes, r->seconds) / 1e6);
        write_latency(j, c->lat);
        json_obj_end(j);
    }

    json_key(j, "intervals");
    json_arr_begin(j);
    for (size_t i = 0; i < r->n_iv; i++) {
        json_obj_begin(j);
        json_key(j, "t_s");
        json_double(j, r->iv[i].t_s);
        json_key(j, "ops");
        json_u64(j, r->iv[i].ops);
        json_key(j, "ops_per_s");
        json_double(j, r->iv[i].ops_per_s);
        if (r->with_bytes) {
            json_key(j, "bytes");
            json_u64(j, r->iv[i].bytes);
            json_key(j, "mb_per_s");
            json_double(j, r->iv[i].mb_per_s);
        }
        for (unsigned k = 0; k < r->nclasses; k++) {
            snprintf(key, sizeof key, "%s_ops", r->class_names[k]);
            json_key(j, key);
            json_u64(j, r->iv[i].cls_ops[k]);
            snprintf(key, sizeof key, "%s_ops_per_s", r->class_names[k]);
            json_key(j, key);
            json_double(j, r->iv[i].cls_ops_per_s[k]);
        }
        json_obj_end(j);
    }
    json_arr_end(j);
    json_obj_end(j);
}

void phase_write_dir_json(struct json *j, const struct phase_result *r)
{
    json_obj_begin(j);
    json_key(j, "name");
    json_str(j, r->name);
    json_key(j, "phase");
    json_u64(j, r->run);
    json_key(j, "dirs");
    json_u64(j, r->ops);
    json_key(j, "existing");
    json_u64(j, r->existing);
    json_key(j, "seconds");
    json_double(j, r->seconds);
    json_key(j, "dirs_per_s");
    json_double(j, rate(r->ops, r->seconds));
    json_key(j, "cpu_user_s");
    json_double(j, r->cpu_user_s);
    json_key(j, "cpu_sys_s");
    json_double(j, r->cpu_sys_s);
    json_obj_end(j);
}
