/* filter.c - nbdkit filter "devmodel": serves every request after the time
 * the device model (model.c) gives it, one request at a time (one arm).
 *
 *   nbdkit --filter=.../devmodel.so file disk.img dm-kind=hdd dm-rpm=7200 ...
 *          dm-stats=PATH
 *
 * dm-KEY=VALUE sets a model parameter (params.c); dm-stats names a file that
 * gets the request counts as JSON (written when the model is made, after each
 * flush and at close),
 * so tests can tell how many flushes reached the device. PATH.live, mapped
 * shared, holds the same counts after every request (LIVE_WORDS below), so
 * that a reader can take them at any moment (the edges of a measured phase)
 * at the cost of a few stores per request. dm-trace=PATH (optional) writes
 * one line per request: op (r, w, z, f), offset, length, arrival (the
 * monotonic clock) and service time in microseconds, for finding where a
 * phase's time goes. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <nbdkit-filter.h>

#include "model.h"

static struct dm_params params;
static char *stats_path;
static struct dm model;
static int model_ready;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The live counts: LIVE_WORDS little-endian 64-bit words, a sequence number
 * (odd while an update is under way; a reader takes two equal reads with an
 * even one), then reads, writes, flushes, fua_writes, cache_read_hits,
 * extents_written, modelled_us and flush_us (IEEE doubles), size, read_bytes,
 * write_bytes, seq_reads, read_us (a double). */
#define LIVE_WORDS 14
static char *live_path;
static volatile uint64_t *live;
static char *trace_path;
static FILE *trace;

#define SPIN_US 200.0

static double mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The stack costs its overhead on the way in and out; sleep until the
 * model's end less that, so that the caller sees the model's time. */
static void sleep_until(double end_us, uint32_t len)
{
    end_us -= params.overhead_us + params.overhead_us_per_mib * len / 1048576.0;
    /* Sleep to SPIN_US before the end, then spin: a thread woken from a
     * sleep comes back late by a varying amount on a busy machine, a
     * spinning one does not. */
    double wake = end_us - SPIN_US;
    if (wake > mono_us()) {
        struct timespec ts = {.tv_sec = (time_t)(wake / 1e6)};
        ts.tv_nsec = (long)((wake - (double)ts.tv_sec * 1e6) * 1e3);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    while (mono_us() < end_us)
        ;
}

/* Caller holds the lock. Written to a temporary name and renamed, so a
 * reader never sees half a file. */
static void write_stats(void)
{
    if (!stats_path || !model_ready)
        return;
    size_t n = strlen(stats_path) + 5;
    char tmp[n];
    snprintf(tmp, n, "%s.tmp", stats_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        nbdkit_error("devmodel: cannot write %s: %m", tmp);
        return;
    }
    fprintf(f,
            "{\"reads\": %" PRIu64 ", \"writes\": %" PRIu64 ", \"flushes\": %" PRIu64
            ", \"fua_writes\": %" PRIu64 ", \"cache_read_hits\": %" PRIu64
            ", \"extents_written\": %" PRIu64 ", \"modelled_us\": %.1f, \"flush_us\": %.1f, \"size\": %" PRIu64
            ", \"read_bytes\": %" PRIu64 ", \"write_bytes\": %" PRIu64 ", \"seq_reads\": %" PRIu64
            ", \"read_us\": %.1f}\n",
            model.st.reads, model.st.writes, model.st.flushes, model.st.fua_writes,
            model.st.cache_read_hits, model.st.extents_written, model.st.modelled_us, model.st.flush_us,
            model.size, model.st.read_bytes, model.st.write_bytes, model.st.seq_reads, model.st.read_us);
    if (fclose(f) != 0 || rename(tmp, stats_path) != 0)
        nbdkit_error("devmodel: cannot write %s: %m", stats_path);
}

static uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* Caller holds the lock. */
static void publish(void)
{
    if (!live)
        return;
    uint64_t seq = live[0];
    live[0] = seq + 1;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    const struct dm_stats *st = &model.st;
    live[1] = st->reads;
    live[2] = st->writes;
    live[3] = st->flushes;
    live[4] = st->fua_writes;
    live[5] = st->cache_read_hits;
    live[6] = st->extents_written;
    live[7] = bits(st->modelled_us);
    live[8] = bits(st->flush_us);
    live[9] = model.size;
    live[10] = st->read_bytes;
    live[11] = st->write_bytes;
    live[12] = st->seq_reads;
    live[13] = bits(st->read_us);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    live[0] = seq + 2;
}

/* Caller holds the lock. */
static void trace_request(char op, uint64_t offset, uint32_t count, double now, double end)
{
    if (trace)
        fprintf(trace, "%c %" PRIu64 " %" PRIu32 " %.1f %.1f\n", op, offset, count, now, end - now);
}

/* Caller holds the lock; once, when the model is made. */
static int live_open(void)
{
    if (!live_path)
        return 0;
    int fd = open(live_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, LIVE_WORDS * sizeof(uint64_t)) != 0) {
        nbdkit_error("devmodel: cannot make %s: %m", live_path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *p = mmap(NULL, LIVE_WORDS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        nbdkit_error("devmodel: cannot map %s: %m", live_path);
        return -1;
    }
    live = p;
    publish();
    return 0;
}

static void devmodel_load(void) { dm_params_init(&params); }

static void devmodel_unload(void)
{
    pthread_mutex_lock(&lock);
    write_stats();
    if (model_ready)
        dm_free(&model);
    model_ready = 0;
    if (live)
        munmap((void *)live, LIVE_WORDS * sizeof(uint64_t));
    live = NULL;
    if (trace)
        fclose(trace);
    trace = NULL;
    pthread_mutex_unlock(&lock);
    free(stats_path);
    free(live_path);
    free(trace_path);
}

static int devmodel_config(nbdkit_next_config *next, nbdkit_backend *nxdata, const char *key,
                           const char *value)
{
    if (strncmp(key, "dm-", 3) != 0)
        return next(nxdata, key, value);
    if (!strcmp(key, "dm-stats")) {
        free(stats_path);
        stats_path = nbdkit_absolute_path(value);
        if (!stats_path)
            return -1;
        free(live_path);
        size_t n = strlen(stats_path) + sizeof ".live";
        live_path = malloc(n);
        if (!live_path) {
            nbdkit_error("devmodel: out of memory");
            return -1;
        }
        snprintf(live_path, n, "%s.live", stats_path);
        return 0;
    }
    if (!strcmp(key, "dm-trace")) {
        free(trace_path);
        trace_path = nbdkit_absolute_path(value);
        return trace_path ? 0 : -1;
    }
    int r = dm_params_set(&params, key + 3, value);
    if (r == -1)
        nbdkit_error("devmodel: unknown parameter %s", key);
    else if (r == -2)
        nbdkit_error("devmodel: %s: bad value '%s'", key, value);
    return r ? -1 : 0;
}

static int devmodel_config_complete(nbdkit_next_config_complete *next, nbdkit_backend *nxdata)
{
    const char *why = dm_params_check(&params);
    if (why) {
        nbdkit_error("devmodel: %s", why);
        return -1;
    }
    return next(nxdata);
}

static int devmodel_thread_model(void) { return NBDKIT_THREAD_MODEL_SERIALIZE_ALL_REQUESTS; }

/* The model needs the export's size: made on the first connection, kept for
 * the next ones (one device, however many connections). */
static int devmodel_prepare(nbdkit_next *next, void *handle, int readonly)
{
    (void)handle;
    (void)readonly;
    int64_t size = next->get_size(next);
    if (size < 0)
        return -1;
    pthread_mutex_lock(&lock);
    int r = 0;
    if (!model_ready) {
        r = dm_init(&model, &params, (uint64_t)size);
        if (r == 0) {
            model_ready = 1;
            write_stats(); /* zeros: a reader can tell "no flush yet" from "no model" */
            r = live_open();
            if (r == 0 && trace_path) {
                trace = fopen(trace_path, "we");
                if (!trace) {
                    nbdkit_error("devmodel: cannot write %s: %m", trace_path);
                    r = -1;
                }
            }
        } else
            nbdkit_error("devmodel: cannot set up the model (out of memory?)");
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static void devmodel_close(void *handle)
{
    (void)handle;
    pthread_mutex_lock(&lock);
    write_stats();
    if (trace)
        fflush(trace);
    pthread_mutex_unlock(&lock);
}

static int devmodel_is_rotational(nbdkit_next *next, void *handle)
{
    (void)next;
    (void)handle;
    return params.kind != DM_SSD;
}

/* Asking the plugin is required (nbdkit checks its answer before passing a
 * flush or FUA write down); the model itself always takes both. */
static int devmodel_can_flush(nbdkit_next *next, void *handle)
{
    (void)handle;
    return next->can_flush(next);
}

static int devmodel_can_fua(nbdkit_next *next, void *handle)
{
    (void)handle;
    int r = next->can_fua(next);
    return r <= NBDKIT_FUA_NONE ? r : NBDKIT_FUA_NATIVE;
}

static int devmodel_can_multi_conn(nbdkit_next *next, void *handle)
{
    (void)next;
    (void)handle;
    return 0;
}

static int devmodel_pread(nbdkit_next *next, void *handle, void *buf, uint32_t count,
                          uint64_t offset, uint32_t flags, int *err)
{
    (void)handle;
    pthread_mutex_lock(&lock);
    double now = mono_us(), end = dm_read(&model, offset, count, now);
    publish();
    trace_request('r', offset, count, now, end);
    int r = next->pread(next, buf, count, offset, flags, err);
    sleep_until(end, count);
    pthread_mutex_unlock(&lock);
    return r;
}

static int devmodel_pwrite(nbdkit_next *next, void *handle, const void *buf, uint32_t count,
                           uint64_t offset, uint32_t flags, int *err)
{
    (void)handle;
    pthread_mutex_lock(&lock);
    double now = mono_us(), end = dm_write(&model, offset, count, (flags & NBDKIT_FLAG_FUA) != 0, now);
    publish();
    trace_request('w', offset, count, now, end);
    int r = next->pwrite(next, buf, count, offset, flags & ~NBDKIT_FLAG_FUA, err); /* as for flush */
    sleep_until(end, count);
    pthread_mutex_unlock(&lock);
    return r;
}

static int devmodel_zero(nbdkit_next *next, void *handle, uint32_t count, uint64_t offset,
                         uint32_t flags, int *err)
{
    (void)handle;
    pthread_mutex_lock(&lock);
    double now = mono_us(), end = dm_write(&model, offset, count, (flags & NBDKIT_FLAG_FUA) != 0, now);
    publish();
    trace_request('z', offset, count, now, end);
    int r = next->zero(next, count, offset, flags & ~NBDKIT_FLAG_FUA, err);
    sleep_until(end, count);
    pthread_mutex_unlock(&lock);
    return r;
}

static int devmodel_flush(nbdkit_next *next, void *handle, uint32_t flags, int *err)
{
    (void)handle;
    pthread_mutex_lock(&lock);
    /* Not passed on: the image is scratch, and a flush of the host's disk
     * (fdatasync of the image, 10+ ms on a virtual disk) would add its cost
     * to the model's. The model's flush is the only one that counts. */
    (void)next;
    (void)flags;
    (void)err;
    double now = mono_us(), end = dm_flush(&model, now);
    publish();
    trace_request('f', 0, 0, now, end);
    int r = 0;
    sleep_until(end, 0);
    write_stats();
    pthread_mutex_unlock(&lock);
    return r;
}

static struct nbdkit_filter filter = {
    .name = "devmodel",
    .longname = "boatload device model filter",
    .load = devmodel_load,
    .unload = devmodel_unload,
    .config = devmodel_config,
    .config_complete = devmodel_config_complete,
    .config_help = "dm-kind=hdd|raid|ssd dm-FIELD=VALUE ... dm-stats=PATH [dm-trace=PATH]",
    .thread_model = devmodel_thread_model,
    .prepare = devmodel_prepare,
    .close = devmodel_close,
    .is_rotational = devmodel_is_rotational,
    .can_flush = devmodel_can_flush,
    .can_fua = devmodel_can_fua,
    .can_multi_conn = devmodel_can_multi_conn,
    .pread = devmodel_pread,
    .pwrite = devmodel_pwrite,
    .zero = devmodel_zero,
    .flush = devmodel_flush,
};

NBDKIT_REGISTER_FILTER(filter)
