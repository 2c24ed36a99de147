/* help.c - the --help text of a workload, printed from its option table
 * (cli_help), and cli_parse_command, the workloads' way into cli_parse:
 * help on stdout, or one error line through cli_error (which lives in
 * cli.c, so that fuzz_args can replace it at link time for this caller
 * too).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_parse_command(const struct cli_command *cmd, int argc, char **argv, struct opt_spec *specs)
{
    char err[CLI_ERR_MAX];
    int rc = cli_parse(argc, argv, specs, err, sizeof err);
    if (rc == CLI_HELP) {
        cli_help(stdout, cmd, specs);
        return 0;
    }
    if (rc != 0) {
        cli_error("%s", err);
        return CLI_EXIT_USAGE;
    }
    return CLI_CONTINUE;
}

#define HELP_WIDTH 79
#define HELP_INDENT 6   /* of an option's help text */
#define HELP_COLUMN 30  /* where kind and default start, when the name fits */

/* The length of the word at q (before end); with pairs, "--name VALUE"
 * counts as one word (a synopsis keeps an option with its value). */
static size_t word_len(const char *q, const char *end, int pairs)
{
    size_t w = strcspn(q, " ");
    if (q + w > end)
        w = (size_t)(end - q);
    if (pairs && w > 2 && q[0] == '-' && q[1] == '-' && q + w + 1 < end && q[w] == ' ' && q[w + 1] != '-' &&
        q[w + 1] != '[' && q[w + 1] != ' ')
        w += 1 + word_len(q + w + 1, end, 0);
    return w;
}

/* Words of text[0..len) from column col of the current line (col <
 * indent: padded to indent), wrapped at width onto lines indented by
 * indent; ends the last line. pairs: see word_len. */
static void wrap_from(FILE *f, const char *text, size_t len, unsigned indent, unsigned width, unsigned col,
                      int pairs)
{
    const char *q = text + strspn(text, " "), *end = text + len;
    if (q >= end) {
        fputc('\n', f);
        return;
    }
    int fresh = 1; /* no word on this line yet */
    while (q < end) {
        size_t w = word_len(q, end, pairs);
        if (!fresh && col + 1 + w > width) {
            fputc('\n', f);
            col = 0;
            fresh = 1;
        }
        if (fresh && col < indent) {
            fprintf(f, "%*s", (int)(indent - col), "");
            col = indent;
        } else if (!fresh) {
            fputc(' ', f);
            col++;
        }
        fwrite(q, 1, w, f);
        col += (unsigned)w;
        fresh = 0;
        q += w;
        while (q < end && *q == ' ')
            q++;
    }
    fputc('\n', f);
}

void cli_print_wrapped(FILE *f, const char *text, unsigned indent, unsigned width)
{
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        /* a line's leading spaces indent all its wrapped lines */
        unsigned lead = (unsigned)strspn(p, " ");
        wrap_from(f, p, len, indent + (lead < len ? lead : 0), width, 0, 0);
        p += len + (p[len] == '\n');
    }
}

/* The value as --help names it: metavar, else from the type. */
static const char *value_name(const struct opt_spec *s, char *buf, size_t len)
{
    if (s->metavar)
        return s->metavar;
    switch (s->type) {
    case OPT_FLAG: return NULL;
    case OPT_U64: return "N";
    case OPT_SIZE: return "BYTES";
    case OPT_DOUBLE: return "X";
    case OPT_ENUM:
        cli_join_choices(s->choices, buf, len);
        return buf;
    default: return "VALUE";
    }
}

/* An integer bound as the help shows it: "2^64-1", "1e12" (a power of ten
 * from 1e6 up), else decimal. */
static void format_bound(uint64_t v, char *buf, size_t len)
{
    int exp = 0;
    uint64_t p = v;
    while (p >= 10 && p % 10 == 0) {
        p /= 10;
        exp++;
    }
    if (v == UINT64_MAX)
        snprintf(buf, len, "2^64-1");
    else if (p == 1 && exp >= 6)
        snprintf(buf, len, "1e%d", exp);
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* Kind and range, then the default: "integer 1..256, default 1". */
static void status_text(const struct opt_spec *s, char *buf, size_t len)
{
    char lo[32], hi[32];
    int n = 0;
    switch (s->type) {
    case OPT_FLAG:
        n = snprintf(buf, len, "flag");
        break;
    case OPT_U64:
        format_bound(s->min, lo, sizeof lo);
        format_bound(s->max, hi, sizeof hi);
        n = snprintf(buf, len, "integer %s..%s", lo, hi);
        break;
    case OPT_SIZE:
        cli_format_size(s->min, lo, sizeof lo);
        cli_format_size(s->max, hi, sizeof hi);
        n = snprintf(buf, len, "size %s..%s", lo, hi);
        break;
    case OPT_DOUBLE:
        n = snprintf(buf, len, "number %g..%g", s->dmin, s->dmax);
        break;
    default:
        buf[0] = '\0';
        break;
    }
    if (n < 0 || (size_t)n >= len)
        return;
    const char *sep = n ? ", " : "";
    if (s->required)
        snprintf(buf + n, len - (size_t)n, "%srequired", sep);
    else if (s->def)
        snprintf(buf + n, len - (size_t)n, "%sdefault %s", sep, s->def);
    else if (s->def_text)
        snprintf(buf + n, len - (size_t)n, "%s%s", sep, s->def_text);
}

static void help_option(FILE *f, const struct opt_spec *s)
{
    char vbuf[256], left[512], status[512];
    const char *v = value_name(s, vbuf, sizeof vbuf);
    int w = snprintf(left, sizeof left, "  %s%s%s", s->name, v ? " " : "", v ? v : "");
    status_text(s, status, sizeof status);
    int slen = (int)strlen(status);
    if (!status[0]) {
        fprintf(f, "%s\n", left);
    } else if (w + 2 <= HELP_COLUMN && HELP_COLUMN + slen <= HELP_WIDTH) {
        fprintf(f, "%-*s%s\n", HELP_COLUMN, left, status);
    } else if (w + 2 > HELP_COLUMN && w + 2 + slen <= HELP_WIDTH) {
        fprintf(f, "%s  %s\n", left, status);
    } else { /* too long for the line: first below, as the help text */
        fprintf(f, "%s\n", left);
        cli_print_wrapped(f, status, HELP_INDENT, HELP_WIDTH);
    }
    if (s->help)
        cli_print_wrapped(f, s->help, HELP_INDENT, HELP_WIDTH);
}

void cli_help(FILE *f, const struct cli_command *cmd, const struct opt_spec *specs)
{
    /* one form a line, wrapped under its arguments */
    const char *p = cmd->synopsis;
    for (int first = 1; *p; first = 0) {
        size_t n = strcspn(p, "\n");
        int col = fprintf(f, "%s boatload-worker %s ", first ? "usage:" : "      ", cmd->name);
        wrap_from(f, p, n, (unsigned)col, HELP_WIDTH, (unsigned)col, 1);
        p += n + (p[n] == '\n');
    }
    cli_print_wrapped(f, cmd->summary, 0, HELP_WIDTH);
    fprintf(f, "\nOptions:\n");
    for (const struct opt_spec *s = specs; s->type != OPT_END; s++)
        help_option(f, s);
    if (cmd->notes) {
        fputc('\n', f);
        cli_print_wrapped(f, cmd->notes, 0, HELP_WIDTH);
    }
}
