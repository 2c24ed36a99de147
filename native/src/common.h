/* common.h - options and target-directory checks shared by all workloads. */
#ifndef BOATLOAD_COMMON_H
#define BOATLOAD_COMMON_H

#include <stdint.h>

#include "cli.h"

struct common_opts {
    const char *dir;        /* --dir (required) */
    uint64_t threads;       /* --threads 1..256, default 1 */
    uint64_t seed;          /* --seed, default 1 */
    int allow_existing;     /* --allow-existing */
    const char *out;        /* --out FILE, default stdout */
    int progress;           /* --progress */
    double interval_s;      /* --interval SECONDS, default 1 */
};

#define COMMON_NSPECS 7

/* Set defaults and append the common option specs at dst[0..COMMON_NSPECS). */
void common_specs(struct opt_spec *dst, struct common_opts *c);

/* Open the target directory. Prints a one-line message and returns -1
 * (exit 2) if it is missing, not a directory, unreadable, or (without
 * allow_existing) not empty. Returns the directory fd otherwise. */
int common_open_target(const struct common_opts *c);

#endif
