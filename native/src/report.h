/* report.h - the one JSON document a worker run produces, and where it goes.
 *
 * Shape (see native/README.md):
 *   {"worker":{...},"workload":..,"params":{...},"status":..,"error":..,"phases":[...]}
 * tree and meta add "dir_phases":[...]: the mkdir and rmdir of the tree's
 * directories, timed apart from the file phases.
 */
#ifndef BOATLOAD_REPORT_H
#define BOATLOAD_REPORT_H

#include <stddef.h>

#include "json.h"
#include "phase.h"

#define EXIT_OK 0
#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130

struct report {
    const char *workload;
    void (*write_params)(struct json *j, const void *arg); /* writes an object */
    const void *params_arg;
    const struct phase_result *phases;
    size_t nphases;
    int with_dir_phases;   /* write "dir_phases" (tree, meta), even when empty */
    const struct phase_result *dir_phases; /* run: the index of the file phase it belongs to */
    size_t ndir_phases;
    int out_of_memory;   /* a phase could not run at all: no document */
};

/* "ok", "error" or "interrupted", and the matching exit code. */
const char *report_status(const struct report *r, int *exit_code);

/* Symbolic errno name ("ENOSPC"), or "E<n>" when unknown. */
const char *report_errno_name(int err, char *buf, size_t len);

/* Build the JSON document into j (j must be initialised). */
void report_build(struct json *j, const struct report *r);

/* Write the document to stdout (out_path NULL) or atomically to out_path
 * (temp file in the same directory, fsync, rename). Returns 0 or -1; on
 * failure a one-line message has been printed and the document is written
 * to stdout instead so the measurement is not lost. */
int report_output(const struct json *j, const char *out_path);

/* Build, output, and return the exit code for the run. With out_of_memory
 * only a one-line message instead, and EXIT_FAILED. */
int report_finish(const struct report *r, const char *out_path);

#endif
