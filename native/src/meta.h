/* meta.h - the "meta" workload: phases over a tree of small files (bonnie++
 * -n, the XFS log study): create, open, stat, read, delete, each in
 * sequential or seeded random order.
 *
 * The pure parts (layout, per-file sizes, the phase list, visit order) are
 * exposed for the C tests.
 */
#ifndef BOATLOAD_META_H
#define BOATLOAD_META_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "prng.h"
#include "shape.h"
#include "split.h"

#define META_MAX_PHASES 16
#define META_MAX_FILES 1000000000000ull  /* 1e12 */
#define META_MAX_FILE_SIZE (1ull << 30)  /* 1 GiB per file */

enum meta_op { META_CREATE, META_OPEN, META_STAT, META_READ, META_DELETE, META_NOPS };

extern const char *const meta_op_names[];  /* "create", "open", ... */

struct meta_phase {
    int op;          /* enum meta_op */
    int random;      /* 0: sequential, 1: random */
};

struct meta_phases {
    unsigned n;
    struct meta_phase p[META_MAX_PHASES];
};

/* Parse "create:seq,open:rand,..." (order "seq"/"sequential" or
 * "rand"/"random", default seq). -1 with a message (no option name). */
int meta_parse_phases(const char *s, struct meta_phases *out, char *err, size_t errlen);

struct meta_size {
    uint64_t min, max;
};

/* Parse "MIN[:MAX]" (sizes with K/M/G suffixes, MIN <= MAX <= 1G). */
int meta_parse_size(const char *s, struct meta_size *out, char *err, size_t errlen);

/* Where the files live. With dirs == 0 all files are directly in DIR
 * (names as tree's single-number shape). Otherwise file i (0..files-1) is
 * in directory d<j>, the directories holding contiguous, balanced blocks:
 * the first files % dirs directories get one file more. Names follow tree:
 * "--files 10000 --dirs 10" gives exactly tree's "10x1000" names. */
struct meta_layout {
    uint64_t files, dirs;
    uint64_t per, rem;      /* dirs > 0: per + 1 files in dirs [0, rem), per after */
    struct shape names;     /* widths: 2 levels {dirs, max files per dir} or 1 level */
};

int meta_layout_init(struct meta_layout *l, uint64_t files, uint64_t dirs);

/* Directory index (0 when dirs == 0) and index inside it of file i. */
static inline void meta_locate(const struct meta_layout *l, uint64_t i, uint64_t *dir, uint64_t *local)
{
    if (l->dirs == 0) {
        *dir = 0;
        *local = i;
        return;
    }
    uint64_t big = l->rem * (l->per + 1);
    if (i < big) {
        *dir = i / (l->per + 1);
        *local = i % (l->per + 1);
    } else {
        *dir = l->rem + (i - big) / l->per;
        *local = (i - big) % l->per;
    }
}

/* The first file of directory d (0..dirs; dirs gives files). With dirs == 0
 * DIR is the one directory: 0 and 1 give 0 and files. */
static inline uint64_t meta_dir_first(const struct meta_layout *l, uint64_t d)
{
    if (l->dirs == 0)
        return d ? l->files : 0;
    return d * l->per + (d < l->rem ? d : l->rem);
}

/* Thread t's share of a phase (see split.h): the files [*begin, *end), a
 * contiguous block of file indices, whole directories when there are at
 * least as many directories (DIR itself with dirs == 0) as threads. */
/* The files [*begin, *end) of share s. */
static inline void meta_share_files(const struct meta_layout *l, const struct split_share *s, uint64_t *begin,
                                    uint64_t *end)
{
    uint64_t first = meta_dir_first(l, s->dir_begin), last = meta_dir_first(l, s->dir_end);
    uint64_t b, e;
    split_chunk(last - first, s->part, s->parts, &b, &e);
    *begin = first + b;
    *end = first + e;
}

static inline void meta_share(const struct meta_layout *l, unsigned threads, unsigned t, struct split_share *s,
                              uint64_t *begin, uint64_t *end)
{
    split_share(l->dirs ? l->dirs : 1, threads, t, s);
    meta_share_files(l, s, begin, end);
}

/* Size of file i: uniform in [min, max], a pure function of (key, i), so
 * that the same seed gives the same sizes whatever the order or threads. */
static inline uint64_t meta_file_size(const struct meta_size *sz, uint64_t key, uint64_t i)
{
    uint64_t span = sz->max - sz->min + 1; /* 0 when the range is all of 2^64: not possible */
    return sz->min + (uint64_t)(((unsigned __int128)mix64(key ^ mix64(i + 1)) * span) >> 64);
}

/* Visit order of one phase: position pos (0..files-1) to file index. The
 * random order is a keyed permutation (every file exactly once), keyed by
 * the seed and the phase's place in the list: the same seed and phase list
 * give the same orders. A thread's share of files [begin, end) is visited as
 * begin + meta_order_file(pos) for pos in 0..end-begin-1, its order from
 * meta_order_init_share (keyed by begin as well). */
struct meta_order {
    int random;
    struct perm perm;
};

void meta_order_init(struct meta_order *o, uint64_t files, int random, uint64_t seed, unsigned phase_index);
void meta_order_init_share(struct meta_order *o, uint64_t begin, uint64_t end, int random, uint64_t seed,
                           unsigned phase_index);

static inline uint64_t meta_order_file(const struct meta_order *o, uint64_t pos)
{
    return o->random ? perm_apply(&o->perm, pos) : pos;
}

/* Its options and help (main.c lists it). */
extern const struct cli_command meta_command;

/* argv[0..argc) are the arguments after "meta". Returns the exit code. */
int meta_main(int argc, char **argv);

#endif
