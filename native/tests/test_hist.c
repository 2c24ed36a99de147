/* test_hist.c - histogram percentiles vs. exact sorted samples. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "prng.h"
#include "test.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void test_hist_bucket_ranges(void)
{
    struct xoshiro256 g;
    xoshiro256_seed(&g, 42);
    /* every value falls in its bucket, buckets are narrow, indices in range */
    for (int i = 0; i < 200000; i++) {
        uint64_t v = xoshiro256_next(&g) >> (xoshiro256_next(&g) % 64);
        unsigned idx = hist_index(v);
        uint64_t lo, hi;
        CHECK(idx < HIST_BUCKETS);
        hist_bucket_range(idx, &lo, &hi);
        CHECKF(lo <= v && v <= hi, "v=%llu lo=%llu hi=%llu", (unsigned long long)v,
               (unsigned long long)lo, (unsigned long long)hi);
        CHECK((double)(hi - lo + 1) <= (double)lo / 128.0 + 1.0);
        if (test_failures > 5)
            return;
    }
    /* buckets tile the number line: consecutive and contiguous */
    uint64_t prev_hi = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        uint64_t lo, hi;
        hist_bucket_range(i, &lo, &hi);
        if (i > 0)
            CHECKF(lo == prev_hi + 1, "bucket %u lo=%llu prev_hi=%llu", i,
                   (unsigned long long)lo, (unsigned long long)prev_hi);
        CHECK(hist_index(lo) == i && hist_index(hi) == i);
        prev_hi = hi;
        if (test_failures > 5)
            return;
    }
    CHECK(prev_hi == UINT64_MAX);
    CHECK(hist_index(UINT64_MAX) == HIST_BUCKETS - 1);
}

enum dist { UNIFORM, EXPONENTIAL, LOGNORMAL, PARETO, BIMODAL, CONSTANT, SMALL };
static const char *dist_name[] = {"uniform", "exponential", "lognormal", "pareto",
                                  "bimodal", "constant", "small"};

static uint64_t sample(struct xoshiro256 *g, enum dist d)
{
    double u = xoshiro256_double(g);
    double u2 = xoshiro256_double(g);
    if (u <= 0)
        u = 1e-12;
    switch (d) {
    case UNIFORM: return 1 + (uint64_t)(u * 1e6);
    case EXPONENTIAL: return (uint64_t)(-log(u) * 5000.0);
    case LOGNORMAL: {
        double z = sqrt(-2 * log(u)) * cos(2 * M_PI * u2);
        return (uint64_t)exp(8.0 + 1.5 * z);
    }
    case PARETO: return (uint64_t)(1000.0 / pow(u, 1.0 / 1.1)); /* alpha 1.1: heavy tail */
    case BIMODAL: return u2 < 0.99 ? 1500 + (uint64_t)(u * 500) : 5000000 + (uint64_t)(u * 5e7);
    case CONSTANT: return 2345;
    case SMALL: return (uint64_t)(u * 300);
    }
    return 0;
}

void test_hist_percentiles(void)
{
    static const double ps[] = {0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
    const size_t n = 200000;
    uint64_t *v = malloc(n * sizeof *v);
    struct hist *h = malloc(sizeof *h);
    CHECK(v && h);
    if (!v || !h)
        return;
    for (int d = UNIFORM; d <= SMALL; d++) {
        struct xoshiro256 g;
        xoshiro256_seed(&g, 1000 + (uint64_t)d);
        hist_init(h);
        for (size_t i = 0; i < n; i++) {
            v[i] = sample(&g, (enum dist)d);
            hist_record(h, v[i]);
        }
        qsort(v, n, sizeof *v, cmp_u64);
        for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
            double r = ceil(ps[k] / 100.0 * (double)n);
            size_t rank = r < 1 ? 1 : (size_t)r;
            double exact = (double)v[rank - 1];
            double got = hist_percentile(h, ps[k]);
            double rel = exact > 0 ? fabs(got - exact) / exact : fabs(got);
            CHECKF(rel <= 0.01, "%s p%g: hist %.1f exact %.1f (rel %.4f)", dist_name[d], ps[k],
                   got, exact, rel);
        }
        CHECK(h->min == v[0] && h->max == v[n - 1]);
    }
    free(v);
    free(h);
}

void test_hist_merge_and_moments(void)
{
    const size_t n = 50000;
    struct hist *all = malloc(sizeof *all), *part = malloc(4 * sizeof *part);
    CHECK(all && part);
    if (!all || !part)
        return;
    hist_init(all);
    for (int i = 0; i < 4; i++)
        hist_init(&part[i]);
    struct xoshiro256 g;
    xoshiro256_seed(&g, 7);
    long double sum = 0, sumsq = 0;
    uint64_t *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i] = sample(&g, LOGNORMAL);
        hist_record(all, v[i]);
        hist_record(&part[i % 4], v[i]);
        sum += v[i];
    }
    long double mean = sum / n;
    for (size_t i = 0; i < n; i++)
        sumsq += ((long double)v[i] - mean) * ((long double)v[i] - mean);
    double sd = (double)sqrtl(sumsq / n);

    struct hist *m = malloc(sizeof *m);
    hist_init(m);
    for (int i = 0; i < 4; i++)
        hist_merge(m, &part[i]);
    CHECK(m->count == all->count && m->sum == all->sum && m->sumsq == all->sumsq);
    CHECK(m->min == all->min && m->max == all->max);
    CHECK(memcmp(m->buckets, all->buckets, sizeof m->buckets) == 0);
    CHECKF(fabs(hist_mean(m) - (double)mean) <= 1e-9 * (double)mean, "mean %f vs %f",
           hist_mean(m), (double)mean);
    CHECKF(fabs(hist_stddev(m) - sd) <= 1e-6 * sd, "stddev %f vs %f", hist_stddev(m), sd);

    /* empty histogram */
    struct hist *e = malloc(sizeof *e);
    hist_init(e);
    CHECK(hist_percentile(e, 50) == 0.0 && hist_mean(e) == 0.0 && hist_stddev(e) == 0.0);
    hist_merge(m, e);
    CHECK(m->count == all->count);
    free(e);
    free(m);
    free(v);
    free(all);
    free(part);
}
