/* meta_plan.h - what meta.c (options, plan, run, report) shares with
 * meta_phases.c (the directory phases and the file phases' worker).
 * Internal to the meta workload. */
#ifndef BOATLOAD_META_PLAN_H
#define BOATLOAD_META_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "json.h"
#include "meta.h"
#include "phase.h"

#define META_IO_CHUNK (1u << 20)   /* largest single read()/write() */
#define META_CONTENT_SLACK 4096u   /* files start at varying offsets of the content buffer */

enum fsync_mode { FSYNC_NONE, FSYNC_FILE, FSYNC_DIR };
enum sync_mode { SYNC_NONE, SYNC_END };
enum content { CONTENT_ZERO, CONTENT_RANDOM };

struct meta_opts {
    struct common_opts c;
    uint64_t files, dirs;
    struct meta_size size;
    int content;
    struct meta_phases phases;
    int fsync;
    int sync;                    /* enum sync_mode */
    const char *pair_dir;        /* --pair-dir, or NULL */
};

struct meta_plan {
    const struct meta_opts *o;
    struct meta_layout lay;
    int rootfd;
    int *dirfds;                 /* ndirfds; with --dirs 0 the single entry is rootfd */
    uint64_t ndirfds;
    int pairfd;                  /* --pair-dir, or -1 */
    int *pair_dirfds;            /* ndirfds, the pair's directories; with --dirs 0 pairfd */
    unsigned char *content;      /* source of the bytes written by create */
    uint64_t size_key;
    uint64_t chunk;              /* the most files of one thread's share */
    /* the phase being run */
    int op;
    int random;
    unsigned phase_index;
    _Atomic uint64_t next_dir;   /* directory phases: the next directory */
    _Atomic unsigned threads_done; /* file phases: threads through their share (--sync end) */
    _Atomic uint64_t pair_own_ns, pair_pair_ns; /* the phase being run, --pair-dir: summed op times */
};

/* Whether a phase's ops are also done on --pair-dir (open, stat and read:
 * the ones that leave both trees as they were). */
int meta_op_pairs(int op);

/* Directory phase "mkdir" (before a create phase): make and open the
 * directories, the threads taking them one at a time. */
void meta_mkdir_worker(struct phase_thread *t, void *arg);

/* Directory phase "rmdir" (after a delete phase): close and remove them. */
void meta_rmdir_worker(struct phase_thread *t, void *arg);

/* Before a phase other than create: open the directories not open yet
 * (and the pair's, with --pair-dir). 0, or an errno with the directory's
 * name in where. */
int meta_open_dirs(struct meta_plan *p, char *where, size_t wlen);

/* Close the directory fds still open. */
void meta_close_dirs(struct meta_plan *p);

/* A file phase (p->op, p->random): each thread its share (meta_share). */
void meta_file_worker(struct phase_thread *t, void *arg);

/* "split" in params: how the file phases' work is shared. */
void meta_write_split(struct json *j, const struct meta_plan *p);

#endif
