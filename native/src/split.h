/* split.h - each thread's share of a phase's work (tree, meta).
 *
 * The work is ndirs directories, taken in a fixed order of positions
 * 0..ndirs-1 (a workload without directories passes 1: DIR itself). With
 * at least as many directories as threads, thread t gets the whole
 * directories at positions [t*ndirs/threads, (t+1)*ndirs/threads): no two
 * threads ever work in the same directory. With fewer directories than
 * threads, directory d gets the threads t with t*ndirs/threads == d (at
 * least one each), and each of them a contiguous chunk of its files
 * (split_chunk). The shares are fixed before the phase starts, so a random
 * order can be a permutation within each thread's share.
 */
#ifndef BOATLOAD_SPLIT_H
#define BOATLOAD_SPLIT_H

#include <stdint.h>

struct split_share {
    uint64_t dir_begin, dir_end; /* directory positions [begin, end) */
    uint64_t part, parts;        /* chunk part of parts of directory dir_begin; 0 of 1: all of it */
};

/* 1 when the shares are whole directories, 0 when chunks of files. */
static inline int split_by_dirs(uint64_t ndirs, unsigned threads)
{
    return ndirs >= threads;
}

static inline void split_share(uint64_t ndirs, unsigned threads, unsigned t, struct split_share *s)
{
    if (split_by_dirs(ndirs, threads)) {
        s->dir_begin = (uint64_t)((unsigned __int128)ndirs * t / threads);
        s->dir_end = (uint64_t)((unsigned __int128)ndirs * (t + 1) / threads);
        s->part = 0;
        s->parts = 1;
        return;
    }
    /* ndirs < threads <= 256: the products below fit in 64 bits */
    uint64_t d = (uint64_t)t * ndirs / threads;
    uint64_t first = (d * threads + ndirs - 1) / ndirs;        /* ceil(d*threads/ndirs) */
    uint64_t next = ((d + 1) * threads + ndirs - 1) / ndirs;
    s->dir_begin = d;
    s->dir_end = d + 1;
    s->part = t - first;
    s->parts = next - first;
}

/* The files [*begin, *end) of chunk part of parts of a directory of n files. */
static inline void split_chunk(uint64_t n, uint64_t part, uint64_t parts, uint64_t *begin, uint64_t *end)
{
    *begin = (uint64_t)((unsigned __int128)n * part / parts);
    *end = (uint64_t)((unsigned __int128)n * (part + 1) / parts);
}

struct json;

/* The files of thread t's share s. */
typedef uint64_t (*split_files_fn)(const void *arg, unsigned t, const struct split_share *s);

/* The "split" object of params: "by" ("dirs" or "files") and, per thread,
 * its share's first directory position, directory count and files. */
void split_write_json(struct json *j, uint64_t ndirs, unsigned threads, split_files_fn files_of, const void *arg);

#endif
