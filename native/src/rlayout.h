/* rlayout.h - tree's random folder structure (--layout random), after the
 * degradation study's generator (a mktemp -d directory with $RANDOM/2
 * files, again and again), built in memory before the timed phase.
 *
 * Directories are made one after another until the files run out:
 *  - depth: uniform in 1..max_depth, but at most one deeper than the
 *    deepest directory so far; the parent is a uniform pick among the
 *    directories one level up (DIR itself for depth 1);
 *  - name: 10 characters of [A-Za-z0-9] like mktemp's XXXXXXXXXX, the
 *    image of the directory's number under a keyed permutation of the
 *    62^10 possible names, so all names are distinct by construction;
 *  - files: uniform in 1..files_per_dir_max (the study's $RANDOM/2 is
 *    0..16383), the last directory gets what is left. File j (from 0) of a
 *    directory is "f" + j zero-padded to max(6, digits(files_per_dir_max-1)),
 *    and its global index (for sizes and content) is the directory's
 *    first_file + j, directories numbered in the order they were made.
 * Everything is a function of the seed: the same seed gives the same tree.
 */
#ifndef BOATLOAD_RLAYOUT_H
#define BOATLOAD_RLAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "shape.h"

#define RLAYOUT_MAX_DEPTH SHAPE_MAX_LEVELS    /* 16 */
#define RLAYOUT_MAX_FILES 1000000000000ull   /* 1e12 */
#define RLAYOUT_MAX_FILES_PER_DIR 1000000000000ull
#define RLAYOUT_MAX_DIRS 20000000ull          /* expected directories (memory: ~56 bytes each) */
#define RLAYOUT_NAME_LEN 10
#define RLAYOUT_ROOT UINT64_MAX               /* parent of a depth-1 directory */

struct rlayout_dir {
    uint64_t parent;       /* index of the parent, RLAYOUT_ROOT for DIR */
    uint64_t name;         /* name code, < 62^10 */
    uint64_t first_file;   /* global index of its first file */
    uint64_t nfiles;       /* 1..files_per_dir_max */
    uint32_t depth;        /* 1..max_depth */
    uint32_t subdirs;      /* directories directly inside (saturating) */
};

struct rlayout {
    uint64_t files, files_per_dir_max;
    unsigned max_depth;
    unsigned depth;         /* deepest directory made */
    uint64_t ndirs;
    uint64_t leaf_dirs;     /* directories without subdirectories */
    unsigned file_width;    /* digits in file names */
    struct rlayout_dir *dirs;
};

/* About how many directories files / files_per_dir_max make (the mean). */
uint64_t rlayout_expected_dirs(uint64_t files, uint64_t files_per_dir_max);

/* Build the layout. Returns 0; -1 for arguments out of range (files
 * 1..RLAYOUT_MAX_FILES, max_depth 1..RLAYOUT_MAX_DEPTH, files_per_dir_max
 * 1..RLAYOUT_MAX_FILES_PER_DIR) or when out of memory (errno ENOMEM). */
int rlayout_build(struct rlayout *l, uint64_t files, unsigned max_depth, uint64_t files_per_dir_max,
                  uint64_t seed);
void rlayout_free(struct rlayout *l);

/* Name of directory d (RLAYOUT_NAME_LEN chars + NUL into buf). */
void rlayout_dir_name(const struct rlayout *l, uint64_t d, char *buf);

/* Name of file j of a directory (at least SHAPE_NAME_MAX bytes). */
static inline size_t rlayout_file_name(const struct rlayout *l, uint64_t j, char *buf)
{
    return shape_format_name('f', l->file_width, j, buf);
}

/* The directories from depth 1 down to d: chain[0..depth). Returns depth. */
unsigned rlayout_chain(const struct rlayout *l, uint64_t d, uint64_t *chain);

/* Relative path of directory d, optionally followed by a file name
 * ("Ab3kZ09xQe/7Hq0LmPzXa/f000012"). Returns the length (truncates). */
size_t rlayout_path(const struct rlayout *l, uint64_t d, const char *file, char *buf, size_t buflen);

#endif
