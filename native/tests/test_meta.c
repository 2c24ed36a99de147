/* test_meta.c - meta's pure parts (phase list, sizes, layout, visit order)
 * and the size option type shared by meta, seqio and randio. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "meta.h"
#include "test.h"

void test_cli_size(void)
{
    static const struct {
        const char *s;
        uint64_t v;
    } good[] = {
        {"0", 0}, {"1", 1}, {"4096", 4096}, {"4K", 4096}, {"4k", 4096}, {"12M", 12582912},
        {"2G", 2147483648ull}, {"1T", 1ull << 40}, {"16777215T", 16777215ull << 40},
        {"18446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 12345;
        CHECKF(cli_parse_size(good[i].s, &v) == 0 && v == good[i].v, "'%s' -> %llu", good[i].s,
               (unsigned long long)v);
    }
    static const char *bad[] = {"", "K", "-1", "+1", "1.5M", "1 M", "1MB", "1KK", "1X", "16777216T",
                                "18446744073709551616", " 1", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v;
        CHECKF(cli_parse_size(bad[i], &v) != 0, "'%s' accepted", bad[i]);
    }
    char buf[32];
    cli_format_size(1ull << 30, buf, sizeof buf);
    CHECK(strcmp(buf, "1G") == 0);
    cli_format_size(1536, buf, sizeof buf);
    CHECK(strcmp(buf, "1536") == 0);
    cli_format_size(0, buf, sizeof buf);
    CHECK(strcmp(buf, "0") == 0);

    uint64_t block = 0;
    struct opt_spec specs[] = {
        {.name = "--block", .type = OPT_SIZE, .dst = &block, .min = 1, .max = 1ull << 30},
        {0},
    };
    char err[CLI_ERR_MAX];
    char *ok[] = {"--block=12M"};
    CHECK(cli_parse(1, ok, specs, err, sizeof err) == 0 && block == 12582912);
    char *too_big[] = {"--block", "2G"};
    CHECK(cli_parse(2, too_big, specs, err, sizeof err) != 0);
    CHECKF(strstr(err, "--block: expected a size 1..1G") && strstr(err, "got '2G'"), "'%s'", err);
    char *zero[] = {"--block", "0"};
    CHECK(cli_parse(2, zero, specs, err, sizeof err) != 0 && strstr(err, "--block"));
}

void test_meta_phases_parse(void)
{
    struct meta_phases ph;
    char err[256];
    CHECK(meta_parse_phases("create:seq,open:rand,stat:rand,read:rand,delete:seq", &ph, err, sizeof err) == 0);
    CHECK(ph.n == 5);
    CHECK(ph.p[0].op == META_CREATE && !ph.p[0].random);
    CHECK(ph.p[1].op == META_OPEN && ph.p[1].random);
    CHECK(ph.p[2].op == META_STAT && ph.p[2].random);
    CHECK(ph.p[3].op == META_READ && ph.p[3].random);
    CHECK(ph.p[4].op == META_DELETE && !ph.p[4].random);
    CHECK(meta_parse_phases("stat", &ph, err, sizeof err) == 0 && ph.n == 1 && ph.p[0].op == META_STAT &&
          !ph.p[0].random);
    CHECK(meta_parse_phases("read:random,read:sequential,create", &ph, err, sizeof err) == 0 && ph.n == 3 &&
          ph.p[0].random && !ph.p[1].random && ph.p[2].op == META_CREATE);
    static const char *bad[] = {"", ",", "create,", ",create", "create:", "create:up", "make",
                                "create:seq:rand", "Create", "stat,stat,stat,stat,stat,stat,stat,stat,"
                                "stat,stat,stat,stat,stat,stat,stat,stat,stat"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECKF(meta_parse_phases(bad[i], &ph, err, sizeof err) != 0, "'%s' accepted", bad[i]);
        CHECKF(err[0] && !strchr(err, '\n'), "'%s': message '%s'", bad[i], err);
    }
}

void test_meta_size_parse(void)
{
    struct meta_size sz;
    char err[256];
    CHECK(meta_parse_size("1K", &sz, err, sizeof err) == 0 && sz.min == 1024 && sz.max == 1024);
    CHECK(meta_parse_size("0:250000", &sz, err, sizeof err) == 0 && sz.min == 0 && sz.max == 250000);
    CHECK(meta_parse_size("4K:1M", &sz, err, sizeof err) == 0 && sz.min == 4096 && sz.max == 1048576);
    CHECK(meta_parse_size("1G", &sz, err, sizeof err) == 0);
    static const char *bad[] = {"", ":", "1:", ":1", "2:1", "1:2:3", "x", "2G", "0:1025M", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECKF(meta_parse_size(bad[i], &sz, err, sizeof err) != 0, "'%s' accepted", bad[i]);
}

/* Every file index maps to exactly one (dir, local) slot, the blocks are
 * contiguous and balanced, and names match tree's for an even split. */
void test_meta_layout(void)
{
    static const uint64_t cases[][2] = {{1, 0}, {10, 0}, {1, 1}, {10, 3}, {1000, 7}, {50, 50}, {10000, 10}, {1001, 1000}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t files = cases[c][0], dirs = cases[c][1];
        struct meta_layout l;
        CHECK(meta_layout_init(&l, files, dirs) == 0);
        uint64_t nd = dirs ? dirs : 1;
        uint64_t *count = calloc(nd, sizeof *count);
        uint64_t prev_d = 0, prev_l = 0;
        for (uint64_t i = 0; i < files; i++) {
            uint64_t d, loc;
            meta_locate(&l, i, &d, &loc);
            CHECK(d < nd);
            if (d >= nd)
                break;
            if (i > 0) /* contiguous: same dir and next index, or next dir from 0 */
                CHECK((d == prev_d && loc == prev_l + 1) || (d == prev_d + 1 && loc == 0));
            CHECK(loc == count[d]);
            count[d]++;
            prev_d = d;
            prev_l = loc;
        }
        for (uint64_t d = 0; d < nd; d++)
            CHECKF(count[d] == files / nd || count[d] == files / nd + 1, "files %llu dirs %llu: dir %llu has %llu",
                   (unsigned long long)files, (unsigned long long)dirs, (unsigned long long)d,
                   (unsigned long long)count[d]);
        free(count);
    }
    struct meta_layout l;
    char name[SHAPE_NAME_MAX];
    CHECK(meta_layout_init(&l, 10000, 10) == 0);
    shape_name(&l.names, 0, 9, name);
    CHECK(strcmp(name, "d009") == 0);
    shape_name(&l.names, 1, 999, name);
    CHECK(strcmp(name, "f000999") == 0);
    CHECK(meta_layout_init(&l, 25, 0) == 0);
    shape_name(&l.names, 0, 24, name);
    CHECK(strcmp(name, "f000024") == 0);
    CHECK(meta_layout_init(&l, 5, 6) != 0);   /* more dirs than files */
    CHECK(meta_layout_init(&l, 0, 0) != 0);
}

/* Random order visits every file exactly once, the same seed gives the same
 * order, and phases / seeds differ. */
void test_meta_order_visits_all_once(void)
{
    static const uint64_t sizes[] = {1, 2, 7, 1000, 250000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t n = sizes[k];
        struct meta_order a, b, other_phase, other_seed, seq;
        meta_order_init(&a, n, 1, 42, 1);
        meta_order_init(&b, n, 1, 42, 1);
        meta_order_init(&other_phase, n, 1, 42, 2);
        meta_order_init(&other_seed, n, 1, 43, 1);
        meta_order_init(&seq, n, 0, 42, 1);
        unsigned char *seen = calloc(n, 1);
        uint64_t dup = 0, out = 0, same_phase = 0, same_seed = 0, in_place = 0;
        for (uint64_t pos = 0; pos < n; pos++) {
            uint64_t f = meta_order_file(&a, pos);
            if (f >= n) {
                out++;
                continue;
            }
            dup += seen[f];
            seen[f] = 1;
            CHECK(meta_order_file(&b, pos) == f);
            CHECK(meta_order_file(&seq, pos) == pos);
            same_phase += meta_order_file(&other_phase, pos) == f;
            same_seed += meta_order_file(&other_seed, pos) == f;
            in_place += f == pos;
        }
        uint64_t visited = 0;
        for (uint64_t i = 0; i < n; i++)
            visited += seen[i];
        CHECKF(out == 0 && dup == 0 && visited == n, "n=%llu: out %llu dup %llu visited %llu",
               (unsigned long long)n, (unsigned long long)out, (unsigned long long)dup,
               (unsigned long long)visited);
        if (n >= 1000) {
            CHECK(same_phase < n / 20 && same_seed < n / 20 && in_place < n / 20);
        }
        free(seen);
    }
}

void test_meta_file_sizes(void)
{
    struct meta_size sz = {.min = 100, .max = 250000};
    uint64_t lo = UINT64_MAX, hi = 0;
    long double sum = 0;
    const uint64_t n = 100000;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t s = meta_file_size(&sz, 7, i);
        CHECK(s >= sz.min && s <= sz.max);
        CHECK(meta_file_size(&sz, 7, i) == s);
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
        sum += s;
    }
    double mean = (double)(sum / n), want = (sz.min + sz.max) / 2.0;
    CHECKF(mean > want * 0.99 && mean < want * 1.01, "mean %.0f want %.0f", mean, want);
    CHECK(lo < sz.min + 1000 && hi > sz.max - 1000);
    uint64_t differ = 0;
    for (uint64_t i = 0; i < 1000; i++)
        differ += meta_file_size(&sz, 7, i) != meta_file_size(&sz, 8, i);
    CHECK(differ > 990);
    struct meta_size fixed = {.min = 1024, .max = 1024};
    CHECK(meta_file_size(&fixed, 1, 0) == 1024 && meta_file_size(&fixed, 99, 12345) == 1024);
    struct meta_size big = {.min = 0, .max = 1ull << 30};
    CHECK(meta_file_size(&big, 3, 3) <= big.max);
}

/* split.h: with ndirs >= threads the shares are contiguous runs of whole
 * directories, one or more each, covering all of them in order; with fewer
 * directories than threads every directory gets at least one thread, its
 * chunks covering its files exactly. */
void test_split_shares(void)
{
    static const uint64_t ndirs_list[] = {1, 2, 3, 4, 5, 7, 100, 1001};
    static const uint64_t nfiles_list[] = {0, 1, 2, 5, 1000};
    for (size_t a = 0; a < sizeof ndirs_list / sizeof ndirs_list[0]; a++) {
        uint64_t ndirs = ndirs_list[a];
        for (unsigned threads = 1; threads <= 9; threads++) {
            uint64_t next_dir = 0;
            uint64_t *threads_in = calloc(ndirs, sizeof *threads_in);
            for (unsigned t = 0; t < threads; t++) {
                struct split_share s;
                split_share(ndirs, threads, t, &s);
                if (split_by_dirs(ndirs, threads)) {
                    CHECKF(s.dir_begin == next_dir && s.dir_end > s.dir_begin && s.part == 0 && s.parts == 1,
                           "ndirs %llu threads %u t %u: [%llu, %llu) part %llu/%llu", (unsigned long long)ndirs,
                           threads, t, (unsigned long long)s.dir_begin, (unsigned long long)s.dir_end,
                           (unsigned long long)s.part, (unsigned long long)s.parts);
                    next_dir = s.dir_end;
                } else {
                    CHECK(s.dir_end == s.dir_begin + 1 && s.dir_begin < ndirs && s.part < s.parts);
                    if (s.dir_begin < ndirs) {
                        CHECK(s.part == threads_in[s.dir_begin]); /* chunks in thread order */
                        threads_in[s.dir_begin]++;
                    }
                }
            }
            if (split_by_dirs(ndirs, threads)) {
                CHECK(next_dir == ndirs);
            } else {
                for (uint64_t d = 0; d < ndirs; d++) {
                    CHECK(threads_in[d] >= 1);
                    for (size_t b = 0; b < sizeof nfiles_list / sizeof nfiles_list[0]; b++) {
                        uint64_t n = nfiles_list[b], next = 0;
                        for (uint64_t part = 0; part < threads_in[d]; part++) {
                            uint64_t lo, hi;
                            split_chunk(n, part, threads_in[d], &lo, &hi);
                            CHECK(lo == next && hi >= lo && hi <= n);
                            next = hi;
                        }
                        CHECK(next == n);
                    }
                }
            }
            free(threads_in);
        }
    }
}

/* meta's shares: each thread visits a contiguous block of file indices in
 * order or as a permutation of the block; together the threads visit every
 * file exactly once; the blocks are whole directories when there are at
 * least as many directories as threads, and inside one directory when
 * there are fewer. */
void test_meta_shares_visit_all_once(void)
{
    static const struct {
        uint64_t files, dirs;
    } cases[] = {{200, 4}, {50, 1}, {1, 0}, {7, 0}, {1000, 3}, {1001, 10}, {10, 10}, {5, 2}, {999, 7}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct meta_layout l;
        CHECK(meta_layout_init(&l, cases[c].files, cases[c].dirs) == 0);
        uint64_t n = l.files, ndirs = l.dirs ? l.dirs : 1;
        CHECK(meta_dir_first(&l, 0) == 0 && meta_dir_first(&l, ndirs) == n);
        for (unsigned threads = 1; threads <= 6; threads++) {
            for (int random = 0; random <= 1; random++) {
                unsigned char *seen = calloc(n, 1);
                uint64_t dup = 0, out = 0;
                for (unsigned t = 0; t < threads; t++) {
                    struct split_share s;
                    uint64_t begin, end;
                    meta_share(&l, threads, t, &s, &begin, &end);
                    CHECK(begin <= end && end <= n);
                    if (split_by_dirs(ndirs, threads)) {
                        CHECK(begin == meta_dir_first(&l, s.dir_begin) && end == meta_dir_first(&l, s.dir_end));
                        CHECK(s.dir_end > s.dir_begin);
                    } else {
                        CHECK(begin >= meta_dir_first(&l, s.dir_begin) && end <= meta_dir_first(&l, s.dir_end));
                    }
                    struct meta_order o;
                    meta_order_init_share(&o, begin, end, random, 42, 3);
                    uint64_t in_place = 0;
                    for (uint64_t pos = 0; pos < end - begin; pos++) {
                        uint64_t i = begin + meta_order_file(&o, pos), d, local;
                        in_place += i == begin + pos;
                        if (i < begin || i >= end) {
                            out++;
                            continue;
                        }
                        dup += seen[i];
                        seen[i] = 1;
                        meta_locate(&l, i, &d, &local);
                        CHECK(d >= s.dir_begin && d < s.dir_end);
                    }
                    if (random && end - begin >= 100) {
                        CHECK(in_place < (end - begin) / 10);
                    }
                }
                uint64_t visited = 0;
                for (uint64_t i = 0; i < n; i++)
                    visited += seen[i];
                CHECKF(out == 0 && dup == 0 && visited == n,
                       "files %llu dirs %llu threads %u random %d: out %llu dup %llu visited %llu",
                       (unsigned long long)n, (unsigned long long)l.dirs, threads, random, (unsigned long long)out,
                       (unsigned long long)dup, (unsigned long long)visited);
                free(seen);
            }
        }
    }
}
