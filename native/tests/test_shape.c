/* test_shape.c - shape parsing and naming, option parsing, permutations. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "prng.h"
#include "shape.h"
#include "test.h"

void test_shape_parse_good(void)
{
    struct shape s;
    char err[256];
    CHECK(shape_parse("10x1000", &s, err, sizeof err) == 0);
    CHECK(s.nlevels == 2 && s.fan[0] == 10 && s.fan[1] == 1000);
    CHECK(s.files == 10000 && s.dirs == 10 && s.leaves == 10 && s.files_per_leaf == 1000);
    CHECK(s.width[0] == 3 && s.width[1] == 6);

    CHECK(shape_parse("1000x1000x1000", &s, err, sizeof err) == 0);
    CHECK(s.nlevels == 3 && s.files == 1000000000ull && s.dirs == 1001000 && s.leaves == 1000000);

    CHECK(shape_parse("7", &s, err, sizeof err) == 0);
    CHECK(s.nlevels == 1 && s.files == 7 && s.dirs == 0 && s.leaves == 1 && s.files_per_leaf == 7);

    CHECK(shape_parse("12345x10000000", &s, err, sizeof err) == 0);
    CHECK(s.width[0] == 5 && s.width[1] == 7);
    CHECK(s.files == 123450000000ull);

    CHECK(shape_parse("1x1x1x1", &s, err, sizeof err) == 0);
    CHECK(s.files == 1 && s.dirs == 3 && s.leaves == 1);

    CHECK(shape_parse("1000000000000", &s, err, sizeof err) == 0); /* max fan-out */
    CHECK(s.width[0] == 12);
}

void test_shape_parse_bad(void)
{
    static const char *bad[] = {
        "", "x", "10x", "x10", "10xx10", "10X10", "-5", "+5", "0", "10x0", " 10", "10 ",
        "1e3", "10x1000x", "abc", "10,1000", "1000000000001", "4294967296x4294967296",
        "1000000x1000000x1000000x1000000", "1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1", "99999999999999999999999",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct shape s;
        char err[256] = "";
        CHECKF(shape_parse(bad[i], &s, err, sizeof err) != 0, "'%s' accepted", bad[i]);
        CHECKF(err[0] != '\0' && strchr(err, '\n') == NULL, "'%s': bad message '%s'", bad[i], err);
    }
}

/* Found by fuzz_shape: the directory total was not checked. A shape whose
 * files fit in 2^63-1 could have more directories than that (levels of
 * fan-out 1 repeat the same count), and past 2^64 the count wrapped:
 * "1000000000000x9223372x1x1x1x1" reported 852580896768 directories. */
void test_shape_dirs_limit(void)
{
    struct shape s;
    char err[256];
    static const char *bad[] = {
        "660094961x7960094961x1x1",       /* 1.05e19 directories (the fuzzer's input) */
        "1000000000000x9223372x1x1x1x1",  /* 3.7e19: wrapped past 2^64 */
        "3037000499x3037000499x1x1",      /* 2^63-1 < 1.8e19 < 2^64 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECKF(shape_parse(bad[i], &s, err, sizeof err) != 0, "'%s' accepted with %llu dirs", bad[i],
               (unsigned long long)s.dirs);
        CHECKF(strstr(err, "2^63-1") != NULL, "'%s': message '%s'", bad[i], err);
    }
    /* just inside: 3037000499^2 files, 3037000499 + 3037000499^2 directories */
    CHECK(shape_parse("3037000499x3037000499x1", &s, err, sizeof err) == 0);
    CHECK(s.files == 9223372030926249001ull && s.dirs == 9223372033963249500ull);
    uint64_t fan[4] = {3037000499ull, 3037000499ull, 1, 1};
    CHECK(shape_from_fans(&s, fan, 4) != 0);
}

void test_shape_names(void)
{
    struct shape s;
    char err[256], name[SHAPE_NAME_MAX], path[256];
    CHECK(shape_parse("10x1000", &s, err, sizeof err) == 0);
    shape_name(&s, 0, 3, name);
    CHECK(strcmp(name, "d003") == 0);
    shape_name(&s, 1, 123, name);
    CHECK(strcmp(name, "f000123") == 0);
    uint64_t idx[SHAPE_MAX_LEVELS];
    shape_leaf_indices(&s, 3, idx);
    shape_path(&s, idx, 1, "f000123", path, sizeof path);
    CHECK(strcmp(path, "d003/f000123") == 0);

    CHECK(shape_parse("10x20x5", &s, err, sizeof err) == 0);
    shape_leaf_indices(&s, 47, idx);
    CHECK(idx[0] == 2 && idx[1] == 7);
    shape_path(&s, idx, 2, NULL, path, sizeof path);
    CHECK(strcmp(path, "d002/d007") == 0);

    CHECK(shape_parse("5000x1234567", &s, err, sizeof err) == 0);
    shape_name(&s, 0, 42, name);
    CHECK(strcmp(name, "d0042") == 0);
    shape_name(&s, 1, 1234566, name);
    CHECK(strcmp(name, "f1234566") == 0);
    CHECK(shape_parse("3", &s, err, sizeof err) == 0);
    shape_name(&s, 0, 2, name);
    CHECK(strcmp(name, "f000002") == 0);
    shape_path(&s, idx, 0, "f000002", path, sizeof path);
    CHECK(strcmp(path, "f000002") == 0);
}

static int parse_shape(const char *v, void *dst, char *err, size_t len)
{
    return shape_parse(v, dst, err, len);
}

void test_cli_parse(void)
{
    static const char *const colors[] = {"red", "green", NULL};
    uint64_t n;
    double d;
    int flag, color;
    const char *s;
    struct shape sh;
    struct opt_spec specs[] = {
        {.name = "--n", .type = OPT_U64, .dst = &n, .min = 1, .max = 256},
        {.name = "--d", .type = OPT_DOUBLE, .dst = &d, .dmin = 0.5, .dmax = 10},
        {.name = "--flag", .type = OPT_FLAG, .dst = &flag},
        {.name = "--color", .type = OPT_ENUM, .dst = &color, .choices = colors},
        {.name = "--s", .type = OPT_STR, .dst = &s, .required = 1},
        {.name = "--shape", .type = OPT_CUSTOM, .dst = &sh, .parse = parse_shape},
        {0},
    };
    char err[CLI_ERR_MAX];
    char *good[] = {"--n", "12", "--d=2.5", "--flag", "--color", "green", "--s", "x y", "--shape=2x3"};
    n = 0; d = 0; flag = 0; color = 0; s = NULL;
    CHECK(cli_parse(9, good, specs, err, sizeof err) == 0);
    CHECK(n == 12 && d == 2.5 && flag == 1 && color == 1 && s && strcmp(s, "x y") == 0);
    CHECK(sh.files == 6);

    struct {
        int argc;
        char *argv[4];
        const char *expect; /* substring of the message */
    } bad[] = {
        {4, {"--s", "a", "--n", "x"}, "--n: expected an integer 1..256, got 'x'"},
        {4, {"--s", "a", "--n", "257"}, "--n: expected an integer 1..256, got '257'"},
        {4, {"--s", "a", "--n", "0"}, "--n: expected an integer"},
        {4, {"--s", "a", "--n", "-1"}, "--n: expected an integer"},
        {4, {"--s", "a", "--n", "99999999999999999999999"}, "--n: expected an integer"},
        {3, {"--s", "a", "--n"}, "--n: missing value"},
        {4, {"--s", "a", "--d", "0.1"}, "--d: expected a number"},
        {4, {"--s", "a", "--d", "nan"}, "--d: expected a number"},
        {4, {"--s", "a", "--color", "blue"}, "--color: expected one of red|green, got 'blue'"},
        {3, {"--s", "a", "--flag=1"}, "--flag: takes no value"},
        {3, {"--s", "a", "--what"}, "--what: unknown argument"},
        {3, {"--s", "a", "positional"}, "positional: unexpected argument"},
        {4, {"--s", "a", "--s", "b"}, "--s: given more than once"},
        {1, {"--flag"}, "--s: required argument missing"},
        {2, {"--s", ""}, "--s: expected a non-empty value"},
        {4, {"--s", "a", "--shape", "3x"}, "--shape: expected positive integers"},
        /* decimal only: strtod alone read "0x2" as 2 and "0x1p1" as 2 */
        {4, {"--s", "a", "--d", "0x2"}, "--d: expected a number 0.5..10, got '0x2'"},
        {4, {"--s", "a", "--d", "0x1p1"}, "--d: expected a number"},
        {4, {"--s", "a", "--d", "2.5f"}, "--d: expected a number"},
        /* an option where a value belongs is not the value */
        {3, {"--s", "--flag", "x"}, "--s: missing value (got the option '--flag'"},
        {4, {"--s", "a", "--n", "--flag"}, "--n: missing value"},
        {3, {"--s", "a", "--color", "--"}, "--color: missing value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = cli_parse(bad[i].argc, bad[i].argv, specs, err, sizeof err);
        CHECKF(rc != 0 && strstr(err, bad[i].expect) != NULL && !strchr(err, '\n'),
               "case %zu: rc=%d err='%s' expected '%s'", i, rc, err, bad[i].expect);
    }
}

/* Defaults come from the table, through the option's own parser; --help
 * anywhere asks for the help; the "=" form takes any value. */
void test_cli_defaults_and_help(void)
{
    static const char *const colors[] = {"red", "green", NULL};
    uint64_t n = 0, sz = 0;
    double d = 0;
    int flag = 7, color = 0;
    const char *s = NULL;
    struct shape sh;
    struct opt_spec specs[] = {
        {.name = "--n", .type = OPT_U64, .dst = &n, .min = 1, .max = 256, .def = "3"},
        {.name = "--sz", .type = OPT_SIZE, .dst = &sz, .min = 1, .max = 1ull << 30, .def = "4K"},
        {.name = "--d", .type = OPT_DOUBLE, .dst = &d, .dmin = 0.5, .dmax = 10, .def = "1.5"},
        {.name = "--flag", .type = OPT_FLAG, .dst = &flag},
        {.name = "--color", .type = OPT_ENUM, .dst = &color, .choices = colors, .def = "green"},
        {.name = "--s", .type = OPT_STR, .dst = &s, .def_text = "default none"},
        {.name = "--shape", .type = OPT_CUSTOM, .dst = &sh, .parse = parse_shape, .def = "2x5"},
        {0},
    };
    char err[CLI_ERR_MAX];
    CHECK(cli_parse(0, NULL, specs, err, sizeof err) == 0);
    CHECK(n == 3 && sz == 4096 && d == 1.5 && flag == 0 && color == 1 && s == NULL && sh.files == 10);
    CHECK(!cli_given(specs, "--n") && !cli_given(specs, "--nosuch"));
    char *given[] = {"--n", "9", "--shape=7", "--s=--flag"};
    CHECK(cli_parse(4, given, specs, err, sizeof err) == 0);
    CHECK(n == 9 && sh.files == 7 && sz == 4096 && s && strcmp(s, "--flag") == 0);
    CHECK(cli_given(specs, "--n") && cli_given(specs, "--s") && !cli_given(specs, "--sz"));
    /* --help wins over anything else, even a bad argument before it */
    char *help[] = {"--n", "x", "--help"};
    CHECK(cli_parse(3, help, specs, err, sizeof err) == CLI_HELP);
    /* a default its own parser refuses is a bug, reported as such */
    struct opt_spec bad[] = {
        {.name = "--n", .type = OPT_U64, .dst = &n, .min = 1, .max = 2, .def = "3"},
        {0},
    };
    CHECK(cli_parse(0, NULL, bad, err, sizeof err) != 0 && strstr(err, "--n: internal error (bad default '3')"));

    /* the help: every option, its value, kind and range, default, help text */
    specs[0].help = "How many.";
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct cli_command cmd = {.name = "demo", .summary = "a demo", .synopsis = "--s S [OPTION]..."};
    cli_help(f, &cmd, specs);
    fclose(f);
    CHECKF(strstr(text, "usage: boatload-worker demo --s S [OPTION]...\na demo\n") == text, "'%s'", text);
    CHECKF(strstr(text, "\n  --n N                       integer 1..256, default 3\n      How many.\n"), "'%s'", text);
    CHECKF(strstr(text, "\n  --sz BYTES                  size 1..1G, default 4K\n"), "'%s'", text);
    CHECKF(strstr(text, "\n  --d X                       number 0.5..10, default 1.5\n"), "'%s'", text);
    CHECKF(strstr(text, "\n  --flag                      flag\n"), "'%s'", text);
    CHECKF(strstr(text, "\n  --color red|green           default green\n"), "'%s'", text);
    CHECKF(strstr(text, "\n  --s VALUE                   default none\n"), "'%s'", text);
    free(text);
}

void test_cli_wrap(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cli_print_wrapped(f, "aaa bbb ccc ddd\n\n  eee fff ggg\nhhhhhhhhhhhh", 2, 12);
    fclose(f);
    CHECKF(strcmp(text, "  aaa bbb\n  ccc ddd\n\n    eee fff\n    ggg\n  hhhhhhhhhhhh\n") == 0, "'%s'", text);
    free(text);
}

void test_perm(void)
{
    static const uint64_t sizes[] = {1, 2, 3, 10, 1000, 4097, 100000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t n = sizes[k];
        struct perm p, q, r;
        perm_init(&p, n, 123);
        perm_init(&q, n, 123);
        perm_init(&r, n, 124);
        unsigned char *seen = calloc(n, 1);
        uint64_t fixed = 0, same_as_other_key = 0;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t v = perm_apply(&p, i);
            CHECK(v < n);
            if (v >= n)
                break;
            CHECK(!seen[v]);
            seen[v] = 1;
            CHECK(perm_apply(&q, i) == v);
            fixed += v == i;
            same_as_other_key += perm_apply(&r, i) == v;
        }
        free(seen);
        if (n >= 1000) {
            CHECKF(fixed < n / 20, "n=%llu: %llu fixed points", (unsigned long long)n,
                   (unsigned long long)fixed);
            CHECK(same_as_other_key < n / 20);
        }
    }
    /* huge domains work without memory */
    struct perm p;
    perm_init(&p, 1000000000000ull, 9);
    CHECK(perm_apply(&p, 999999999999ull) < 1000000000000ull);
}
