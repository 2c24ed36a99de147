/* shape.c - parsing and naming of fixed fan-out tree shapes. */
#include "shape.h"

#include <stdio.h>
#include <string.h>

unsigned shape_name_width(uint64_t count, unsigned min_width)
{
    unsigned w = 1;
    for (uint64_t v = count - 1; v >= 10; v /= 10)
        w++;
    return w < min_width ? min_width : w;
}

/* Totals and name widths (with overflow checks: at most 2^63 - 1 files and
 * as many directories, so that JSON consumers are safe). */
static int shape_finish(struct shape *out)
{
    const uint64_t limit = INT64_MAX;
    uint64_t prod = 1, dirs = 0;
    for (unsigned l = 0; l < out->nlevels; l++) {
        if (__builtin_mul_overflow(prod, out->fan[l], &prod) || prod > limit)
            return -1;
        /* levels of fan-out 1 repeat prod: dirs can pass 2^63 and 2^64 */
        if (l + 1 < out->nlevels && (__builtin_add_overflow(dirs, prod, &dirs) || dirs > limit))
            return -1;
        out->width[l] = shape_name_width(out->fan[l], l + 1 < out->nlevels ? 3 : 6);
    }
    out->files = prod;
    out->dirs = dirs;
    out->files_per_leaf = out->fan[out->nlevels - 1];
    out->leaves = prod / out->files_per_leaf;
    return 0;
}

int shape_from_fans(struct shape *out, const uint64_t *fan, unsigned nlevels)
{
    memset(out, 0, sizeof(*out));
    if (nlevels < 1 || nlevels > SHAPE_MAX_LEVELS)
        return -1;
    for (unsigned l = 0; l < nlevels; l++) {
        if (fan[l] < 1 || fan[l] > SHAPE_MAX_FANOUT)
            return -1;
        out->fan[l] = fan[l];
    }
    out->nlevels = nlevels;
    return shape_finish(out);
}

int shape_parse(const char *s, struct shape *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *p = s;
    if (!*p)
        goto bad;
    for (;;) {
        if (out->nlevels == SHAPE_MAX_LEVELS) {
            snprintf(err, errlen, "at most %d levels, got '%s'", SHAPE_MAX_LEVELS, s);
            return -1;
        }
        if (*p < '0' || *p > '9')
            goto bad;
        uint64_t v = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (uint64_t)(*p - '0');
            if (v > SHAPE_MAX_FANOUT) {
                snprintf(err, errlen, "each number must be 1..%llu, got '%s'",
                         (unsigned long long)SHAPE_MAX_FANOUT, s);
                return -1;
            }
            p++;
        }
        if (v == 0) {
            snprintf(err, errlen, "each number must be 1..%llu, got '%s'",
                     (unsigned long long)SHAPE_MAX_FANOUT, s);
            return -1;
        }
        out->fan[out->nlevels++] = v;
        if (*p == '\0')
            break;
        if (*p != 'x')
            goto bad;
        p++;
    }
    if (shape_finish(out) != 0) {
        snprintf(err, errlen, "too many files or directories (more than 2^63-1), got '%s'", s);
        return -1;
    }
    return 0;
bad:
    snprintf(err, errlen, "expected positive integers joined by 'x' (e.g. 10x1000), got '%s'", s);
    return -1;
}

void shape_leaf_indices(const struct shape *sh, uint64_t leaf, uint64_t *idx)
{
    for (int l = (int)sh->nlevels - 2; l >= 0; l--) {
        idx[l] = leaf % sh->fan[l];
        leaf /= sh->fan[l];
    }
}

int shape_path_append(char *buf, size_t buflen, size_t *len, const char *name)
{
    size_t n = *len;
    int k = snprintf(buf + n, buflen - n, "%s%s", n ? "/" : "", name);
    if (k < 0 || (size_t)k >= buflen - n)
        return -1;
    *len = n + (size_t)k;
    return 0;
}

size_t shape_path(const struct shape *sh, const uint64_t *idx, unsigned depth,
                  const char *file, char *buf, size_t buflen)
{
    size_t n = 0;
    char name[SHAPE_NAME_MAX];
    if (buflen == 0)
        return 0;
    buf[0] = '\0';
    for (unsigned l = 0; l < depth; l++) {
        shape_name(sh, l, idx[l], name);
        if (shape_path_append(buf, buflen, &n, name) != 0)
            return strlen(buf);
    }
    if (file && shape_path_append(buf, buflen, &n, file) != 0)
        return strlen(buf);
    return n;
}
