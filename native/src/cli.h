/* cli.h - table-driven argument parsing shared by all workloads.
 *
 * Each workload declares an array of struct opt_spec (terminated by a
 * zeroed entry), in the style of fio's and IOR's option tables: an option's
 * type, range, default and help text live in its entry. cli_parse() applies
 * the defaults and reads the arguments; cli_help() prints the --help text
 * from the same table, so the help cannot disagree with the parser.
 *
 * Options are "--name value" or "--name=value"; flags take no value. The
 * "--name value" form never takes a value that starts with "--" (that is
 * the next option: "--out --progress" is "--out: missing value"); the "="
 * form takes any value. Any problem yields a single line message naming the
 * argument, e.g.
 *   "--threads: expected an integer 1..256, got 'x'"
 * which the caller prints as "boatload-worker: <msg>" and exits with 2.
 */
#ifndef BOATLOAD_CLI_H
#define BOATLOAD_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_EXIT_USAGE 2
#define CLI_ERR_MAX 512
#define CLI_HELP 1          /* cli_parse: the arguments ask for --help */
#define CLI_CONTINUE (-1)   /* a workload's parse/plan step went well: go on */

enum opt_type {
    OPT_END = 0,
    OPT_FLAG,    /* int *: 1 when given, else 0 */
    OPT_STR,     /* const char **: non-empty string */
    OPT_U64,     /* uint64_t *: decimal integer in [min, max] */
    OPT_DOUBLE,  /* double *: decimal number in [dmin, dmax] */
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
    /* For --help (and def also for cli_parse): */
    const char *metavar;       /* the value in the help ("DIR", "AxBx...xF"); NULL: from the
                                  type (N, BYTES, X, the choices a|b|c, VALUE) */
    const char *def;           /* the default as it would be given ("1", "4K", "sequential"):
                                  cli_parse applies it (through the option's own parser) when
                                  the option is absent, --help shows it. NULL: no such value */
    const char *def_text;      /* shown instead when there is no default value: what happens
                                  without the option ("default stdout", "required unless
                                  --prepare"). Neither: "required" or nothing (flags) */
    const char *help;          /* what the option does; wrapped by cli_help */
    int seen;                  /* set by cli_parse */
};

/* Parse argv[0..argc) (the arguments after the workload name): first the
 * defaults (def) of all options, then the arguments. Returns 0; CLI_HELP
 * when an argument is exactly "--help" (nothing else is checked); or -1
 * with a one-line message in err. */
int cli_parse(int argc, char **argv, struct opt_spec *specs, char *err, size_t errlen);

/* Whether the option name was given on the command line (after cli_parse). */
int cli_given(const struct opt_spec *specs, const char *name);

/* A workload as --help presents it. */
struct cli_command {
    const char *name;          /* "tree" */
    const char *summary;       /* one line: the top-level list and the help's first line */
    const char *synopsis;      /* the forms of the call after "boatload-worker NAME ", one a line */
    const char *notes;         /* text after the options, or NULL */
};

/* The next three are in help.c. */

/* The help of one workload, from its table: usage, summary, then for each
 * option its name and value, kind and range, default, and help text. */
void cli_help(FILE *f, const struct cli_command *cmd, const struct opt_spec *specs);

/* cli_parse for a workload's main: prints the help (stdout) or the one-line
 * error (cli_error). Returns CLI_CONTINUE when the arguments were read, else
 * the exit code (0 after --help, CLI_EXIT_USAGE after an error). */
int cli_parse_command(const struct cli_command *cmd, int argc, char **argv, struct opt_spec *specs);

/* Print text to f, each line ('\n' ends one) wrapped at width columns
 * with indent spaces before every printed line (and a line's own leading
 * spaces before each of its wrapped lines). */
void cli_print_wrapped(FILE *f, const char *text, unsigned indent, unsigned width);

/* Strict number parsers (no sign, no spaces, no trailing garbage).
 * cli_parse_double takes decimal notation only: digits with an optional
 * fraction and exponent ("2", "0.5", ".5", "1e7"), not "0x10" or "inf". */
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

/* The choices of an enum, "a|b|c", into buf (cut to len). */
void cli_join_choices(const char *const *choices, char *buf, size_t len);

/* Print "boatload-worker: <msg>" as one line to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
