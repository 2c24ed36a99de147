/* tree.c - "tree" workload: make a tree of empty files with a fixed fan-out.
 *
 * Work is split into items (a leaf directory, or a chunk of one when there
 * are fewer leaves than threads need to stay busy) handed out through an
 * atomic counter. Each thread walks from the target directory fd down to the
 * leaf with mkdirat (EEXIST is fine: another thread or chunk made it) and
 * openat(O_DIRECTORY|O_NOFOLLOW), keeping the fds of its current path open
 * so consecutive leaves share the prefix. Files are created with
 * openat(O_CREAT|O_EXCL|O_NOFOLLOW) + close relative to the leaf fd. No
 * absolute path is ever built and no symlink is ever followed.
 */
#include "tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "phase.h"
#include "prng.h"
#include "report.h"
#include "shape.h"
#include "signals.h"
#include "timing.h"

enum order { ORDER_SEQUENTIAL, ORDER_RANDOM };
enum fsync_mode { FSYNC_NONE, FSYNC_FILE, FSYNC_DIR };

static const char *const order_names[] = {"sequential", "random", NULL};
static const char *const fsync_names[] = {"none", "file", "dir", NULL};

struct tree_opts {
    struct common_opts c;
    struct shape shape;
    int order;
    int fsync;
};

struct tree_plan {
    const struct tree_opts *o;
    int rootfd;
    uint64_t chunk;           /* files per work item */
    uint64_t chunks_per_leaf;
    uint64_t items;
    struct perm leaf_perm;
    uint64_t file_key;
    _Atomic uint64_t next_item;
};

static int parse_shape(const char *val, void *dst, char *err, size_t errlen)
{
    return shape_parse(val, dst, err, errlen);
}

/* Split leaves into work items so that every thread has work. */
static void plan_items(struct tree_plan *p, unsigned threads)
{
    const struct shape *sh = &p->o->shape;
    uint64_t f = sh->files_per_leaf;
    uint64_t want = (uint64_t)threads * 8;
    if (threads == 1 || sh->leaves >= want) {
        p->chunk = f;
    } else {
        uint64_t per_leaf = (want + sh->leaves - 1) / sh->leaves;
        uint64_t chunk = (f + per_leaf - 1) / per_leaf;
        if (chunk < 64)
            chunk = 64;
        p->chunk = chunk < f ? chunk : f;
    }
    p->chunks_per_leaf = (f + p->chunk - 1) / p->chunk;
    p->items = sh->leaves * p->chunks_per_leaf;
}

struct walk {
    unsigned depth;           /* directory levels */
    unsigned open_depth;      /* fds[0..open_depth) are valid */
    int fds[SHAPE_MAX_LEVELS];
    uint64_t cur[SHAPE_MAX_LEVELS];
};

static void walk_close(struct walk *w, unsigned keep)
{
    while (w->open_depth > keep)
        close(w->fds[--w->open_depth]);
}

static void fail_at(struct phase_thread *t, const struct shape *sh, const uint64_t *idx,
                    unsigned depth, const char *file, int err)
{
    char where[PHASE_WHERE_MAX];
    shape_path(sh, idx, depth, file, where, sizeof where);
    phase_fail(t, err, where);
}

/* Make and open the directories down to leaf idx. Returns the leaf fd or -1
 * after phase_fail. */
static int walk_to(struct phase_thread *t, struct walk *w, const struct tree_plan *p,
                   const uint64_t *idx)
{
    const struct shape *sh = &p->o->shape;
    unsigned keep = 0;
    while (keep < w->open_depth && w->cur[keep] == idx[keep])
        keep++;
    walk_close(w, keep);
    char name[SHAPE_NAME_MAX];
    for (unsigned l = keep; l < w->depth; l++) {
        int parent = l ? w->fds[l - 1] : p->rootfd;
        shape_name(sh, l, idx[l], name);
        if (mkdirat(parent, name, 0755) == 0)
            t->dirs++;
        else if (errno != EEXIST) {
            fail_at(t, sh, idx, l + 1, NULL, errno);
            return -1;
        }
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            fail_at(t, sh, idx, l + 1, NULL, errno);
            return -1;
        }
        w->fds[l] = fd;
        w->cur[l] = idx[l];
        w->open_depth = l + 1;
    }
    return w->depth ? w->fds[w->depth - 1] : p->rootfd;
}

static void tree_worker(struct phase_thread *t, void *arg)
{
    struct tree_plan *p = arg;
    const struct tree_opts *o = p->o;
    const struct shape *sh = &o->shape;
    const int random_order = o->order == ORDER_RANDOM;
    const int allow_existing = o->c.allow_existing;
    const int fsync_file = o->fsync != FSYNC_NONE;
    const int fsync_dir = o->fsync == FSYNC_DIR;
    const unsigned flevel = sh->nlevels - 1;
    const int flags = O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC;
    struct walk w = {.depth = sh->nlevels - 1};
    uint64_t idx[SHAPE_MAX_LEVELS] = {0};
    char name[SHAPE_NAME_MAX];
    uint64_t ops = 0;

    while (!phase_stopping(t)) {
        uint64_t item = atomic_fetch_add_explicit(&p->next_item, 1, memory_order_relaxed);
        if (item >= p->items)
            break;
        uint64_t lpos = item / p->chunks_per_leaf;
        uint64_t chunk = item % p->chunks_per_leaf;
        uint64_t leaf = random_order ? perm_apply(&p->leaf_perm, lpos) : lpos;
        shape_leaf_indices(sh, leaf, idx);
        int dfd = walk_to(t, &w, p, idx);
        if (dfd < 0)
            break;

        struct perm fperm;
        if (random_order)
            perm_init(&fperm, sh->files_per_leaf, mix64(p->file_key ^ mix64(leaf + 1)));
        uint64_t begin = chunk * p->chunk;
        uint64_t end = begin + p->chunk;
        if (end > sh->files_per_leaf)
            end = sh->files_per_leaf;

        uint64_t t0 = now_ns();
        for (uint64_t j = begin; j < end; j++) {
            if (__builtin_expect(phase_stopping(t), 0))
                goto out;
            uint64_t fi = random_order ? perm_apply(&fperm, j) : j;
            shape_name(sh, flevel, fi, name);
            int fd = openat(dfd, name, flags, 0644);
            if (__builtin_expect(fd < 0, 0)) {
                int e = errno;
                if (e == EEXIST && allow_existing) {
                    t->existing++;
                    t0 = now_ns();
                    continue;
                }
                fail_at(t, sh, idx, w.depth, name, e);
                goto out;
            }
            ops++; /* the file exists from here on, whatever follows */
            if (fsync_file && fsync(fd) != 0) {
                int e = errno;
                close(fd);
                fail_at(t, sh, idx, w.depth, name, e);
                goto out;
            }
            if (__builtin_expect(close(fd) != 0, 0)) {
                fail_at(t, sh, idx, w.depth, name, errno);
                goto out;
            }
            uint64_t t1 = now_ns();
            hist_record(&t->hist, t1 - t0);
            t0 = t1;
            phase_publish(t, ops);
        }
        if (fsync_dir && fsync(dfd) != 0) {
            fail_at(t, sh, idx, w.depth, NULL, errno);
            goto out;
        }
    }
out:
    t->ops = ops;
    walk_close(&w, 0);
}

static void write_params(struct json *j, const void *arg)
{
    const struct tree_plan *p = arg;
    const struct tree_opts *o = p->o;
    json_obj_begin(j);
    json_key(j, "dir");
    json_str(j, o->c.dir);
    json_key(j, "shape");
    json_arr_begin(j);
    for (unsigned l = 0; l < o->shape.nlevels; l++)
        json_u64(j, o->shape.fan[l]);
    json_arr_end(j);
    json_key(j, "files");
    json_u64(j, o->shape.files);
    json_key(j, "dirs");
    json_u64(j, o->shape.dirs);
    json_key(j, "leaf_dirs");
    json_u64(j, o->shape.nlevels > 1 ? o->shape.leaves : 0);
    json_key(j, "threads");
    json_u64(j, o->c.threads);
    json_key(j, "order");
    json_str(j, order_names[o->order]);
    json_key(j, "seed");
    json_u64(j, o->c.seed);
    json_key(j, "fsync");
    json_str(j, fsync_names[o->fsync]);
    json_key(j, "allow_existing");
    json_bool(j, o->c.allow_existing);
    json_key(j, "interval_s");
    json_double(j, o->c.interval_s);
    json_key(j, "files_per_work_item");
    json_u64(j, p->chunk);
    json_obj_end(j);
}

int tree_main(int argc, char **argv)
{
    static struct tree_opts o; /* static: struct shape is a few hundred bytes */
    memset(&o, 0, sizeof o);
    struct opt_spec specs[COMMON_NSPECS + 4];
    memset(specs, 0, sizeof specs);
    common_specs(specs, &o.c);
    specs[COMMON_NSPECS + 0] = (struct opt_spec){
        .name = "--shape", .type = OPT_CUSTOM, .dst = &o.shape, .required = 1, .parse = parse_shape};
    specs[COMMON_NSPECS + 1] = (struct opt_spec){
        .name = "--order", .type = OPT_ENUM, .dst = &o.order, .choices = order_names};
    specs[COMMON_NSPECS + 2] = (struct opt_spec){
        .name = "--fsync", .type = OPT_ENUM, .dst = &o.fsync, .choices = fsync_names};
    char err[CLI_ERR_MAX];
    if (cli_parse(argc, argv, specs, err, sizeof err) != 0) {
        cli_error("%s", err);
        return EXIT_USAGE;
    }
    if (signals_install() != 0) {
        cli_error("cannot install signal handlers: %s", strerror(errno));
        return EXIT_FAILED;
    }
    int rootfd = common_open_target(&o.c);
    if (rootfd < 0)
        return EXIT_USAGE;

    static struct tree_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.o = &o;
    plan.rootfd = rootfd;
    plan_items(&plan, (unsigned)o.c.threads);
    uint64_t st = o.c.seed;
    perm_init(&plan.leaf_perm, o.shape.leaves, splitmix64(&st));
    plan.file_key = splitmix64(&st);
    atomic_init(&plan.next_item, 0);

    struct phase_opts po = {
        .name = "create",
        .unit = "files",
        .threads = (unsigned)o.c.threads,
        .interval_s = o.c.interval_s,
        .progress = o.c.progress,
        .expected_ops = o.shape.files,
    };
    struct phase_result res;
    if (phase_run(&res, &po, tree_worker, &plan) != 0 && !res.lat) {
        cli_error("out of memory");
        close(rootfd);
        return EXIT_FAILED;
    }
    close(rootfd);

    struct report rep = {
        .workload = "tree",
        .write_params = write_params,
        .params_arg = &plan,
        .phases = &res,
        .nphases = 1,
    };
    int code = report_finish(&rep, o.c.out);
    phase_result_free(&res);
    return code;
}
