/* main.c - boatload-worker entry point: version, help, workload dispatch. */
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
    const char *name;
    int (*run)(int argc, char **argv);
};

static const struct workload workloads[] = {
    {"tree", tree_main},
    {"meta", meta_main},
    {"seqio", seqio_main},
    {"randio", randio_main},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: boatload-worker --version\n"
            "       boatload-worker tree --dir DIR --shape AxBx...xF [--threads N]\n"
            "                [--order sequential|random] [--seed N] [--fsync none|file|dir]\n"
            "                [--size S|MIN:MAX|bonnie:MAX[:MIN]] [--size-align B] [--content zero|random]\n"
            "                [--allow-existing] [--out FILE] [--progress] [--interval SECONDS]\n"
            "       boatload-worker tree --dir DIR --layout random --files N [--max-depth D]\n"
            "                [--files-per-dir-max M] [any tree option but --shape]\n"
            "       boatload-worker meta --dir DIR --files N --dirs K [--size MIN[:MAX]]\n"
            "                [--content zero|random] [--phases create:seq,open:rand,...]\n"
            "                [--fsync none|file|dir] [--threads N] [--seed N] [--allow-existing]\n"
            "                [--out FILE] [--progress] [--interval SECONDS]\n"
            "       boatload-worker seqio --dir DIR --file NAME --mode write|read --block BYTES\n"
            "                [--size BYTES] [--direct] [--runs R] [--fsync-end on|off]\n"
            "                [--content zero|random] [--seed N] [--out FILE] [--progress] [--interval S]\n"
            "       boatload-worker randio --dir DIR --files N --file-size BYTES --xfer BYTES\n"
            "                --read-pct P --duration SECONDS [--threads N] [--direct] [--prepare]\n"
            "                [--seed N] [--out FILE] [--progress] [--interval SECONDS]\n"
            "Sizes take K, M, G, T suffixes (powers of 1024).\n"
            "Writes one JSON document to stdout (or --out FILE). Exit: 0 ok, 1 a system\n"
            "call failed (partial results + error), 2 bad arguments, 130 interrupted.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_error("missing workload (expected: tree, meta, seqio, randio, or --version)");
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
    for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++)
        if (strcmp(argv[1], workloads[i].name) == 0)
            return workloads[i].run(argc - 2, argv + 2);
    size_t len = strlen(argv[1]);
    cli_error("%.*s%s: unknown workload (expected: tree, meta, seqio, randio)", cli_shown_len(argv[1], len), argv[1],
              len > CLI_SHOWN_MAX ? "..." : "");
    return EXIT_USAGE;
}
