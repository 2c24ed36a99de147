/* hist.h - log-linear latency histogram (HDR style).
 *
 * Values are unsigned 64-bit integers (the workers record nanoseconds).
 * Values below 256 are counted exactly; every power-of-two range
 * [2^e, 2^(e+1)) with e >= 8 is split into 128 equal sub-buckets, so a
 * bucket is at most 1/128 of its lower bound wide. Percentiles report the
 * bucket midpoint (clamped to the exact min/max), i.e. a relative error of
 * at most 1/256 (~0.4 %). count, sum, sum of squares, min and max are exact,
 * so mean and stddev are exact too. Recording is a handful of instructions
 * and takes no lock: each thread owns a histogram; they are merged at the
 * end with hist_merge().
 */
#ifndef BOATLOAD_HIST_H
#define BOATLOAD_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB (1u << HIST_SUB_BITS)            /* 128 sub-buckets */
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB) /* 7424 */

struct hist {
    uint64_t count;
    uint64_t sum;
    unsigned __int128 sumsq;
    uint64_t min;
    uint64_t max;
    uint64_t buckets[HIST_BUCKETS];
};

static inline unsigned hist_index(uint64_t v)
{
    if (v < 2 * HIST_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 8 */
    unsigned shift = e - HIST_SUB_BITS;
    return (e - HIST_SUB_BITS + 1) * HIST_SUB + (unsigned)(v >> shift) - HIST_SUB;
}

static inline void hist_record(struct hist *h, uint64_t v)
{
    h->buckets[hist_index(v)]++;
    h->count++;
    h->sum += v;
    h->sumsq += (unsigned __int128)v * v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void hist_init(struct hist *h);
void hist_merge(struct hist *dst, const struct hist *src);
/* Inclusive value range [lo, hi] covered by bucket i. */
void hist_bucket_range(unsigned i, uint64_t *lo, uint64_t *hi);
/* Nearest-rank percentile p in [0, 100]: the value of rank ceil(p/100*n).
 * Returns 0 for an empty histogram. */
double hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);
/* Population standard deviation. */
double hist_stddev(const struct hist *h);

#endif
