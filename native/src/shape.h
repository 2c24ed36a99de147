/* shape.h - fixed fan-out tree shapes ("10x1000", "1000x1000x1000", "500").
 *
 * A shape A x B x ... x F has nlevels numbers. The first nlevels-1 are the
 * directory fan-out per level, the last is the number of files in each leaf
 * directory. A single number N means N files directly in the target dir.
 *
 * Names: directories "d" + index, files "f" + index, zero-padded to
 * max(3, digits(count-1)) for directories and max(6, digits(count-1)) for
 * files, where count is that level's fan-out. So 10x1000 gives d000..d009,
 * each holding f000000..f000999; a fan-out of 5000 dirs gives d0000..d4999.
 * Leaves are numbered in row-major (mixed radix) order: leaf k of 10x20x5
 * is d(k/20)/d(k%20).
 */
#ifndef BOATLOAD_SHAPE_H
#define BOATLOAD_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#define SHAPE_MAX_LEVELS 16
#define SHAPE_MAX_FANOUT 1000000000000ull /* 1e12 per level */
#define SHAPE_NAME_MAX 16                 /* "f" + 12 digits + NUL fits */

struct shape {
    unsigned nlevels;                  /* >= 1 */
    uint64_t fan[SHAPE_MAX_LEVELS];
    unsigned width[SHAPE_MAX_LEVELS];  /* digits in names per level */
    uint64_t files;                    /* total files */
    uint64_t dirs;                     /* total directories */
    uint64_t leaves;                   /* leaf directories (1 if no dir levels) */
    uint64_t files_per_leaf;
};

/* Parse s into *out. On error returns -1 and writes a message without the
 * option name (e.g. "expected AxBx...xF ...") into err. */
int shape_parse(const char *s, struct shape *out, char *err, size_t errlen);

/* The same from numbers (each 1..SHAPE_MAX_FANOUT, 1..SHAPE_MAX_LEVELS
 * levels): used by workloads that derive a shape (meta --files/--dirs).
 * Returns -1 if the numbers are out of range or the total overflows. */
int shape_from_fans(struct shape *out, const uint64_t *fan, unsigned nlevels);

/* Digits in the names of count (>= 1) entries: those of count - 1, at least
 * min_width (so names sort and line up). Shared with rlayout's file names. */
unsigned shape_name_width(uint64_t count, unsigned min_width);

/* Write prefix and idx zero-padded to width digits into buf (width + 2
 * bytes); returns the length. Inline and without snprintf: it names every
 * file in the hot loops (also rlayout's file names). */
static inline size_t shape_format_name(char prefix, unsigned width, uint64_t idx, char *buf)
{
    buf[0] = prefix;
    for (unsigned i = width; i >= 1; i--) {
        buf[i] = (char)('0' + idx % 10);
        idx /= 10;
    }
    buf[width + 1] = '\0';
    return width + 1;
}

/* Write the name of entry idx at level (directory or file level) into buf
 * (at least SHAPE_NAME_MAX bytes); returns its length. */
static inline size_t shape_name(const struct shape *sh, unsigned level, uint64_t idx, char *buf)
{
    return shape_format_name(level + 1 == sh->nlevels ? 'f' : 'd', sh->width[level], idx, buf);
}

/* Split leaf number leaf into per-level directory indices idx[0..nlevels-2]. */
void shape_leaf_indices(const struct shape *sh, uint64_t leaf, uint64_t *idx);

/* Relative path of the leaf (e.g. "d003/d012"), optionally followed by a
 * file name; "" for a single-level shape. Returns length (truncates). */
size_t shape_path(const struct shape *sh, const uint64_t *idx, unsigned depth,
                  const char *file, char *buf, size_t buflen);

/* Append name to the relative path buf[0..*len) ("a" -> "a/name", "" ->
 * "name"), advancing *len. -1 when it does not fit in buflen (buf then
 * holds a truncated, NUL-terminated path). Used by shape_path and
 * rlayout_path. */
int shape_path_append(char *buf, size_t buflen, size_t *len, const char *name);

#endif
