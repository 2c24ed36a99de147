/* main.c - boatload-worker entry point: version, help, workload dispatch.
 *
 * The workloads are a table: name and one-line summary (their struct
 * cli_command, which also carries their --help) and their main. The
 * top-level --help lists them from it; "boatload-worker WORKLOAD --help"
 * is the workload's own, generated from its option table (cli_help).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "meta.h"
#include "randio.h"
#include "report.h"
#include "seqio.h"
#include "tree.h"

#ifndef BOATLOAD_VERSION
#define BOATLOAD_VERSION "unknown"
#endif

struct workload {
    const struct cli_command *cmd;
    int (*run)(int argc, char **argv);
};

static const struct workload workloads[] = {
    {&tree_command, tree_main},
    {&meta_command, meta_main},
    {&seqio_command, seqio_main},
    {&randio_command, randio_main},
};

#define NWORKLOADS (sizeof workloads / sizeof workloads[0])

static const char usage_head[] =
    "usage: boatload-worker WORKLOAD --dir DIR [OPTION]...\n"
    "       boatload-worker WORKLOAD --help\n"
    "       boatload-worker --version\n"
    "Run one file-system workload in DIR and write one JSON document to stdout (or --out FILE).\n";

static const char usage_tail[] =
    "Options are --name VALUE or --name=VALUE; only the second form takes a value that starts with --. "
    "Numbers are decimal. Sizes (BYTES) are decimal integers with an optional K, M, G or T suffix (either "
    "case, powers of 1024: 12M = 12582912).\n"
    "\n"
    "Exit status: 0 ok; 1 a system call failed (JSON with the work done so far and the error); 2 bad "
    "arguments (one line on stderr naming the argument, no JSON); 130 interrupted by SIGINT or SIGTERM "
    "(partial JSON).\n";

static void usage(FILE *f)
{
    cli_print_wrapped(f, usage_head, 0, 79);
    fprintf(f, "\nWorkloads (boatload-worker WORKLOAD --help for each one's options):\n");
    for (size_t i = 0; i < NWORKLOADS; i++)
        fprintf(f, "  %-8s%s\n", workloads[i].cmd->name, workloads[i].cmd->summary);
    fputc('\n', f);
    cli_print_wrapped(f, usage_tail, 0, 79);
}

/* "tree, meta, seqio, randio" */
static void workload_names(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NWORKLOADS && n < len; i++) {
        int w = snprintf(buf + n, len - n, "%s%s", i ? ", " : "", workloads[i].cmd->name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

int main(int argc, char **argv)
{
    char names[128];
    workload_names(names, sizeof names);
    if (argc < 2) {
        cli_error("missing workload (expected: %s, or --version)", names);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("boatload-worker %s\n", BOATLOAD_VERSION);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < NWORKLOADS; i++)
        if (strcmp(argv[1], workloads[i].cmd->name) == 0)
            return workloads[i].run(argc - 2, argv + 2);
    size_t len = strlen(argv[1]);
    cli_error("%.*s%s: unknown workload (expected: %s)", cli_shown_len(argv[1], len), argv[1],
              len > CLI_SHOWN_MAX ? "..." : "", names);
    return EXIT_USAGE;
}
