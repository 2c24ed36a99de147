/* common.h - options and target-directory checks shared by all workloads. */
#ifndef BOATLOAD_COMMON_H
#define BOATLOAD_COMMON_H

#include <stddef.h>
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

/* Common options a workload does not take (mask for common_specs_some). */
#define COMMON_NO_THREADS 1u
#define COMMON_NO_SEED 2u
#define COMMON_NO_ALLOW_EXISTING 4u

/* Set defaults and append the common option specs at dst[0..COMMON_NSPECS). */
void common_specs(struct opt_spec *dst, struct common_opts *c);

/* Same, leaving out the options in omit (COMMON_NO_*). Returns how many
 * specs were written (at most COMMON_NSPECS). */
unsigned common_specs_some(struct opt_spec *dst, struct common_opts *c, unsigned omit);

/* Open the target directory. Prints a one-line message and returns -1
 * (exit 2) if it is missing, not a directory, unreadable, or (without
 * allow_existing) not empty. Returns the directory fd otherwise. */
int common_open_target(const struct common_opts *c);

/* Open the target directory without the emptiness check (workloads that
 * reuse their files: seqio, randio). -1 after a one-line message (exit 2). */
int common_open_dir(const struct common_opts *c);

/* Make sure at least need file descriptors can be open (raises the soft
 * RLIMIT_NOFILE up to the hard limit). Returns 0, or -1 and sets *limit
 * to the largest possible value. */
int common_ensure_nofile(uint64_t need, uint64_t *limit);

/* Direct I/O constraints of one file, from common_probe_direct. */
struct dio_info {
    unsigned offset_align;  /* offsets and lengths must be multiples of this */
    unsigned mem_align;     /* buffer alignment (at least 4096 here) */
    int reported;           /* from statx STATX_DIOALIGN; else 4096 assumed */
    int created;            /* the probe created the (empty) file */
};

#define COMMON_DIO_MIN_ALIGN 512u    /* no device has smaller sectors */
#define COMMON_DIO_DEFAULT_ALIGN 4096u

/* Probe O_DIRECT support for the regular file name in dirfd: open it with
 * O_DIRECT (creating it if create and it is missing; a file created only
 * for a refused probe is removed again) and read its direct I/O alignment.
 * Returns 0 when supported (*info filled in); otherwise prints a one-line
 * message naming --direct and returns -1 (exit 2) for EINVAL (no O_DIRECT
 * on that file system), or returns the errno of any other failure so the
 * caller can report it. */
int common_probe_direct(int dirfd, const char *dir, const char *name, int create, struct dio_info *info);

/* An I/O buffer of at least len bytes, aligned to info->mem_align but at
 * least to a page, so it serves O_DIRECT as well as buffered I/O (info
 * zeroed without --direct). Release with free(); NULL when out of memory. */
void *common_dio_alloc(const struct dio_info *info, size_t len);

#endif
