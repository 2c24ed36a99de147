/* filedata.h - the sizes and the bytes of the files a workload writes
 * (tree's --size, --size-align and --content).
 *
 *  - Sizes: "S" (every file S bytes), "MIN:MAX" (uniform) or
 *    "bonnie:MAX[:MIN]" (bonnie++ -n max[:min]). bonnie++ draws each size
 *    as min + rand() % (max - min + 1) (bon_file.cpp, COpenTest::create),
 *    a plain uniform distribution, so the bonnie form is only an alias of
 *    MIN:MAX with bonnie's order of the numbers. With an alignment B the
 *    sizes are B x (uniform integer in [ceil(MIN/B), floor(MAX/B)]): the
 *    degradation study's "dd bs=8 count=$((RANDOM/40))" is 0:6552 with B 8.
 *    A size is a pure function of (key, file index), so the same seed gives
 *    the same sizes whatever the order or the threads.
 *  - Content: "zero" (zero bytes, still written) or "random": one buffer
 *    of pseudo-random bytes from the seed, each file starting at its own
 *    offset (a function of the key and the file index) - no per-file
 *    random generation and no /dev/urandom, and byte-identical for a seed.
 */
#ifndef BOATLOAD_FILEDATA_H
#define BOATLOAD_FILEDATA_H

#include <stddef.h>
#include <stdint.h>

#include "prng.h"

#define FILEDATA_MAX_SIZE (1ull << 30)   /* 1 GiB per file */
#define FILEDATA_IO_CHUNK (1u << 20)     /* largest single write() */
#define FILEDATA_SLACK (64u << 10)       /* random content: starting offsets per file */

enum filedata_content { FILEDATA_ZERO, FILEDATA_RANDOM };

extern const char *const filedata_content_names[]; /* "zero", "random", NULL */

struct filedata_size {
    uint64_t min, max;   /* as given (after parsing); min <= max <= 1G */
    uint64_t align;      /* >= 1 (filedata_size_align) */
    uint64_t lo, n;      /* sizes are align * (lo + [0, n)) */
};

/* Parse "S", "MIN:MAX" or "bonnie:MAX[:MIN]" (byte counts with K, M, G
 * suffixes). Sets align 1. -1 with a message (no option name). */
int filedata_parse_size(const char *s, struct filedata_size *out, char *err, size_t errlen);

/* Apply alignment align (>= 1): there must be a multiple of align in
 * [min, max] (a fixed size must be one). -1 with a message otherwise. */
int filedata_size_align(struct filedata_size *sz, uint64_t align, char *err, size_t errlen);

/* Smallest and largest size that can occur. */
static inline uint64_t filedata_size_min(const struct filedata_size *sz)
{
    return sz->align * sz->lo;
}

static inline uint64_t filedata_size_max(const struct filedata_size *sz)
{
    return sz->align * (sz->lo + sz->n - 1);
}

/* Size of file i, a pure function of (key, i). */
static inline uint64_t filedata_file_size(const struct filedata_size *sz, uint64_t key, uint64_t i)
{
    uint64_t k = sz->n > 1 ? (uint64_t)(((unsigned __int128)mix64(key ^ mix64(i + 1)) * sz->n) >> 64) : 0;
    return sz->align * (sz->lo + k);
}

/* The source of the bytes written. */
struct filedata {
    struct filedata_size size;
    uint64_t size_key;
    int content;                 /* enum filedata_content */
    uint64_t content_key;
    unsigned char *buf;          /* NULL when every file is empty */
    size_t len;
};

/* Set up fd from a size spec (aligned), content kind and seed. Returns 0,
 * or -1 when out of memory. */
int filedata_init(struct filedata *fd, const struct filedata_size *size, int content, uint64_t seed);
void filedata_free(struct filedata *fd);

/* Where the bytes of file i start (len - slack bytes follow at least). */
static inline const unsigned char *filedata_bytes(const struct filedata *fd, uint64_t i)
{
    if (fd->content != FILEDATA_RANDOM)
        return fd->buf;
    return fd->buf + mix64(fd->content_key ^ mix64(i + 1)) % FILEDATA_SLACK;
}

/* Write the size bytes of file i to the open file fd (1 MiB at a time),
 * adding to *bytes as they are written. 0, or -errno. */
int filedata_write(const struct filedata *data, int fd, uint64_t i, uint64_t size, uint64_t *bytes);

#endif
