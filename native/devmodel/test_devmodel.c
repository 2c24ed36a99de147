/* test_devmodel.c - the timing model against its specification (model.h):
 * seek by distance, rotation, zones, the write cache (flush and FUA write
 * out dirty extents in LBA order, dirty reads from the cache), striping,
 * the SSD's costs, one request at a time, and the parameter checks. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

static int failures;
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "  %s:%d: %s: ", __FILE__, __LINE__, #cond);        \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            failures++;                                                         \
        }                                                                       \
    } while (0)
#define NEAR(a, b, tol) (fabs((a) - (b)) <= (tol))

#define GIB (1024.0 * 1024 * 1024)

static void hdd_params(struct dm_params *p)
{
    dm_params_init(p);
    const char *kv[][2] = {
        {"kind", "hdd"}, {"rpm", "7200"}, {"cylinders", "100000"},
        {"seek_track_ms", "0.8"}, {"seek_avg_ms", "8.5"}, {"seek_full_ms", "17"},
        {"rate_outer_mbps", "80"}, {"rate_inner_mbps", "40"}, {"zones", "5"},
        {"cache_mb", "1"}, {"cache_hit_us", "50"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        dm_params_set(p, kv[i][0], kv[i][1]);
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_seek_curve(void)
{
    struct dm_params p;
    hdd_params(&p);
    struct dm m;
    CHECK(dm_init(&m, &p, (uint64_t)GIB) == 0, "init");
    CHECK(dm_seek_us(&m, 0) == 0, "no move, no seek");
    CHECK(NEAR(dm_seek_us(&m, 1e-5), 800, 1), "one cylinder: %f", dm_seek_us(&m, 1e-5));
    CHECK(NEAR(dm_seek_us(&m, 1), 17000, 1), "full stroke: %f", dm_seek_us(&m, 1));
    double prev = 0, mean = 0;
    for (int i = 1; i <= 100000; i++) {
        double x = (i - 0.5) / 100000, s = dm_seek_us(&m, x);
        CHECK(s >= prev, "seek grows with distance at x=%f", x);
        prev = s;
        mean += s * 2 * (1 - x) / 100000;
    }
    CHECK(NEAR(mean, 8500, 20), "mean over random seeks is the average seek: %f", mean);
    dm_free(&m);
}

/* Random reads over the whole device and over 1 % of it, simulated one
 * after another, average what dm_expect_random_read_us says (rotation from
 * the platter's angle, which random requests sample evenly). */
static void test_random_reads_match_expectation(void)
{
    struct dm_params p;
    hdd_params(&p);
    uint64_t size = (uint64_t)(4 * GIB);
    double spans[] = {1.0, 0.01};
    for (int k = 0; k < 2; k++) {
        struct dm m;
        dm_init(&m, &p, size);
        uint64_t blocks = (uint64_t)(spans[k] * (double)(size / 4096));
        double t = 0, sum = 0;
        int n = 40000;
        for (int i = 0; i < n; i++) {
            uint64_t off = (next_rand() % blocks) * 4096;
            double end = dm_read(&m, off, 4096, t);
            sum += end - t;
            t = end + 37; /* some think time, to spread the platter's angle */
        }
        double want = dm_expect_random_read_us(&m, spans[k], 4096);
        CHECK(NEAR(sum / n, want, want * 0.02), "span %g: simulated %f, expected %f", spans[k],
              sum / n, want);
        if (k == 0)
            CHECK(want > 8500 + 4166 && want < 8500 + 4166 + 200, "whole device: %f", want);
        else
            CHECK(want < 0.5 * dm_expect_random_read_us(&m, 1.0, 4096), "1 %% span seeks less: %f", want);
        dm_free(&m);
    }
}

static void test_rotation_and_sequential(void)
{
    struct dm_params p;
    hdd_params(&p);
    struct dm m;
    dm_init(&m, &p, (uint64_t)GIB);
    double turn = 60e6 / 7200;
    double t = dm_read(&m, 0, 4096, 0);
    /* the same sector again: it has just passed, so nearly a full turn */
    double again = dm_read(&m, 0, 4096, t) - t;
    CHECK(again > turn * 0.9 && again <= turn + 100, "reread waits a turn: %f", again);
    /* a stream: no seek, no rotation, the zone's rate (80 MB/s = 80 B/us) */
    double s = dm_read(&m, 4096, 1 << 20, t + again);
    CHECK(NEAR(s - (t + again), (1 << 20) / 80.0, 1), "stream at zone rate: %f", s - (t + again));
    /* the host comes back 3 ms late: the drive read ahead meanwhile */
    double late = dm_read(&m, 4096 + (1 << 20), 1 << 20, s + 3000);
    CHECK(NEAR(late - (s + 3000), (1 << 20) / 80.0 - 3000, 1), "read ahead while idle: %f", late - (s + 3000));
    /* ... but not beyond its 2 MiB buffer */
    double later = dm_read(&m, 4096 + (2 << 20), 1 << 20, late + 60000);
    CHECK(NEAR(later - (late + 60000), 0, 1e-6), "a buffer's worth ahead: %f", later - (late + 60000));
    dm_free(&m);
}

static void test_zones(void)
{
    struct dm_params p;
    hdd_params(&p);
    struct dm m;
    uint64_t size = (uint64_t)GIB;
    dm_init(&m, &p, size);
    CHECK(dm_rate(&m, size, 0) == 80, "outer zone");
    CHECK(dm_rate(&m, size, size - 1) == 40, "inner zone");
    CHECK(dm_rate(&m, size, size / 2) == 60, "middle zone: %f", dm_rate(&m, size, size / 2));
    CHECK(dm_expect_seq_read_mbps(&m, size - (1 << 20), 1 << 20) == 40, "seq read, inner");
    /* a stream in the inner zone takes len / 40 B/us */
    double t = dm_read(&m, size - (8 << 20), 4096, 0);
    double e = dm_read(&m, size - (8 << 20) + 4096, 1 << 20, t);
    CHECK(NEAR(e - t, (1 << 20) / 40.0, 1), "inner stream: %f", e - t);
    dm_free(&m);
}

/* Expected write-out of 4 KiB extents at sorted offsets from a head at
 * cylinder 0 with no rotational wait: seek over each gap plus transfer. */
static double lba_order_cost(struct dm *m, uint64_t size, const uint64_t *sorted, int n)
{
    double t = 0, cyl = 0;
    for (int i = 0; i < n; i++) {
        double c = floor((double)sorted[i] / (double)size * m->p.cylinders);
        t += dm_seek_us(m, fabs(c - cyl) / m->p.cylinders) + 4096 / dm_rate(m, size, sorted[i]);
        cyl = floor((double)(sorted[i] + 4095) / (double)size * m->p.cylinders);
    }
    return t;
}

static void test_write_cache_flush_in_lba_order(void)
{
    struct dm_params p;
    hdd_params(&p);
    p.rot = DM_ROT_NONE;
    uint64_t size = (uint64_t)GIB;
    struct dm m;
    dm_init(&m, &p, size);
    uint64_t offs[] = {900u << 20, 100u << 20, 500u << 20, 300u << 20};
    double t = 0;
    for (int i = 0; i < 4; i++) {
        double e = dm_write(&m, offs[i], 4096, 0, t);
        CHECK(NEAR(e - t, 50, 1e-6), "a cached write is acknowledged at once: %f", e - t);
        t = e;
    }
    CHECK(m.disk[0].ndirty == 4 && m.disk[0].dirty_bytes == 4 * 4096, "four dirty extents");
    double f = dm_flush(&m, t) - t;
    uint64_t sorted[] = {100u << 20, 300u << 20, 500u << 20, 900u << 20};
    double want = 50 + lba_order_cost(&m, size, sorted, 4);
    double unsorted = 50 + lba_order_cost(&m, size, offs, 4);
    CHECK(NEAR(f, want, 1), "flush writes in LBA order: %f, want %f (arrival order: %f)", f, want,
          unsorted);
    CHECK(m.disk[0].ndirty == 0 && m.st.flushes == 1 && m.st.extents_written == 4, "cache clean");
    double again = dm_flush(&m, t + f) - (t + f);
    CHECK(NEAR(again, 50, 1e-6), "a flush of a clean cache costs the command: %f", again);
    dm_free(&m);
}

static void test_write_cache_merges_and_serves_reads(void)
{
    struct dm_params p;
    hdd_params(&p);
    struct dm m;
    dm_init(&m, &p, (uint64_t)GIB);
    double t = 0;
    for (int i = 0; i < 8; i++) /* adjacent and overlapping writes merge */
        t = dm_write(&m, (uint64_t)(i * 4096), 8192, 0, t);
    CHECK(m.disk[0].ndirty == 1 && m.disk[0].dirty_bytes == 9 * 4096, "one extent: %zu, %llu",
          m.disk[0].ndirty, (unsigned long long)m.disk[0].dirty_bytes);
    double r = dm_read(&m, 4096, 16384, t);
    CHECK(NEAR(r - t, 50, 1e-6) && m.st.cache_read_hits == 1, "dirty read from the cache: %f", r - t);
    double miss = dm_read(&m, 64 << 20, 4096, r);
    CHECK(miss - r > 800, "a clean block comes from the platter: %f", miss - r);
    t = dm_flush(&m, miss);
    CHECK(m.st.extents_written == 1, "one extent written: %llu", (unsigned long long)m.st.extents_written);
    double after = dm_read(&m, 4096, 4096, t);
    CHECK(after - t > 50 && m.st.cache_read_hits == 1, "after the flush the read goes to media");
    dm_free(&m);
}

static void test_fua_and_full_cache(void)
{
    struct dm_params p;
    hdd_params(&p);
    p.rot = DM_ROT_NONE;
    uint64_t size = (uint64_t)GIB;
    struct dm m;
    dm_init(&m, &p, size);
    double t = dm_write(&m, 200u << 20, 4096, 0, 0);
    double e = dm_write(&m, 600u << 20, 4096, 1, t);
    uint64_t sorted[] = {200u << 20, 600u << 20};
    double want = 50 + lba_order_cost(&m, size, sorted, 2);
    CHECK(NEAR(e - t, want, 1), "FUA writes out the cache: %f want %f", e - t, want);
    CHECK(m.disk[0].ndirty == 0 && m.st.fua_writes == 1, "clean after FUA");
    /* 1 MiB cache: the 257th 4 KiB write finds it full and writes half out */
    t = e;
    for (int i = 0; i < 256; i++)
        t = dm_write(&m, (uint64_t)i * 2 * 4096, 4096, 0, t);
    CHECK(m.disk[0].dirty_bytes == 1 << 20 && m.st.extents_written == 2, "full, nothing written yet");
    double before = t;
    t = dm_write(&m, 300u << 20, 4096, 0, t);
    CHECK(m.disk[0].dirty_bytes <= 512 * 1024 && t - before > 50 * 4096 / 80.0,
          "a full cache makes room first: %f us, %llu dirty", t - before,
          (unsigned long long)m.disk[0].dirty_bytes);
    dm_free(&m);
}

static void test_one_arm(void)
{
    struct dm_params p;
    hdd_params(&p);
    struct dm m;
    dm_init(&m, &p, (uint64_t)GIB);
    double a = dm_read(&m, 10u << 20, 4096, 0);
    double b = dm_read(&m, 700u << 20, 4096, 0); /* arrives while the first is served */
    CHECK(b > a + 800, "the second waits for the first: %f, %f", a, b);
    dm_free(&m);
}

static void test_request_counts(void)
{
    struct dm_params p;
    hdd_params(&p);
    struct dm m;
    dm_init(&m, &p, (uint64_t)GIB);
    double t = dm_read(&m, 0, 4096, 0);    /* the first: nothing before it */
    t = dm_read(&m, 4096, 8192, t);         /* where the last ended */
    t = dm_read(&m, 1 << 20, 4096, t);      /* a jump */
    t = dm_write(&m, 2 << 20, 4096, 0, t);
    double r0 = m.st.read_us;
    double w = t;
    t = dm_read(&m, (2 << 20) + 4096, 4096, t); /* where the write ended: sequential too */
    CHECK(m.st.reads == 4 && m.st.seq_reads == 2, "4 reads, 2 sequential: %llu, %llu",
          (unsigned long long)m.st.reads, (unsigned long long)m.st.seq_reads);
    CHECK(m.st.read_bytes == 4096 * 3 + 8192 && m.st.write_bytes == 4096, "bytes: %llu, %llu",
          (unsigned long long)m.st.read_bytes, (unsigned long long)m.st.write_bytes);
    CHECK(NEAR(m.st.read_us - r0, t - w, 1e-6), "read time counted: %f", m.st.read_us - r0);
    dm_free(&m);
}

static void raid_params(struct dm_params *p)
{
    hdd_params(p);
    dm_params_set(p, "kind", "raid");
    dm_params_set(p, "disks", "4");
    dm_params_set(p, "chunk_kb", "64");
}

static void test_raid_striping(void)
{
    struct dm_params p;
    raid_params(&p);
    p.rot = DM_ROT_NONE;
    uint64_t size = (uint64_t)GIB;
    struct dm m;
    CHECK(dm_init(&m, &p, size) == 0, "init");
    CHECK(m.ndisks == 4 && m.disk[0].size == size / 4, "members of a quarter: %llu",
          (unsigned long long)m.disk[0].size);
    CHECK(NEAR(dm_expect_seq_read_mbps(&m, 0, 256 * 1024), 320, 1e-9), "full stripe: 4 x 80 MB/s");
    CHECK(NEAR(dm_expect_seq_read_mbps(&m, 0, 64 * 1024), 80, 1e-9), "one chunk: one disk");
    /* chunk 5 of the array is disk 1's second chunk */
    dm_read(&m, 5 * 65536 + 4096, 4096, 0);
    CHECK(m.disk[1].last_end == 65536 + 8192 && m.disk[0].last_end == UINT64_MAX,
          "a 4 KiB read lands on one member at its offset: %llu",
          (unsigned long long)m.disk[1].last_end);
    /* writes to two members; a flush ends when the slower member is done */
    double t = dm_write(&m, 0, 4096, 0, 1000);
    t = dm_write(&m, 65536 * 3 + (512u << 20), 4096, 0, t);
    CHECK(m.disk[0].ndirty == 1 && m.disk[3].ndirty == 1 && m.disk[1].ndirty == 0, "per-member caches");
    double f = dm_flush(&m, t) - t;
    double d3 = 50 + dm_seek_us(&m, floor((double)(128u << 20) / (double)(size / 4) * 100000) / 100000) +
                4096 / dm_rate(&m, size / 4, 128u << 20);
    CHECK(NEAR(f, d3, 1), "flush = slowest member: %f want %f", f, d3);
    dm_free(&m);
}

static void test_ssd(void)
{
    struct dm_params p;
    dm_params_init(&p);
    const char *kv[][2] = {
        {"kind", "ssd"}, {"read_latency_us", "100"}, {"read_mbps", "100"},
        {"write_latency_us", "300"}, {"write_mbps", "80"}, {"flush_us", "500"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        CHECK(dm_params_set(&p, kv[i][0], kv[i][1]) == 0, "%s", kv[i][0]);
    struct dm m;
    CHECK(dm_init(&m, &p, (uint64_t)GIB) == 0, "init");
    double r = dm_read(&m, 12345 * 4096, 4096, 0);
    CHECK(NEAR(r, 100 + 40.96, 1e-6), "read: %f", r);
    double r2 = dm_read(&m, 7, 4096, r) - r;
    CHECK(NEAR(r2, 140.96, 1e-6), "no seek, anywhere: %f", r2);
    double w = dm_write(&m, 0, 8000, 0, 1000) - 1000;
    CHECK(NEAR(w, 300 + 100, 1e-6), "write: %f", w);
    double f = dm_flush(&m, 2000) - 2000;
    CHECK(NEAR(f, 500, 1e-6), "flush: %f", f);
    double q = dm_read(&m, 0, 4096, 2100); /* arrives while the flush runs */
    CHECK(NEAR(q, 2500 + 140.96, 1e-6), "one at a time: %f", q);
    CHECK(NEAR(dm_expect_random_read_us(&m, 1, 4096), 140.96, 1e-6), "expected read");
    dm_free(&m);
}

static void test_param_checks(void)
{
    struct dm_params p;
    hdd_params(&p);
    CHECK(dm_params_check(&p) == NULL, "good hdd: %s", dm_params_check(&p));
    CHECK(dm_params_set(&p, "nonsense", "1") == -1, "unknown key");
    CHECK(dm_params_set(&p, "rpm", "fast") == -2, "bad number");
    CHECK(dm_params_set(&p, "kind", "tape") == -2, "bad kind");
    p.stack_us = 120;
    const char *why = dm_params_check(&p);
    CHECK(why && strstr(why, "cache_hit_us") && strstr(why, "stack_us"), "faster than the stack: %s", why);
    p.stack_us = 50;
    CHECK(dm_params_check(&p) == NULL, "as fast as the stack: %s", dm_params_check(&p));
    hdd_params(&p);
    p.seek_avg_ms = 20;
    why = dm_params_check(&p);
    CHECK(why && strstr(why, "seek_full_ms"), "seek order: %s", why);
    hdd_params(&p);
    p.rate_inner_mbps = 90;
    why = dm_params_check(&p);
    CHECK(why && strstr(why, "rate_inner_mbps"), "zones: %s", why);
    hdd_params(&p);
    p.seek_track_ms = 0.01;
    p.seek_avg_ms = 16.9;
    why = dm_params_check(&p);
    CHECK(why && strstr(why, "grows with distance"), "a seek curve that bends down: %s", why);
    dm_params_init(&p);
    why = dm_params_check(&p);
    CHECK(why && strstr(why, "rpm"), "unset field named: %s", why);
    raid_params(&p);
    p.disks = 1;
    why = dm_params_check(&p);
    CHECK(why && strstr(why, "disks"), "raid of one: %s", why);
    raid_params(&p);
    p.chunk_kb = 6;
    why = dm_params_check(&p);
    CHECK(why && strstr(why, "chunk_kb"), "chunk: %s", why);
}

int main(void)
{
    struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
#define T(f) {#f, f}
        T(test_seek_curve), T(test_random_reads_match_expectation), T(test_rotation_and_sequential),
        T(test_zones), T(test_write_cache_flush_in_lba_order), T(test_write_cache_merges_and_serves_reads),
        T(test_fua_and_full_cache), T(test_one_arm), T(test_request_counts), T(test_raid_striping), T(test_ssd),
        T(test_param_checks),
#undef T
    };
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int before = failures;
        tests[i].fn();
        if (failures > before) {
            printf("FAIL %s\n", tests[i].name);
            failed++;
        } else {
            printf("ok   %s\n", tests[i].name);
            passed++;
        }
    }
    printf("devmodel: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
