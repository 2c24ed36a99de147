/* cli.h - table-driven argument parsing shared by all workloads.
 *
 * Each workload declares an array of struct opt_spec (terminated by a
 * zeroed entry) and calls cli_parse(). Options are "--name value" or
 * "--name=value"; flags take no value. Any problem yields a single line
 * message naming the argument, e.g.
 *   "--threads: expected an integer 1..256, got 'x'"
 * which the caller prints as "boatload-worker: <msg>" and exits with 2.
 */
#ifndef BOATLOAD_CLI_H
#define BOATLOAD_CLI_H

#include <stddef.h>
#include <stdint.h>

#define CLI_EXIT_USAGE 2
#define CLI_ERR_MAX 512

enum opt_type {
    OPT_END = 0,
    OPT_FLAG,    /* int *: set to 1 */
    OPT_STR,     /* const char **: non-empty string */
    OPT_U64,     /* uint64_t *: decimal integer in [min, max] */
    OPT_DOUBLE,  /* double *: number in [dmin, dmax] */
    OPT_ENUM,    /* int *: index into choices (NULL-terminated) */
    OPT_CUSTOM,  /* parse(value, dst, err, errlen) */
    OPT_SIZE,    /* uint64_t *: bytes in [min, max], suffix K, M, G or T (binary) */
};

struct opt_spec {
    const char *name;          /* including the leading "--" */
    enum opt_type type;
    void *dst;
    int required;
    uint64_t min, max;         /* OPT_U64, OPT_SIZE */
    double dmin, dmax;         /* OPT_DOUBLE */
    const char *const *choices;/* OPT_ENUM */
    int (*parse)(const char *val, void *dst, char *err, size_t errlen); /* OPT_CUSTOM */
    int seen;                  /* set by cli_parse */
};

/* Parse argv[0..argc) (the arguments after the workload name). Returns 0,
 * or -1 with a one-line message in err. */
int cli_parse(int argc, char **argv, struct opt_spec *specs, char *err, size_t errlen);

/* Strict number parsers (no sign, no spaces, no trailing garbage). */
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_double(const char *s, double *out);
/* A byte count: decimal digits, optionally followed by one of K, M, G, T
 * (either case, powers of 1024). "12M" = 12582912. No sign, no spaces, no
 * fractions. Returns -1 on syntax errors and on overflow. */
int cli_parse_size(const char *s, uint64_t *out);
/* Shortest exact rendering of a byte count: "1G", "4K", "1000". */
void cli_format_size(uint64_t v, char *buf, size_t len);

/* A message that quotes an argument before its reason ("X: unknown
 * argument") shows at most CLI_SHOWN_MAX bytes of it, then "...", so that
 * the reason always fits in CLI_ERR_MAX. cli_shown_len gives how many
 * bytes of s (len bytes) to show: all, or CLI_SHOWN_MAX cut back to the
 * start of a UTF-8 character. */
#define CLI_SHOWN_MAX 64
int cli_shown_len(const char *s, size_t len);

/* Print "boatload-worker: <msg>" as one line to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
