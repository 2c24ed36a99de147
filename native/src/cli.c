/* cli.c - table-driven option parsing with one-line error messages (the
 * --help text from the same tables is help.c's). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nothing else in this file calls cli_error: fuzz_args replaces it at link
 * time (ld --wrap), which reaches only calls from other object files. */
void cli_error(const char *fmt, ...)
{
    char msg[CLI_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* keep it to one line whatever the argument contained */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fprintf(stderr, "boatload-worker: %s\n", msg);
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *s, double *out)
{
    if (!s || !*s || !((*s >= '0' && *s <= '9') || *s == '.'))
        return -1;
    /* decimal notation only: strtod would also read "0x10" (16) and "0x1p4" */
    if (s[strspn(s, "0123456789.eE+-")] != '\0')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return -1;
    unsigned shift = 0;
    switch (*p) {
    case '\0':
        break;
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default:
        return -1;
    }
    if (shift) {
        if (p[1] != '\0' || v > (UINT64_MAX >> shift))
            return -1;
        v <<= shift;
    }
    *out = v;
    return 0;
}

void cli_format_size(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "TGMK";
    for (int i = 0; i < 4; i++) {
        unsigned shift = (unsigned)(40 - 10 * i);
        if (v && (v & ((1ull << shift) - 1)) == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(v >> shift), units[i]);
            return;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)v);
}

int cli_shown_len(const char *s, size_t len)
{
    if (len <= CLI_SHOWN_MAX)
        return (int)len;
    size_t n = CLI_SHOWN_MAX;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) /* s[n] continues a character */
        n--;
    return (int)n;
}

static struct opt_spec *find(struct opt_spec *specs, const char *name, size_t len)
{
    for (struct opt_spec *s = specs; s->type != OPT_END; s++)
        if (strlen(s->name) == len && strncmp(s->name, name, len) == 0)
            return s;
    return NULL;
}

/* Quote-safe short rendering of a user value for messages. */
static const char *shown(const char *v)
{
    return v ? v : "";
}

void cli_join_choices(const char *const *choices, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int c = 0; choices[c] && n < len; c++) {
        int w = snprintf(buf + n, len - n, "%s%s", c ? "|" : "", choices[c]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

static int convert_enum(const struct opt_spec *s, const char *val, char *err, size_t errlen)
{
    for (int k = 0; s->choices[k]; k++) {
        if (strcmp(s->choices[k], val) == 0) {
            *(int *)s->dst = k;
            return 0;
        }
    }
    char list[256];
    cli_join_choices(s->choices, list, sizeof list);
    snprintf(err, errlen, "%s: expected one of %s, got '%s'", s->name, list, shown(val));
    return -1;
}

/* Convert val into s->dst by the option's type. 0, or -1 with a message. */
static int convert(const struct opt_spec *s, const char *val, char *err, size_t errlen)
{
    switch (s->type) {
    case OPT_STR:
        if (!*val) {
            snprintf(err, errlen, "%s: expected a non-empty value", s->name);
            return -1;
        }
        *(const char **)s->dst = val;
        return 0;
    case OPT_U64: {
        uint64_t v;
        if (cli_parse_u64(val, &v) != 0 || v < s->min || v > s->max) {
            snprintf(err, errlen, "%s: expected an integer %llu..%llu, got '%s'", s->name,
                     (unsigned long long)s->min, (unsigned long long)s->max, shown(val));
            return -1;
        }
        *(uint64_t *)s->dst = v;
        return 0;
    }
    case OPT_SIZE: {
        uint64_t v;
        if (cli_parse_size(val, &v) != 0 || v < s->min || v > s->max) {
            char lo[32], hi[32];
            cli_format_size(s->min, lo, sizeof lo);
            cli_format_size(s->max, hi, sizeof hi);
            snprintf(err, errlen, "%s: expected a size %s..%s (bytes, or K, M, G, T: powers of 1024), got '%s'",
                     s->name, lo, hi, shown(val));
            return -1;
        }
        *(uint64_t *)s->dst = v;
        return 0;
    }
    case OPT_DOUBLE: {
        double v;
        if (cli_parse_double(val, &v) != 0 || v < s->dmin || v > s->dmax) {
            snprintf(err, errlen, "%s: expected a number %g..%g, got '%s'", s->name, s->dmin, s->dmax, shown(val));
            return -1;
        }
        *(double *)s->dst = v;
        return 0;
    }
    case OPT_ENUM:
        return convert_enum(s, val, err, errlen);
    case OPT_CUSTOM: {
        char sub[CLI_ERR_MAX];
        if (s->parse(val, s->dst, sub, sizeof sub) != 0) {
            snprintf(err, errlen, "%s: %s", s->name, sub);
            return -1;
        }
        return 0;
    }
    default:
        snprintf(err, errlen, "%s: internal error (bad option type)", s->name);
        return -1;
    }
}

/* Reset seen, flags to off, and every option with a default to it. */
static int apply_defaults(struct opt_spec *specs, char *err, size_t errlen)
{
    for (struct opt_spec *s = specs; s->type != OPT_END; s++) {
        s->seen = 0;
        if (s->type == OPT_FLAG)
            *(int *)s->dst = 0;
        else if (s->def && convert(s, s->def, err, errlen) != 0) {
            snprintf(err, errlen, "%s: internal error (bad default '%s')", s->name, s->def);
            return -1;
        }
    }
    return 0;
}

/* "--x" and longer: an option where a value was expected. */
static int option_like(const char *arg)
{
    return arg[0] == '-' && arg[1] == '-';
}

/* The value of option s at argv[*i] (arg, eq: its "=" or NULL); advances *i
 * past a separate value. NULL with a message when there is none. */
static const char *take_value(const struct opt_spec *s, const char *eq, int argc, char **argv, int *i, char *err,
                              size_t errlen)
{
    if (eq)
        return eq + 1;
    if (*i + 1 < argc && !option_like(argv[*i + 1]))
        return argv[++*i];
    if (*i + 1 < argc) {
        const char *next = argv[*i + 1];
        size_t len = strlen(next);
        snprintf(err, errlen, "%s: missing value (got the option '%.*s%s'; %s=VALUE takes a value that starts with --)",
                 s->name, cli_shown_len(next, len), next, len > CLI_SHOWN_MAX ? "..." : "", s->name);
    } else {
        snprintf(err, errlen, "%s: missing value", s->name);
    }
    return NULL;
}

/* One argument at argv[*i] (and its value). 0, or -1 with a message. */
static int parse_arg(struct opt_spec *specs, int argc, char **argv, int *i, char *err, size_t errlen)
{
    const char *arg = argv[*i];
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
        size_t alen = strlen(arg);
        snprintf(err, errlen, "%.*s%s: unexpected argument", cli_shown_len(arg, alen), arg,
                 alen > CLI_SHOWN_MAX ? "..." : "");
        return -1;
    }
    const char *eq = strchr(arg, '=');
    size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    struct opt_spec *s = find(specs, arg, nlen);
    if (!s) {
        snprintf(err, errlen, "%.*s%s: unknown argument", cli_shown_len(arg, nlen), arg,
                 nlen > CLI_SHOWN_MAX ? "..." : "");
        return -1;
    }
    if (s->seen) {
        snprintf(err, errlen, "%s: given more than once", s->name);
        return -1;
    }
    s->seen = 1;
    if (s->type == OPT_FLAG) {
        if (eq) {
            snprintf(err, errlen, "%s: takes no value", s->name);
            return -1;
        }
        *(int *)s->dst = 1;
        return 0;
    }
    const char *val = take_value(s, eq, argc, argv, i, err, errlen);
    return val ? convert(s, val, err, errlen) : -1;
}

int cli_parse(int argc, char **argv, struct opt_spec *specs, char *err, size_t errlen)
{
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0)
            return CLI_HELP;
    if (apply_defaults(specs, err, errlen) != 0)
        return -1;
    for (int i = 0; i < argc; i++)
        if (parse_arg(specs, argc, argv, &i, err, errlen) != 0)
            return -1;
    for (struct opt_spec *s = specs; s->type != OPT_END; s++) {
        if (s->required && !s->seen) {
            snprintf(err, errlen, "%s: required argument missing", s->name);
            return -1;
        }
    }
    return 0;
}

int cli_given(const struct opt_spec *specs, const char *name)
{
    for (const struct opt_spec *s = specs; s->type != OPT_END; s++)
        if (strcmp(s->name, name) == 0)
            return s->seen;
    return 0;
}
