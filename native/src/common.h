/* common.h - options and target-directory checks shared by all workloads. */
#ifndef BOATLOAD_COMMON_H
#define BOATLOAD_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "phase.h"

struct common_opts {
    const char *dir;        /* --dir (required) */
    uint64_t threads;       /* --threads 1..256, default 1 (1 where not an option) */
    uint64_t seed;          /* --seed, default 1 */
    int allow_existing;     /* --allow-existing */
    const char *out;        /* --out FILE, default stdout */
    int progress;           /* --progress */
    double interval_s;      /* --interval SECONDS, default 1 */
};

/* The common options' entries for a workload's option table (c: its struct
 * common_opts), with their defaults: --threads 1, --seed 1, --interval 1.
 * The ones whose meaning depends on the workload take its help text. */
#define COMMON_OPT_DIR(c, text) \
    {.name = "--dir", .type = OPT_STR, .dst = &(c).dir, .required = 1, .metavar = "DIR", .help = (text)}
#define COMMON_OPT_THREADS(c, text)                                                                          \
    {.name = "--threads", .type = OPT_U64, .dst = &(c).threads, .min = 1, .max = PHASE_MAX_THREADS, .def = "1", \
     .help = (text)}
#define COMMON_OPT_SEED(c, text) \
    {.name = "--seed", .type = OPT_U64, .dst = &(c).seed, .min = 0, .max = UINT64_MAX, .def = "1", .help = (text)}
#define COMMON_OPT_ALLOW_EXISTING(c, text) \
    {.name = "--allow-existing", .type = OPT_FLAG, .dst = &(c).allow_existing, .help = (text)}
#define COMMON_OPT_OUT(c)                                                                                 \
    {.name = "--out", .type = OPT_STR, .dst = &(c).out, .metavar = "FILE", .def_text = "default stdout",   \
     .help = "Write the JSON document to FILE atomically (a temporary file in the same directory, fsync, " \
             "rename) instead of stdout."}
#define COMMON_OPT_PROGRESS(c)                                    \
    {.name = "--progress", .type = OPT_FLAG, .dst = &(c).progress, \
     .help = "One line per interval on stderr: ops done, percent, rate, ETA."}
#define COMMON_OPT_INTERVAL(c)                                                                              \
    {.name = "--interval", .type = OPT_DOUBLE, .dst = &(c).interval_s, .dmin = 0.01, .dmax = 86400,         \
     .metavar = "SECONDS", .def = "1", .help = "Sampling interval of the rates in the JSON (and of --progress)."}

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
