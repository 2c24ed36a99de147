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
 * give the same orders. */
struct meta_order {
    int random;
    struct perm perm;
};

void meta_order_init(struct meta_order *o, uint64_t files, int random, uint64_t seed, unsigned phase_index);

static inline uint64_t meta_order_file(const struct meta_order *o, uint64_t pos)
{
    return o->random ? perm_apply(&o->perm, pos) : pos;
}

/* Its options and help (main.c lists it). */
extern const struct cli_command meta_command;

/* argv[0..argc) are the arguments after "meta". Returns the exit code. */
int meta_main(int argc, char **argv);

#endif
