/* fuzz_shape.c - libFuzzer target for tree's --shape parser (shape_parse)
 * and what is derived from a shape: totals, name widths, names, leaf
 * indices and relative paths.
 *
 * The input is the option value (no NUL bytes). Besides the sanitizers, it
 * checks shape_parse against a reference parser written from the README's
 * rules ("AxBx...xF": 1..16 numbers joined by 'x', each 1..1e12, at most
 * 2^63-1 files and directories in total): the same inputs are accepted,
 * and an accepted shape has exactly the reference's levels, totals and
 * name widths, parses the same again from its canonical form, and matches
 * shape_from_fans. A rejection leaves a message, also in small buffers.
 */
#include "fuzz.h"
#include "cli.h"
#include "shape.h"

#define TOTAL_LIMIT ((unsigned __int128)INT64_MAX)

static unsigned digits(uint64_t v)
{
    unsigned d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* 1 when s is a valid shape by the README's rules, with its numbers. */
static int ref_parse(const char *s, uint64_t *fan, unsigned *n)
{
    const char *p = s;
    *n = 0;
    for (;;) {
        if (*p < '0' || *p > '9')
            return 0;
        unsigned __int128 v = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            if (v <= SHAPE_MAX_FANOUT) /* saturates above the limit */
                v = v * 10 + (unsigned)(*p - '0');
        if (v < 1 || v > SHAPE_MAX_FANOUT || *n == SHAPE_MAX_LEVELS)
            return 0;
        fan[(*n)++] = (uint64_t)v;
        if (*p == '\0')
            break;
        if (*p++ != 'x')
            return 0;
    }
    unsigned __int128 prod = 1, dirs = 0;
    for (unsigned l = 0; l < *n; l++) {
        prod *= fan[l];
        if (prod > TOTAL_LIMIT)
            return 0;
        if (l + 1 < *n)
            dirs += prod;
    }
    return dirs <= TOTAL_LIMIT;
}

static void check_names(const struct shape *sh, const char *in)
{
    char name[SHAPE_NAME_MAX + 8];
    for (unsigned l = 0; l < sh->nlevels; l++) {
        uint64_t last = sh->fan[l] - 1;
        memset(name, '#', sizeof name);
        size_t len = shape_name(sh, l, last, name);
        FUZZ_ASSERT(len == sh->width[l] + 1u && len < SHAPE_NAME_MAX && name[len] == '\0',
                    "'%s' level %u: name length %zu, width %u", in, l, len, sh->width[l]);
        FUZZ_ASSERT(name[0] == (l + 1 == sh->nlevels ? 'f' : 'd'), "'%s' level %u: name '%s'", in, l, name);
        uint64_t back = 0;
        for (size_t i = 1; i < len; i++) {
            FUZZ_ASSERT(name[i] >= '0' && name[i] <= '9', "'%s' level %u: name '%s'", in, l, name);
            back = back * 10 + (uint64_t)(name[i] - '0');
        }
        FUZZ_ASSERT(back == last, "'%s' level %u: name '%s' is not index %llu", in, l, name,
                    (unsigned long long)last);
    }
}

static void check_leaf_path(const struct shape *sh, const char *in, uint64_t leaf)
{
    uint64_t idx[SHAPE_MAX_LEVELS];
    unsigned depth = sh->nlevels - 1;
    shape_leaf_indices(sh, leaf, idx);
    unsigned __int128 back = 0;
    size_t want = 0;
    for (unsigned l = 0; l < depth; l++) {
        FUZZ_ASSERT(idx[l] < sh->fan[l], "'%s' leaf %llu: index %llu at level %u", in, (unsigned long long)leaf,
                    (unsigned long long)idx[l], l);
        back = back * sh->fan[l] + idx[l];
        want += sh->width[l] + 2u; /* "/" + prefix + digits */
    }
    FUZZ_ASSERT(back == leaf, "'%s': leaf %llu does not round-trip", in, (unsigned long long)leaf);
    const char *file = "f000000";
    want += strlen(file) + 1;
    want -= 1; /* no leading "/" */
    /* exact-size heap buffers: the full path, one byte short, tiny, none */
    size_t lens[] = {want + 1, want, 2, 1};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        char *buf = malloc(lens[k]);
        size_t n = shape_path(sh, idx, depth, file, buf, lens[k]);
        FUZZ_ASSERT(n < lens[k] && buf[n] == '\0' && strlen(buf) == n, "'%s': shape_path in %zu bytes gave %zu",
                    in, lens[k], n);
        if (k == 0)
            FUZZ_ASSERT(n == want, "'%s': path '%s' has length %zu, expected %zu", in, buf, n, want);
        free(buf);
    }
    FUZZ_ASSERT(shape_path(sh, idx, depth, file, NULL, 0) == 0, "'%s': shape_path into 0 bytes", in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = fuzz_cstr(data, size);
    if (!in)
        return 0;
    uint64_t fan[SHAPE_MAX_LEVELS];
    unsigned n;
    int ref_ok = ref_parse(in, fan, &n);

    struct shape sh;
    char err[CLI_ERR_MAX];
    int rc = shape_parse(in, &sh, err, sizeof err);
    FUZZ_ASSERT((rc == 0) == ref_ok, "'%s': shape_parse %d, reference %s", in, rc, ref_ok ? "accepts" : "rejects");
    if (rc != 0) {
        fuzz_check_message("shape_parse", in, err, sizeof err);
        /* messages quote the input: truncation must stay inside small buffers */
        size_t small[] = {16, 1};
        for (size_t k = 0; k < 2; k++) {
            char *e = malloc(small[k]);
            struct shape tmp;
            FUZZ_ASSERT(shape_parse(in, &tmp, e, small[k]) != 0, "'%s' accepted the second time", in);
            FUZZ_ASSERT(memchr(e, 0, small[k]) != NULL, "'%s': message not terminated in %zu bytes", in, small[k]);
            free(e);
        }
        free(in);
        return 0;
    }

    /* the numbers and totals the reference computed */
    FUZZ_ASSERT(sh.nlevels == n, "'%s': %u levels, expected %u", in, sh.nlevels, n);
    unsigned __int128 prod = 1, dirs = 0;
    for (unsigned l = 0; l < n; l++) {
        FUZZ_ASSERT(sh.fan[l] == fan[l], "'%s' level %u: %llu", in, l, (unsigned long long)sh.fan[l]);
        unsigned want_w = digits(fan[l] - 1);
        unsigned min_w = l + 1 < n ? 3 : 6;
        FUZZ_ASSERT(sh.width[l] == (want_w < min_w ? min_w : want_w), "'%s' level %u: width %u", in, l,
                    sh.width[l]);
        prod *= fan[l];
        if (l + 1 < n)
            dirs += prod;
    }
    FUZZ_ASSERT(sh.files == (uint64_t)prod && prod <= TOTAL_LIMIT, "'%s': files %llu", in,
                (unsigned long long)sh.files);
    FUZZ_ASSERT(sh.dirs == dirs && dirs <= TOTAL_LIMIT, "'%s': dirs %llu, expected %llu (as 128-bit: high %llu)", in,
                (unsigned long long)sh.dirs, (unsigned long long)(uint64_t)dirs,
                (unsigned long long)(uint64_t)(dirs >> 64));
    FUZZ_ASSERT(sh.files_per_leaf == fan[n - 1] && sh.leaves * sh.files_per_leaf == sh.files,
                "'%s': leaves %llu", in, (unsigned long long)sh.leaves);
    for (unsigned l = n; l < SHAPE_MAX_LEVELS; l++)
        FUZZ_ASSERT(sh.fan[l] == 0 && sh.width[l] == 0, "'%s': level %u beyond the shape is set", in, l);

    /* the same shape from the numbers, and from its canonical spelling */
    struct shape again;
    FUZZ_ASSERT(shape_from_fans(&again, fan, n) == 0 && memcmp(&again, &sh, sizeof sh) == 0,
                "'%s': shape_from_fans differs", in);
    char canon[SHAPE_MAX_LEVELS * 21 + 1];
    size_t len = 0;
    for (unsigned l = 0; l < n; l++)
        len += (size_t)snprintf(canon + len, sizeof canon - len, "%s%llu", l ? "x" : "",
                                (unsigned long long)fan[l]);
    FUZZ_ASSERT(shape_parse(canon, &again, err, sizeof err) == 0 && memcmp(&again, &sh, sizeof sh) == 0,
                "'%s': canonical '%s' differs", in, canon);

    check_names(&sh, in);
    check_leaf_path(&sh, in, sh.leaves - 1);
    check_leaf_path(&sh, in, 0);
    check_leaf_path(&sh, in, (sh.files ^ 0x9e3779b97f4a7c15ull) % sh.leaves);
    free(in);
    return 0;
}
