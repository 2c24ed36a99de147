/* tree_plan.h - what tree.c (options, plan, report) shares with
 * tree_create.c (the mkdir and create phases): the options, the plan and
 * the phase workers. Internal to the tree workload. */
#ifndef BOATLOAD_TREE_PLAN_H
#define BOATLOAD_TREE_PLAN_H

#include <stdint.h>

#include "common.h"
#include "filedata.h"
#include "json.h"
#include "phase.h"
#include "prng.h"
#include "rlayout.h"
#include "shape.h"

enum order { ORDER_SEQUENTIAL, ORDER_RANDOM };
enum fsync_mode { FSYNC_NONE, FSYNC_FILE, FSYNC_DIR };
enum layout { LAYOUT_FIXED, LAYOUT_RANDOM };
enum create_call { CREATE_AUTO, CREATE_OPEN, CREATE_MKNOD };

#define WALK_MAX_DEPTH SHAPE_MAX_LEVELS      /* >= RLAYOUT_MAX_DEPTH */

struct tree_opts {
    struct common_opts c;
    struct shape shape;
    int order;
    int fsync;
    int layout;
    uint64_t files;               /* random layout */
    uint64_t max_depth;
    uint64_t files_per_dir_max;
    struct filedata_size size;
    uint64_t size_align;
    int content;
    int create_call;
};

struct tree_plan {
    const struct tree_opts *o;
    int random_layout;
    int rootfd;
    uint64_t files, dirs;     /* totals of the layout */
    uint64_t chunk;           /* the most files one thread makes in one directory */
    uint64_t items;           /* directories that hold files (DIR itself when there are none) */
    struct perm leaf_perm;    /* order of the leaves (fixed) or directories (random) */
    uint64_t file_key;
    struct filedata data;
    struct rlayout lay;       /* random layout */
    _Atomic int use_mknod;    /* cleared when auto finds mknodat unsupported */
    _Atomic uint64_t next_item; /* mkdir phase: the next directory */
};

/* Directory phase "mkdir": make every directory, the threads taking the
 * directories that hold files one at a time (with their parents). */
void tree_mkdir_worker(struct phase_thread *t, void *arg);

/* The create phase: each thread its share (split.h) of the directories
 * that hold files. */
void tree_create_worker(struct phase_thread *t, void *arg);

/* p->chunk: the most files one thread makes in one directory. */
void tree_plan_chunk(struct tree_plan *p, unsigned threads);

/* "split" in params: each thread's share of the create phase. */
void tree_write_split(struct json *j, const struct tree_plan *p);

#endif
