/* meta_phases.c - the meta workload's phases: mkdir and rmdir of the
 * directories, and the file phases (create, open, stat, read, delete), each
 * thread on its own share. See meta.c for the workload as a whole. */
#include "meta_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "split.h"
#include "timing.h"

static void fail_file(struct phase_thread *t, const struct meta_plan *p, uint64_t dir, const char *file,
                      int err, int on_pair)
{
    char where[PHASE_WHERE_MAX], dname[SHAPE_NAME_MAX];
    const char *prefix = on_pair ? "pair:" : "";
    if (p->lay.dirs) {
        shape_name(&p->lay.names, 0, dir, dname);
        snprintf(where, sizeof where, "%s%s/%s", prefix, dname, file);
    } else {
        snprintf(where, sizeof where, "%s%s", prefix, file);
    }
    phase_fail(t, err, where);
}

/* Directory phase "mkdir" (before a create phase): make and open the
 * directories, shared among the threads one at a time. t->ops counts the
 * directories made, t->existing those already there. */
void meta_mkdir_worker(struct phase_thread *t, void *arg)
{
    struct meta_plan *p = arg;
    const int fsync_dir = p->o->fsync == FSYNC_DIR;
    char name[SHAPE_NAME_MAX];
    while (!phase_stopping(t)) {
        uint64_t j = atomic_fetch_add(&p->next_dir, 1);
        if (j >= p->ndirfds)
            break;
        shape_name(&p->lay.names, 0, j, name);
        if (mkdirat(p->rootfd, name, 0755) == 0) {
            t->ops++;
            if (fsync_dir && fsync(p->rootfd) != 0) {
                phase_fail(t, errno, name);
                return;
            }
        } else if (errno == EEXIST) {
            t->existing++;
        } else {
            phase_fail(t, errno, name);
            return;
        }
        phase_publish_counts(t);
        if (p->dirfds[j] < 0) {
            int fd = openat(p->rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                phase_fail(t, errno, name);
                return;
            }
            p->dirfds[j] = fd;
        }
    }
}

int meta_op_pairs(int op)
{
    return op == META_OPEN || op == META_STAT || op == META_READ;
}

/* Open directory j of the layout under root into *fd unless it is open.
 * 0, or the errno with where set to prefix and the directory's name. */
static int open_dir(const struct meta_plan *p, int root, uint64_t j, int *fd, const char *prefix, char *where,
                    size_t wlen)
{
    if (*fd >= 0)
        return 0;
    char name[SHAPE_NAME_MAX];
    shape_name(&p->lay.names, 0, j, name);
    *fd = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd >= 0)
        return 0;
    int e = errno;
    snprintf(where, wlen, "%s%s", prefix, name);
    return e;
}

/* Before a phase other than create: open the directories not open yet
 * (untimed), the pair's too when the phase pairs. 0, or the errno with the
 * directory's name in where ("pair:" first for one of --pair-dir). */
int meta_open_dirs(struct meta_plan *p, char *where, size_t wlen)
{
    if (p->lay.dirs == 0)
        return 0;
    const int pairs = p->pairfd >= 0 && meta_op_pairs(p->op);
    for (uint64_t j = 0; j < p->ndirfds; j++) {
        int err = open_dir(p, p->rootfd, j, &p->dirfds[j], "", where, wlen);
        if (!err && pairs)
            err = open_dir(p, p->pairfd, j, &p->pair_dirfds[j], "pair:", where, wlen);
        if (err)
            return err;
    }
    return 0;
}

/* Directory phase "rmdir" (after a delete phase): close and remove the
 * directories, shared among the threads one at a time. */
void meta_rmdir_worker(struct phase_thread *t, void *arg)
{
    struct meta_plan *p = arg;
    char name[SHAPE_NAME_MAX];
    while (!phase_stopping(t)) {
        uint64_t j = atomic_fetch_add(&p->next_dir, 1);
        if (j >= p->ndirfds)
            break;
        if (p->dirfds[j] >= 0) {
            close(p->dirfds[j]);
            p->dirfds[j] = -1;
        }
        shape_name(&p->lay.names, 0, j, name);
        if (unlinkat(p->rootfd, name, AT_REMOVEDIR) != 0) {
            phase_fail(t, errno, name);
            return;
        }
        t->ops++;
        phase_publish_counts(t);
        if (p->o->fsync == FSYNC_DIR && fsync(p->rootfd) != 0) {
            phase_fail(t, errno, ".");
            return;
        }
    }
}

/* One file operation. 0: done; 1: create found the file already there
 * (--allow-existing); -errno: failed. */
static int do_create(struct phase_thread *t, const struct meta_plan *p, int dfd, uint64_t i,
                     const char *name)
{
    const struct meta_opts *o = p->o;
    int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST && o->c.allow_existing)
            return 1;
        return -e;
    }
    t->ops++; /* the file exists from here on, whatever follows */
    uint64_t left = meta_file_size(&o->size, p->size_key, i);
    if (left) {
        const unsigned char *src = p->content + mix64(p->size_key + i) % META_CONTENT_SLACK;
        while (left > 0) {
            size_t n = left < META_IO_CHUNK ? (size_t)left : META_IO_CHUNK;
            ssize_t w = write(fd, src, n);
            if (w <= 0) {
                int e = w < 0 ? errno : EIO;
                if (e == EINTR)
                    continue;
                close(fd);
                return -e;
            }
            t->bytes += (uint64_t)w;
            left -= (uint64_t)w;
        }
    }
    if (o->fsync != FSYNC_NONE && fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (close(fd) != 0)
        return -errno;
    if (o->fsync == FSYNC_DIR && fsync(dfd) != 0)
        return -errno;
    return 0;
}

/* Open `name` and read it to its end (read: true) or only close it again,
 * adding the bytes read to *bytes. 0 or -errno. */
static int open_read_close(int dfd, const char *name, int read_it, unsigned char *buf, uint64_t *bytes)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    while (read_it) {
        ssize_t r = read(fd, buf, META_IO_CHUNK);
        if (r == 0)
            break;
        if (r < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            close(fd);
            return -e;
        }
        *bytes += (uint64_t)r;
    }
    return close(fd) != 0 ? -errno : 0;
}

static int do_op(struct phase_thread *t, const struct meta_plan *p, int dfd, uint64_t i, const char *name,
                 unsigned char *buf)
{
    switch (p->op) {
    case META_CREATE:
        return do_create(t, p, dfd, i, name);
    case META_OPEN:
    case META_READ: {
        int rc = open_read_close(dfd, name, p->op == META_READ, buf, &t->bytes);
        if (rc == 0)
            t->ops++;
        return rc;
    }
    case META_STAT: {
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            return -errno;
        t->ops++;
        return 0;
    }
    case META_DELETE:
        if (unlinkat(dfd, name, 0) != 0)
            return -errno;
        t->ops++;
        if (p->o->fsync == FSYNC_DIR && fsync(dfd) != 0)
            return -errno;
        return 0;
    default:
        return -EINVAL;
    }
}

/* The same op on the pair's file, counted nowhere: 0 or -errno. */
static int do_pair_op(const struct meta_plan *p, int dfd, const char *name, unsigned char *buf)
{
    struct stat st;
    uint64_t uncounted = 0;
    if (p->op == META_STAT)
        return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ? -errno : 0;
    return open_read_close(dfd, name, p->op == META_READ, buf, &uncounted);
}

/* One file's op on the target and on the pair, in turn (which goes first
 * alternates with pos, so that neither always finds the other's traces),
 * each timed apart: the target's time into the histogram and *own, the
 * pair's into *pair. 0, or -errno (the pair's with *on_pair set). */
static int do_paired(struct phase_thread *t, const struct meta_plan *p, uint64_t d, uint64_t i, uint64_t pos,
                     const char *name, unsigned char *buf, uint64_t *own, uint64_t *pair, int *on_pair)
{
    int rc = 0;
    for (int side = 0; side < 2 && rc == 0; side++) {
        int on_target = (side == 0) == (pos % 2 == 0);
        uint64_t a = now_ns();
        rc = on_target ? do_op(t, p, p->dirfds[d], i, name, buf) : do_pair_op(p, p->pair_dirfds[d], name, buf);
        uint64_t b = now_ns();
        if (on_target) {
            hist_record(&t->hist, b - a);
            *own += b - a;
        } else {
            *pair += b - a;
            *on_pair = rc != 0;
        }
    }
    return rc;
}

/* --sync end: the last thread through its share of a create phase syncs the
 * file system, inside the timed window (its end time counts for the phase). */
static void sync_at_end(struct phase_thread *t, struct meta_plan *p)
{
    if (p->o->sync != SYNC_END || p->op != META_CREATE)
        return;
    if (atomic_fetch_add(&p->threads_done, 1) + 1 != p->o->c.threads || phase_stopping(t))
        return;
    if (syncfs(p->rootfd) != 0)
        phase_fail(t, errno, "syncfs");
}

void meta_file_worker(struct phase_thread *t, void *arg)
{
    struct meta_plan *p = arg;
    const struct meta_layout *lay = &p->lay;
    const unsigned flevel = lay->names.nlevels - 1;
    char name[SHAPE_NAME_MAX];
    unsigned char *buf = NULL;

    struct split_share sh;
    uint64_t begin, end;
    meta_share(lay, (unsigned)p->o->c.threads, t->id, &sh, &begin, &end);
    struct meta_order order;
    meta_order_init_share(&order, begin, end, p->random, p->o->c.seed, p->phase_index);
    if (p->op == META_READ) {
        buf = malloc(META_IO_CHUNK);
        if (!buf) {
            phase_fail(t, ENOMEM, "setup");
            return;
        }
    }
    const int paired = p->pairfd >= 0 && meta_op_pairs(p->op);
    uint64_t own = 0, pair = 0;
    uint64_t t0 = now_ns();
    for (uint64_t pos = 0; pos < end - begin; pos++) {
        if (__builtin_expect(phase_stopping(t), 0))
            break;
        uint64_t i = begin + meta_order_file(&order, pos), d, l;
        meta_locate(lay, i, &d, &l);
        shape_name(&lay->names, flevel, l, name);
        int on_pair = 0;
        int rc = paired ? do_paired(t, p, d, i, pos, name, buf, &own, &pair, &on_pair)
                        : do_op(t, p, p->dirfds[d], i, name, buf);
        if (__builtin_expect(rc != 0, 0)) {
            if (rc == 1) {
                t->existing++;
                t0 = now_ns();
                continue;
            }
            fail_file(t, p, d, name, -rc, on_pair);
            break;
        }
        uint64_t t1 = now_ns();
        if (!paired)
            hist_record(&t->hist, t1 - t0);
        t0 = t1;
        phase_publish_counts(t);
    }
    if (paired) {
        atomic_fetch_add(&p->pair_own_ns, own);
        atomic_fetch_add(&p->pair_pair_ns, pair);
    }
    free(buf);
    sync_at_end(t, p);
}

/* "split": how the file phases' work is shared (the same for every phase). */
static uint64_t share_file_count(const void *arg, unsigned t, const struct split_share *s)
{
    const struct meta_plan *p = arg;
    uint64_t begin, end;
    (void)t;
    meta_share_files(&p->lay, s, &begin, &end);
    return end - begin;
}

void meta_write_split(struct json *j, const struct meta_plan *p)
{
    split_write_json(j, p->lay.dirs ? p->lay.dirs : 1, (unsigned)p->o->c.threads, share_file_count, p);
}

void meta_close_dirs(struct meta_plan *p)
{
    if (p->lay.dirs)
        for (uint64_t j = 0; j < p->ndirfds; j++) {
            if (p->dirfds[j] >= 0)
                close(p->dirfds[j]);
            if (p->pair_dirfds && p->pair_dirfds[j] >= 0)
                close(p->pair_dirfds[j]);
        }
    if (p->pairfd >= 0)
        close(p->pairfd);
}
