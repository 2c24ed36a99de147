/* tree_create.c - the tree workload's phases: mkdir (every directory,
 * untimed by the create phase) and create (each thread its share of the
 * directories that hold files). See tree.c for the workload as a whole. */
#include "tree_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "split.h"
#include "timing.h"

struct walk {
    unsigned open_depth;      /* fds[0..open_depth) are valid */
    int fds[WALK_MAX_DEPTH];
    uint64_t cur[WALK_MAX_DEPTH];
};

static void walk_close(struct walk *w, unsigned keep)
{
    while (w->open_depth > keep)
        close(w->fds[--w->open_depth]);
}

/* The path of the directory ids[0..depth) (as walked: per-level indices for
 * the fixed layout, directory numbers for the random one), with file. */
static void fail_at(struct phase_thread *t, const struct tree_plan *p, const uint64_t *ids, unsigned depth,
                    const char *file, int err)
{
    char where[PHASE_WHERE_MAX];
    if (!p->random_layout)
        shape_path(&p->o->shape, ids, depth, file, where, sizeof where);
    else if (depth)
        rlayout_path(&p->lay, ids[depth - 1], file, where, sizeof where);
    else
        snprintf(where, sizeof where, "%s", file ? file : "");
    phase_fail(t, err, where);
}

/* Open the directories ids[0..depth), making them first with make (the
 * mkdir phase, which counts those it made in t->ops). Returns the fd of the
 * last (the target fd for depth 0) or -1 after phase_fail. */
static int walk_to(struct phase_thread *t, struct walk *w, const struct tree_plan *p, const uint64_t *ids,
                   unsigned depth, int make)
{
    unsigned keep = 0;
    while (keep < w->open_depth && keep < depth && w->cur[keep] == ids[keep])
        keep++;
    walk_close(w, keep);
    char name[SHAPE_NAME_MAX];
    for (unsigned l = keep; l < depth; l++) {
        int parent = l ? w->fds[l - 1] : p->rootfd;
        if (p->random_layout)
            rlayout_dir_name(&p->lay, ids[l], name);
        else
            shape_name(&p->o->shape, l, ids[l], name);
        if (make) {
            if (mkdirat(parent, name, 0755) == 0) {
                t->ops++;
                phase_publish_counts(t);
            } else if (errno != EEXIST) {
                fail_at(t, p, ids, l + 1, NULL, errno);
                return -1;
            }
        }
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            fail_at(t, p, ids, l + 1, NULL, errno);
            return -1;
        }
        w->fds[l] = fd;
        w->cur[l] = ids[l];
        w->open_depth = l + 1;
    }
    return depth ? w->fds[depth - 1] : p->rootfd;
}

/* mknodat errors that mean "not on this file system" rather than a
 * failure of the request: auto falls back to open. */
static int mknod_unsupported(int e)
{
    return e == EPERM || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL;
}

/* Create file name (global index gi) in dfd and write its bytes. 0: done;
 * 1: it already exists (--allow-existing); -errno: failed. t->ops counts
 * the file as soon as it exists. */
static inline int create_file(struct phase_thread *t, struct tree_plan *p, int dfd, const char *name,
                              uint64_t gi)
{
    const struct tree_opts *o = p->o;
    if (atomic_load_explicit(&p->use_mknod, memory_order_relaxed)) {
        if (__builtin_expect(mknodat(dfd, name, S_IFREG | 0644, 0) == 0, 1)) {
            t->ops++;
            return 0;
        }
        int e = errno;
        if (e == EEXIST && o->c.allow_existing)
            return 1;
        if (!(o->create_call == CREATE_AUTO && mknod_unsupported(e)))
            return -e;
        atomic_store_explicit(&p->use_mknod, 0, memory_order_relaxed);
    }
    int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (__builtin_expect(fd < 0, 0)) {
        int e = errno;
        if (e == EEXIST && o->c.allow_existing)
            return 1;
        return -e;
    }
    t->ops++; /* the file exists from here on, whatever follows */
    if (p->data.buf) {
        uint64_t size = filedata_file_size(&p->data.size, p->data.size_key, gi);
        int rc = filedata_write(&p->data, fd, gi, size, &t->bytes);
        if (rc != 0) {
            close(fd);
            return rc;
        }
    }
    if (o->fsync != FSYNC_NONE && fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (__builtin_expect(close(fd) != 0, 0))
        return -errno;
    return 0;
}

/* The directory at visit position pos: its chain of ids (returns the
 * depth), its number of files and the global index of its first file. */
static unsigned item_dir(const struct tree_plan *p, uint64_t pos, uint64_t *ids, uint64_t *dir, uint64_t *nfiles,
                         uint64_t *first)
{
    const int random_order = p->o->order == ORDER_RANDOM;
    *dir = random_order ? perm_apply(&p->leaf_perm, pos) : pos;
    if (p->random_layout) {
        *nfiles = p->lay.dirs[*dir].nfiles;
        *first = p->lay.dirs[*dir].first_file;
        return rlayout_chain(&p->lay, *dir, ids);
    }
    const struct shape *sh = &p->o->shape;
    shape_leaf_indices(sh, *dir, ids);
    *nfiles = sh->files_per_leaf;
    *first = *dir * *nfiles;
    return sh->nlevels - 1;
}

/* Directory phase "mkdir": make every directory, the threads taking the
 * directories that hold files one at a time (with their parents). */
void tree_mkdir_worker(struct phase_thread *t, void *arg)
{
    struct tree_plan *p = arg;
    struct walk w = {0};
    uint64_t ids[WALK_MAX_DEPTH] = {0};
    while (!phase_stopping(t)) {
        uint64_t pos = atomic_fetch_add_explicit(&p->next_item, 1, memory_order_relaxed);
        if (pos >= p->items)
            break;
        uint64_t dir, nfiles, first;
        unsigned depth = item_dir(p, pos, ids, &dir, &nfiles, &first);
        if (walk_to(t, &w, p, ids, depth, 1) < 0)
            break;
    }
    walk_close(&w, 0);
}

void tree_create_worker(struct phase_thread *t, void *arg)
{
    struct tree_plan *p = arg;
    const struct tree_opts *o = p->o;
    const struct shape *sh = &o->shape;
    const struct rlayout *lay = &p->lay;
    const int random_order = o->order == ORDER_RANDOM;
    const int fsync_dir = o->fsync == FSYNC_DIR;
    struct walk w = {0};
    uint64_t ids[WALK_MAX_DEPTH] = {0};
    char name[SHAPE_NAME_MAX];

    struct split_share share;
    split_share(p->items, (unsigned)o->c.threads, t->id, &share);
    for (uint64_t pos = share.dir_begin; pos < share.dir_end && !phase_stopping(t); pos++) {
        uint64_t dir, nfiles, first;
        unsigned depth = item_dir(p, pos, ids, &dir, &nfiles, &first);
        int dfd = walk_to(t, &w, p, ids, depth, 0);
        if (dfd < 0)
            break;

        struct perm fperm;
        if (random_order)
            perm_init(&fperm, nfiles, mix64(p->file_key ^ mix64(dir + 1)));
        uint64_t begin, end;
        split_chunk(nfiles, share.part, share.parts, &begin, &end);

        uint64_t t0 = now_ns();
        for (uint64_t j = begin; j < end; j++) {
            if (__builtin_expect(phase_stopping(t), 0))
                goto out;
            uint64_t fi = random_order ? perm_apply(&fperm, j) : j;
            if (p->random_layout)
                rlayout_file_name(lay, fi, name);
            else
                shape_name(sh, sh->nlevels - 1, fi, name);
            int rc = create_file(t, p, dfd, name, first + fi);
            if (__builtin_expect(rc != 0, 0)) {
                if (rc == 1) {
                    t->existing++;
                    t0 = now_ns();
                    continue;
                }
                fail_at(t, p, ids, depth, name, -rc);
                goto out;
            }
            uint64_t t1 = now_ns();
            hist_record(&t->hist, t1 - t0);
            t0 = t1;
            phase_publish_counts(t);
        }
        if (fsync_dir && fsync(dfd) != 0) {
            fail_at(t, p, ids, depth, NULL, errno);
            goto out;
        }
    }
out:
    walk_close(&w, 0);
}

/* The most files one thread makes in one directory. */
void tree_plan_chunk(struct tree_plan *p, unsigned threads)
{
    uint64_t biggest = 0, ids[WALK_MAX_DEPTH];
    if (p->random_layout) {
        for (uint64_t d = 0; d < p->lay.ndirs; d++)
            biggest = p->lay.dirs[d].nfiles > biggest ? p->lay.dirs[d].nfiles : biggest;
    } else {
        biggest = p->o->shape.files_per_leaf;
    }
    p->chunk = biggest;
    if (split_by_dirs(p->items, threads))
        return;
    p->chunk = 0;
    for (unsigned t = 0; t < threads; t++) {
        struct split_share sh;
        uint64_t dir, nfiles, first, b, e;
        split_share(p->items, threads, t, &sh);
        (void)item_dir(p, sh.dir_begin, ids, &dir, &nfiles, &first);
        split_chunk(nfiles, sh.part, sh.parts, &b, &e);
        p->chunk = e - b > p->chunk ? e - b : p->chunk;
    }
}

/* "split": each thread's share of the create phase, in visit positions of
 * the directories that hold files. */
static uint64_t tree_share_files(const void *arg, unsigned t, const struct split_share *s)
{
    const struct tree_plan *p = arg;
    uint64_t files = 0, ids[WALK_MAX_DEPTH];
    (void)t;
    for (uint64_t pos = s->dir_begin; pos < s->dir_end; pos++) {
        uint64_t dir, nfiles, first, b, e;
        (void)item_dir(p, pos, ids, &dir, &nfiles, &first);
        split_chunk(nfiles, s->part, s->parts, &b, &e);
        files += e - b;
    }
    return files;
}

void tree_write_split(struct json *j, const struct tree_plan *p)
{
    split_write_json(j, p->items, (unsigned)p->o->c.threads, tree_share_files, p);
}
