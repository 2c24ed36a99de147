/* test_tree.c - tree's pure parts: the random layout builder, file size
 * specs (parsing, bounds, alignment, distribution) and file content. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filedata.h"
#include "rlayout.h"
#include "test.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Exact counts, depth bound, a consistent parent chain, distinct names. */
static void check_layout(const struct rlayout *l, uint64_t files, unsigned max_depth, uint64_t fpd_max)
{
    CHECK(l->files == files && l->max_depth == max_depth && l->files_per_dir_max == fpd_max);
    CHECK(l->ndirs >= 1 && l->dirs != NULL);
    if (!l->dirs)
        return;
    uint64_t sum = 0, leaves = 0, *subdirs = calloc(l->ndirs, sizeof *subdirs);
    unsigned deepest = 0;
    for (uint64_t d = 0; d < l->ndirs; d++) {
        const struct rlayout_dir *r = &l->dirs[d];
        CHECKF(r->nfiles >= 1 && r->nfiles <= fpd_max, "dir %llu: %llu files", (unsigned long long)d,
               (unsigned long long)r->nfiles);
        CHECK(r->first_file == sum); /* contiguous global file numbers */
        sum += r->nfiles;
        CHECKF(r->depth >= 1 && r->depth <= max_depth, "dir %llu: depth %u", (unsigned long long)d, r->depth);
        if (r->depth == 1) {
            CHECK(r->parent == RLAYOUT_ROOT);
        } else {
            CHECK(r->parent < d); /* made before its children */
            if (r->parent < d) {
                CHECK(l->dirs[r->parent].depth + 1 == r->depth);
                subdirs[r->parent]++;
            }
        }
        deepest = r->depth > deepest ? r->depth : deepest;
        CHECK(r->name < 839299365868340224ull);
        /* every directory but the last holds what it drew, so only the
         * last one can be cut short; none is empty */
    }
    CHECKF(sum == files, "files %llu, want %llu", (unsigned long long)sum, (unsigned long long)files);
    CHECK(deepest == l->depth);
    for (uint64_t d = 0; d < l->ndirs; d++) {
        CHECK(subdirs[d] == l->dirs[d].subdirs);
        leaves += subdirs[d] == 0;
    }
    CHECK(leaves == l->leaf_dirs);
    free(subdirs);
    /* names: distinct (then siblings are distinct too) */
    uint64_t *codes = malloc(l->ndirs * sizeof *codes);
    for (uint64_t d = 0; d < l->ndirs; d++)
        codes[d] = l->dirs[d].name;
    qsort(codes, l->ndirs, sizeof *codes, cmp_u64);
    uint64_t dup = 0;
    for (uint64_t d = 1; d < l->ndirs; d++)
        dup += codes[d] == codes[d - 1];
    CHECKF(dup == 0, "%llu duplicate names", (unsigned long long)dup);
    free(codes);
}

void test_rlayout_build(void)
{
    static const struct {
        uint64_t files;
        unsigned depth;
        uint64_t fpd;
    } cases[] = {
        {1, 4, 16383}, {5000, 4, 16383}, {100000, 4, 16383}, {100000, 1, 16383}, {1000000, 4, 16383},
        {20000, 16, 10}, {777, 3, 1}, {12345, 2, 100}, {16383, 4, 16383},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct rlayout l;
        CHECK(rlayout_build(&l, cases[c].files, cases[c].depth, cases[c].fpd, 42) == 0);
        check_layout(&l, cases[c].files, cases[c].depth, cases[c].fpd);
        if (cases[c].fpd == 1)
            CHECK(l.ndirs == cases[c].files);
        if (cases[c].files == 1)
            CHECK(l.ndirs == 1 && l.dirs[0].nfiles == 1 && l.dirs[0].depth == 1);
        rlayout_free(&l);
    }
    /* many directories: every depth up to the bound is used, none deeper,
     * and the mean files per directory is about (1 + max) / 2 */
    struct rlayout l;
    CHECK(rlayout_build(&l, 1000000, 5, 200, 7) == 0);
    unsigned per_depth[RLAYOUT_MAX_DEPTH + 1] = {0};
    for (uint64_t d = 0; d < l.ndirs; d++)
        per_depth[l.dirs[d].depth <= RLAYOUT_MAX_DEPTH ? l.dirs[d].depth : 0]++;
    CHECK(per_depth[0] == 0 && l.depth == 5);
    for (unsigned k = 1; k <= 5; k++)
        CHECKF(per_depth[k] > l.ndirs / 6, "depth %u: %u of %llu dirs", k, per_depth[k],
               (unsigned long long)l.ndirs);
    double mean = 1e6 / (double)l.ndirs;
    CHECKF(mean > 95 && mean < 106, "mean files per dir %.1f", mean);
    uint64_t expect = rlayout_expected_dirs(1000000, 200);
    CHECKF(l.ndirs > expect * 95 / 100 && l.ndirs < expect * 105 / 100, "dirs %llu expected %llu",
           (unsigned long long)l.ndirs, (unsigned long long)expect);
    rlayout_free(&l);

    /* bad arguments */
    CHECK(rlayout_build(&l, 0, 4, 10, 1) != 0);
    CHECK(rlayout_build(&l, 10, 0, 10, 1) != 0);
    CHECK(rlayout_build(&l, 10, RLAYOUT_MAX_DEPTH + 1, 10, 1) != 0);
    CHECK(rlayout_build(&l, 10, 4, 0, 1) != 0);
}

/* The same seed gives the same layout, another seed another one. */
void test_rlayout_deterministic(void)
{
    struct rlayout a, b, c;
    CHECK(rlayout_build(&a, 200000, 4, 1000, 99) == 0);
    CHECK(rlayout_build(&b, 200000, 4, 1000, 99) == 0);
    CHECK(rlayout_build(&c, 200000, 4, 1000, 100) == 0);
    CHECK(a.ndirs == b.ndirs && a.depth == b.depth && a.leaf_dirs == b.leaf_dirs);
    CHECK(a.ndirs == b.ndirs && memcmp(a.dirs, b.dirs, a.ndirs * sizeof *a.dirs) == 0);
    int differ = a.ndirs != c.ndirs;
    for (uint64_t d = 0; !differ && d < a.ndirs; d++)
        differ = a.dirs[d].name != c.dirs[d].name || a.dirs[d].nfiles != c.dirs[d].nfiles;
    CHECK(differ);
    rlayout_free(&a);
    rlayout_free(&b);
    rlayout_free(&c);
}

void test_rlayout_names(void)
{
    struct rlayout l;
    CHECK(rlayout_build(&l, 50000, 4, 16383, 3) == 0);
    char name[SHAPE_NAME_MAX], path[1024];
    for (uint64_t d = 0; d < l.ndirs; d++) {
        rlayout_dir_name(&l, d, name);
        CHECK(strlen(name) == RLAYOUT_NAME_LEN);
        CHECK(strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") ==
              RLAYOUT_NAME_LEN);
        uint64_t chain[RLAYOUT_MAX_DEPTH];
        unsigned depth = rlayout_chain(&l, d, chain);
        CHECK(depth == l.dirs[d].depth && chain[depth - 1] == d);
        size_t n = rlayout_path(&l, d, "f000001", path, sizeof path);
        CHECK(n == strlen(path) && n == depth * (RLAYOUT_NAME_LEN + 1) + 7);
        CHECK(strncmp(path + n - 7 - RLAYOUT_NAME_LEN - 1, name, RLAYOUT_NAME_LEN) == 0);
    }
    rlayout_file_name(&l, 0, name);
    CHECK(strcmp(name, "f000000") == 0);
    rlayout_file_name(&l, 16382, name);
    CHECK(strcmp(name, "f016382") == 0);
    rlayout_free(&l);
    CHECK(rlayout_build(&l, 10, 1, 10000000, 3) == 0); /* max - 1 has 7 digits */
    rlayout_file_name(&l, 9, name);
    CHECK(strcmp(name, "f0000009") == 0);
    CHECK(l.ndirs == 1 && l.dirs[0].depth == 1);
    rlayout_path(&l, 0, NULL, path, sizeof path);
    CHECK(strlen(path) == RLAYOUT_NAME_LEN);
    rlayout_free(&l);
}

void test_filedata_size_parse(void)
{
    struct filedata_size sz;
    char err[256];
    CHECK(filedata_parse_size("0", &sz, err, sizeof err) == 0 && sz.min == 0 && sz.max == 0);
    CHECK(filedata_parse_size("4K", &sz, err, sizeof err) == 0 && sz.min == 4096 && sz.max == 4096);
    CHECK(filedata_parse_size("0:6552", &sz, err, sizeof err) == 0 && sz.min == 0 && sz.max == 6552);
    CHECK(filedata_parse_size("1K:1M", &sz, err, sizeof err) == 0 && sz.min == 1024 && sz.max == 1048576);
    /* bonnie++ -n N:max:min order */
    CHECK(filedata_parse_size("bonnie:250000", &sz, err, sizeof err) == 0 && sz.min == 0 && sz.max == 250000);
    CHECK(filedata_parse_size("bonnie:250000:100", &sz, err, sizeof err) == 0 && sz.min == 100 &&
          sz.max == 250000);
    CHECK(filedata_parse_size("1G", &sz, err, sizeof err) == 0);
    static const char *bad[] = {"", ":", "1:", ":1", "2:1", "1:2:3", "x", "2G", "0:1025M", "-1", "bonnie",
                                "bonnie:", "bonnie:1:2", "bonnie:1:2:3", "bonnie:x", "Bonnie:1", "1K:bonnie",
                                "1.5K", "uniform:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECKF(filedata_parse_size(bad[i], &sz, err, sizeof err) != 0, "'%s' accepted", bad[i]);
        CHECKF(err[0] && !strchr(err, '\n'), "'%s': message '%s'", bad[i], err);
    }
    /* alignment */
    CHECK(filedata_parse_size("0:6552", &sz, err, sizeof err) == 0);
    CHECK(filedata_size_align(&sz, 8, err, sizeof err) == 0 && filedata_size_min(&sz) == 0 &&
          filedata_size_max(&sz) == 6552 && sz.n == 820);
    CHECK(filedata_parse_size("1:100", &sz, err, sizeof err) == 0);
    CHECK(filedata_size_align(&sz, 8, err, sizeof err) == 0 && filedata_size_min(&sz) == 8 &&
          filedata_size_max(&sz) == 96);
    CHECK(filedata_parse_size("1:7", &sz, err, sizeof err) == 0);
    CHECK(filedata_size_align(&sz, 8, err, sizeof err) != 0 && strstr(err, "multiple"));
    CHECK(filedata_parse_size("100", &sz, err, sizeof err) == 0);
    CHECK(filedata_size_align(&sz, 8, err, sizeof err) != 0 && strstr(err, "multiple"));
    CHECK(filedata_parse_size("4K", &sz, err, sizeof err) == 0);
    CHECK(filedata_size_align(&sz, 4096, err, sizeof err) == 0 && filedata_size_min(&sz) == 4096 &&
          filedata_size_max(&sz) == 4096 && sz.n == 1);
    CHECK(filedata_parse_size("0", &sz, err, sizeof err) == 0);
    CHECK(filedata_size_align(&sz, 512, err, sizeof err) == 0 && filedata_size_max(&sz) == 0);
}

/* Bounds, alignment, the whole range reached, uniform mean, a pure
 * function of (key, index). */
void test_filedata_sizes(void)
{
    static const struct {
        const char *spec;
        uint64_t align;
    } cases[] = {{"0:6552", 8}, {"0:250000", 1}, {"bonnie:250000:100", 1}, {"1:100", 8}, {"3K:5K", 512}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct filedata_size sz;
        char err[256];
        CHECK(filedata_parse_size(cases[c].spec, &sz, err, sizeof err) == 0);
        CHECK(filedata_size_align(&sz, cases[c].align, err, sizeof err) == 0);
        uint64_t lo = UINT64_MAX, hi = 0, bad_align = 0, out = 0;
        long double sum = 0;
        const uint64_t n = 200000;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t s = filedata_file_size(&sz, 77, i);
            out += s < sz.min || s > sz.max;
            bad_align += s % cases[c].align != 0;
            lo = s < lo ? s : lo;
            hi = s > hi ? s : hi;
            sum += s;
            if (i < 1000)
                CHECK(filedata_file_size(&sz, 77, i) == s);
        }
        CHECKF(out == 0 && bad_align == 0, "%s/%llu: %llu out of range, %llu unaligned", cases[c].spec,
               (unsigned long long)cases[c].align, (unsigned long long)out, (unsigned long long)bad_align);
        uint64_t smin = filedata_size_min(&sz), smax = filedata_size_max(&sz);
        /* every value is a step of align: the ends are hit with 200,000 draws
         * when there are few steps, and come close otherwise */
        uint64_t slack = sz.n > 1000 ? (smax - smin) / 100 : 0;
        CHECKF(lo <= smin + slack && hi + slack >= smax, "%s: seen %llu..%llu of %llu..%llu", cases[c].spec,
               (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)smin,
               (unsigned long long)smax);
        double mean = (double)(sum / n), want = (smin + smax) / 2.0;
        CHECKF(mean > want * 0.99 && mean < want * 1.01, "%s: mean %.1f want %.1f", cases[c].spec, mean, want);
    }
    /* the bonnie form is the uniform MIN:MAX form (bonnie++ draws min + rand() % range) */
    struct filedata_size a, b;
    char err[256];
    CHECK(filedata_parse_size("bonnie:250000", &a, err, sizeof err) == 0);
    CHECK(filedata_parse_size("0:250000", &b, err, sizeof err) == 0);
    CHECK(filedata_size_align(&a, 1, err, sizeof err) == 0 && filedata_size_align(&b, 1, err, sizeof err) == 0);
    uint64_t same = 0, other_key = 0;
    for (uint64_t i = 0; i < 1000; i++) {
        same += filedata_file_size(&a, 5, i) == filedata_file_size(&b, 5, i);
        other_key += filedata_file_size(&a, 5, i) == filedata_file_size(&a, 6, i);
    }
    CHECK(same == 1000 && other_key < 10);
    /* fixed size */
    CHECK(filedata_parse_size("1K", &a, err, sizeof err) == 0 && filedata_size_align(&a, 8, err, sizeof err) == 0);
    CHECK(filedata_file_size(&a, 1, 0) == 1024 && filedata_file_size(&a, 99, 12345) == 1024);
    CHECK(filedata_parse_size("1G", &a, err, sizeof err) == 0 && filedata_size_align(&a, 1, err, sizeof err) == 0);
    CHECK(filedata_file_size(&a, 3, 3) == 1ull << 30);
}

void test_filedata_content(void)
{
    struct filedata_size sz;
    char err[256];
    CHECK(filedata_parse_size("0:6552", &sz, err, sizeof err) == 0 && filedata_size_align(&sz, 8, err, sizeof err) == 0);
    struct filedata z, r1, r2, r3, none;
    CHECK(filedata_init(&z, &sz, FILEDATA_ZERO, 1) == 0);
    CHECK(filedata_init(&r1, &sz, FILEDATA_RANDOM, 1) == 0);
    CHECK(filedata_init(&r2, &sz, FILEDATA_RANDOM, 1) == 0);
    CHECK(filedata_init(&r3, &sz, FILEDATA_RANDOM, 2) == 0);
    CHECK(z.buf && z.len == 6552);
    CHECK(r1.buf && r1.len == 6552 + FILEDATA_SLACK);
    size_t nonzero = 0;
    for (size_t i = 0; i < z.len; i++)
        nonzero += z.buf[i] != 0;
    CHECK(nonzero == 0);
    CHECK(filedata_bytes(&z, 123) == z.buf);
    /* same seed: same bytes for every file; another seed or file: others */
    uint64_t differ_seed = 0, differ_file = 0;
    for (uint64_t i = 0; i < 100; i++) {
        const unsigned char *a = filedata_bytes(&r1, i), *b = filedata_bytes(&r2, i);
        const unsigned char *c = filedata_bytes(&r3, i), *d = filedata_bytes(&r1, i + 1);
        CHECK(a >= r1.buf && a + 6552 <= r1.buf + r1.len);
        CHECK(memcmp(a, b, 6552) == 0);
        differ_seed += memcmp(a, c, 64) != 0;
        differ_file += memcmp(a, d, 64) != 0;
        size_t nz = 0;
        for (size_t k = 0; k < 6552; k++)
            nz += a[k] != 0;
        CHECK(nz > 6000); /* about 255/256 of the bytes */
    }
    CHECK(differ_seed == 100 && differ_file >= 99);
    struct filedata_size zero = {.align = 1, .n = 1};
    CHECK(filedata_init(&none, &zero, FILEDATA_RANDOM, 1) == 0 && none.buf == NULL);
    /* big files: the buffer stops at 1 MiB */
    struct filedata big;
    CHECK(filedata_parse_size("1G", &sz, err, sizeof err) == 0 && filedata_size_align(&sz, 1, err, sizeof err) == 0);
    CHECK(filedata_init(&big, &sz, FILEDATA_RANDOM, 1) == 0 && big.len == FILEDATA_IO_CHUNK + FILEDATA_SLACK);
    filedata_free(&big);
    filedata_free(&z);
    filedata_free(&r1);
    filedata_free(&r2);
    filedata_free(&r3);
    filedata_free(&none);
}
