/* fuzz_size.c - libFuzzer target for the number and size parsers: the
 * integers (cli_parse_u64: --threads, --seed, --files, ...), the byte
 * counts with K/M/G/T suffixes (cli_parse_size: --block, --xfer,
 * --file-size, --size-align, ...) and their rendering (cli_format_size),
 * the decimal numbers (cli_parse_double: --interval, --read-pct,
 * --duration), tree's --size "S|MIN:MAX|bonnie:MAX[:MIN]" with
 * --size-align (filedata_parse_size, filedata_size_align) and meta's
 * --size "MIN[:MAX]" (meta_parse_size).
 *
 * Input: VALUE, or VALUE NUL ALIGN (ALIGN is --size-align for the tree
 * size). Every parser gets VALUE. Each is checked against a reference
 * written from the README's rules (accepts the same strings, gives the same
 * numbers), plus round trips (format then parse) and the ranges of what
 * the sizes derived from an accepted spec can be.
 */
#include <math.h>

#include "cli.h"
#include "filedata.h"
#include "fuzz.h"
#include "meta.h"

typedef unsigned __int128 u128;

/* Decimal digits s[0..n) as a saturating 128-bit value; -1 if not all digits or n == 0. */
static int ref_digits(const char *s, size_t n, u128 *out)
{
    if (n == 0)
        return -1;
    u128 v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v <= (u128)UINT64_MAX)
            v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return 0;
}

static int ref_u64(const char *s, size_t n, uint64_t *out)
{
    u128 v;
    if (ref_digits(s, n, &v) != 0 || v > UINT64_MAX)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* digits, then at most one of kKmMgGtT (powers of 1024), nothing else */
static int ref_size(const char *s, size_t n, uint64_t *out)
{
    unsigned shift = 0;
    if (n > 0) {
        switch (s[n - 1]) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        case 't': case 'T': shift = 40; break;
        }
    }
    u128 v;
    if (ref_digits(s, shift ? n - 1 : n, &v) != 0)
        return -1;
    v <<= shift;
    if (v > UINT64_MAX)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

static void check_u64(const char *in)
{
    uint64_t got = 0, want = 0;
    int rc = cli_parse_u64(in, &got), ref = ref_u64(in, strlen(in), &want);
    FUZZ_ASSERT(rc == ref && (rc != 0 || got == want), "cli_parse_u64('%s') = %d/%llu, reference %d/%llu", in,
                rc, (unsigned long long)got, ref, (unsigned long long)want);
    double d;
    if (rc == 0) /* a plain integer is a number too, rounded the same way */
        FUZZ_ASSERT(cli_parse_double(in, &d) == 0 && d == (double)got, "cli_parse_double('%s')", in);
}

static void check_format(uint64_t v)
{
    char buf[32];
    cli_format_size(v, buf, sizeof buf);
    uint64_t back;
    FUZZ_ASSERT(cli_parse_size(buf, &back) == 0 && back == v, "cli_format_size(%llu) = '%s'",
                (unsigned long long)v, buf);
    /* the largest unit that divides v exactly, none for 0 */
    size_t len = strlen(buf);
    static const char units[] = "KMGT";
    const char *u = strchr(units, buf[len - 1]);
    unsigned shift = u ? 10u * (unsigned)(u - units + 1) : 0;
    FUZZ_ASSERT(shift == 40 || v == 0 || (v & ((1ull << (shift + 10)) - 1)) != 0,
                "cli_format_size(%llu) = '%s' is not the shortest", (unsigned long long)v, buf);
    /* truncation stays inside the buffer */
    for (size_t n = 1; n <= 3; n++) {
        char *small = malloc(n);
        cli_format_size(v, small, n);
        FUZZ_ASSERT(memchr(small, 0, n) != NULL, "cli_format_size(%llu) into %zu bytes", (unsigned long long)v, n);
        free(small);
    }
}

static void check_size(const char *in)
{
    uint64_t got = 0, want = 0;
    int rc = cli_parse_size(in, &got), ref = ref_size(in, strlen(in), &want);
    FUZZ_ASSERT(rc == ref && (rc != 0 || got == want), "cli_parse_size('%s') = %d/%llu, reference %d/%llu", in,
                rc, (unsigned long long)got, ref, (unsigned long long)want);
    if (rc == 0)
        check_format(got);
}

static void check_double(const char *in)
{
    double d = -1;
    if (cli_parse_double(in, &d) == 0)
        FUZZ_ASSERT(isfinite(d) && d >= 0 && ((in[0] >= '0' && in[0] <= '9') || in[0] == '.'),
                    "cli_parse_double('%s') = %g", in, d);
}

/* Split s at ':' into 1..maxn byte counts as filedata's parse_sizes does
 * (each part 1..63 characters). Returns how many, or -1. */
static int ref_parts(const char *s, uint64_t *v, int maxn)
{
    int n = 0;
    for (;;) {
        const char *colon = strchr(s, ':');
        size_t len = colon ? (size_t)(colon - s) : strlen(s);
        if (n == maxn || len == 0 || len >= 64 || ref_size(s, len, &v[n]) != 0)
            return -1;
        n++;
        if (!colon)
            return n;
        s = colon + 1;
    }
}

static void check_filedata(const char *in, const char *align_s)
{
    uint64_t v[2], lo = 0, hi = 0;
    int ok;
    if (strncmp(in, "bonnie:", 7) == 0) {
        int n = ref_parts(in + 7, v, 2);
        ok = n >= 1;
        hi = ok ? v[0] : 0;
        lo = n == 2 ? v[1] : 0;
    } else {
        int n = ref_parts(in, v, 2);
        ok = n >= 1;
        lo = ok ? v[0] : 0;
        hi = n == 2 ? v[1] : lo;
    }
    ok = ok && lo <= hi && hi <= FILEDATA_MAX_SIZE;

    struct filedata_size sz;
    char err[CLI_ERR_MAX];
    int rc = filedata_parse_size(in, &sz, err, sizeof err);
    FUZZ_ASSERT((rc == 0) == ok, "filedata_parse_size('%s') = %d, reference %s", in, rc, ok ? "accepts" : "rejects");
    if (rc != 0) {
        fuzz_check_message("filedata_parse_size", in, err, sizeof err);
        return;
    }
    FUZZ_ASSERT(sz.min == lo && sz.max == hi && sz.align == 1 && sz.lo == lo && sz.n == hi - lo + 1,
                "filedata_parse_size('%s') = %llu:%llu", in, (unsigned long long)sz.min,
                (unsigned long long)sz.max);

    uint64_t align = 1;
    if (align_s && (cli_parse_size(align_s, &align) != 0 || align < 1 || align > FILEDATA_MAX_SIZE))
        return; /* cli_parse rejects such a --size-align before the sizes are aligned */
    uint64_t alo = lo / align + (lo % align != 0), ahi = hi / align;
    rc = filedata_size_align(&sz, align, err, sizeof err);
    FUZZ_ASSERT((rc == 0) == (alo <= ahi), "filedata_size_align('%s', %llu) = %d", in, (unsigned long long)align, rc);
    if (rc != 0) {
        fuzz_check_message("filedata_size_align", in, err, sizeof err);
        return;
    }
    uint64_t smin = filedata_size_min(&sz), smax = filedata_size_max(&sz);
    FUZZ_ASSERT(smin == alo * align && smax == ahi * align && lo <= smin && smin <= smax && smax <= hi,
                "'%s' aligned to %llu: %llu..%llu", in, (unsigned long long)align, (unsigned long long)smin,
                (unsigned long long)smax);
    for (uint64_t i = 0; i < 8; i++) {
        uint64_t s = filedata_file_size(&sz, hi * 31 + i, i * 0x9e3779b97f4a7c15ull);
        FUZZ_ASSERT(s >= smin && s <= smax && s % align == 0, "'%s' aligned to %llu: file size %llu", in,
                    (unsigned long long)align, (unsigned long long)s);
    }
}

static void check_meta_size(const char *in)
{
    uint64_t lo = 0, hi = 0;
    const char *colon = strchr(in, ':');
    int ok;
    if (colon) {
        size_t n = (size_t)(colon - in);
        ok = n < 64 && ref_size(in, n, &lo) == 0 && ref_size(colon + 1, strlen(colon + 1), &hi) == 0;
    } else {
        ok = ref_size(in, strlen(in), &lo) == 0;
        hi = lo;
    }
    ok = ok && lo <= hi && hi <= META_MAX_FILE_SIZE;
    struct meta_size sz;
    char err[CLI_ERR_MAX];
    int rc = meta_parse_size(in, &sz, err, sizeof err);
    FUZZ_ASSERT((rc == 0) == ok, "meta_parse_size('%s') = %d, reference %s", in, rc, ok ? "accepts" : "rejects");
    if (rc != 0) {
        fuzz_check_message("meta_parse_size", in, err, sizeof err);
        return;
    }
    FUZZ_ASSERT(sz.min == lo && sz.max == hi, "meta_parse_size('%s') = %llu:%llu", in, (unsigned long long)sz.min,
                (unsigned long long)sz.max);
    for (uint64_t i = 0; i < 8; i++) {
        uint64_t s = meta_file_size(&sz, lo ^ (hi << 7), i * 0x9e3779b97f4a7c15ull);
        FUZZ_ASSERT(s >= lo && s <= hi, "meta size '%s': file size %llu", in, (unsigned long long)s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t vlen = nul ? (size_t)(nul - data) : size;
    char *in = fuzz_cstr(data, vlen);
    char *align = nul ? fuzz_cstr(nul + 1, size - vlen - 1) : NULL;
    if (!in || (nul && !align)) {
        free(in);
        free(align);
        return 0;
    }
    check_u64(in);
    check_size(in);
    check_double(in);
    check_filedata(in, align);
    check_meta_size(in);
    free(in);
    free(align);
    return 0;
}
