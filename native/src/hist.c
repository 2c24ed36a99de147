/* hist.c - log-linear histogram: merge, percentiles, moments. */
#include "hist.h"

#include <math.h>
#include <string.h>

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    if (src->count == 0)
        return;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
    dst->sumsq += src->sumsq;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

void hist_bucket_range(unsigned i, uint64_t *lo, uint64_t *hi)
{
    if (i < 2 * HIST_SUB) {
        *lo = *hi = i;
        return;
    }
    unsigned group = i / HIST_SUB;            /* >= 2 */
    unsigned shift = group - 1;               /* e - 7 */
    uint64_t sub = (uint64_t)(i % HIST_SUB) + HIST_SUB;
    *lo = sub << shift;
    *hi = *lo + ((1ull << shift) - 1);
}

double hist_percentile(const struct hist *h, double p)
{
    if (h->count == 0)
        return 0.0;
    if (p <= 0.0)
        return (double)h->min;
    if (p >= 100.0)
        return (double)h->max;
    double r = ceil(p / 100.0 * (double)h->count);
    uint64_t rank = r < 1.0 ? 1 : (uint64_t)r;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            hist_bucket_range(i, &lo, &hi);
            double v = (double)lo + (double)(hi - lo) / 2.0;
            if (v < (double)h->min)
                v = (double)h->min;
            if (v > (double)h->max)
                v = (double)h->max;
            return v;
        }
    }
    return (double)h->max;
}

double hist_mean(const struct hist *h)
{
    return h->count ? (double)h->sum / (double)h->count : 0.0;
}

double hist_stddev(const struct hist *h)
{
    if (h->count < 2)
        return 0.0;
    long double n = (long double)h->count;
    long double mean = (long double)h->sum / n;
    long double var = (long double)h->sumsq / n - mean * mean;
    return var > 0 ? (double)sqrtl(var) : 0.0;
}
