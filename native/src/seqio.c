/* seqio.c - "seqio" workload: dd-like sequential write or read of one file.
 *
 * The file NAME is opened once, relative to the DIR fd with O_NOFOLLOW
 * (and O_DIRECT with --direct). Each run is one phase on one thread:
 *   write: ftruncate(0) (before the clock starts, like dd's O_TRUNC), then
 *          pwrite blocks of --block bytes from offset 0 up to --size (the
 *          last block may be shorter), then fsync when --fsync-end is on
 *          (inside the timed phase, like dd conv=fsync);
 *   read:  pread blocks from offset 0 until EOF (or --size bytes).
 * One op = one pwrite/pread; its latency goes into the histogram. The
 * buffer is page aligned (or aligned to the file's direct I/O memory
 * alignment when the kernel reports a larger one).
 */
#include "seqio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "phase.h"
#include "prng.h"
#include "report.h"
#include "signals.h"
#include "timing.h"

#define SEQIO_MAX_BLOCK (1ull << 30)
#define SEQIO_MAX_SIZE (1ull << 50)     /* 1 PiB */
#define SEQIO_MAX_RUNS 10000

enum mode { MODE_WRITE, MODE_READ };
enum onoff { OFF, ON };

static const char *const mode_names[] = {"write", "read", NULL};
static const char *const onoff_names[] = {"off", "on", NULL};
static const char *const content_names[] = {"zero", "random", NULL};

struct seqio_opts {
    struct common_opts c;
    const char *file;
    uint64_t size;        /* write: bytes to write; read: at most this many (0: whole file) */
    uint64_t block;
    int mode;
    int direct;
    uint64_t runs;
    int fsync_end;
    int content;
};

struct seqio_plan {
    const struct seqio_opts *o;
    int fd;
    unsigned char *buf;
    uint64_t total;       /* bytes this run moves (read: limit) */
    uint64_t file_size;   /* read: size of the file at the start */
    unsigned dio_align;   /* direct I/O offset alignment in force (0 without --direct) */
    struct dio_info dio;
};

static void seqio_worker(struct phase_thread *t, void *arg)
{
    struct seqio_plan *p = arg;
    const struct seqio_opts *o = p->o;
    const int writing = o->mode == MODE_WRITE;
    uint64_t off = 0;
    uint64_t t0 = now_ns();
    while (off < p->total) {
        if (__builtin_expect(phase_stopping(t), 0))
            return;
        uint64_t left = p->total - off;
        size_t n = left < o->block ? (size_t)left : (size_t)o->block;
        if (p->dio_align && n % p->dio_align) /* direct read of an unaligned tail: ask for more */
            n += p->dio_align - n % p->dio_align;
        ssize_t r = writing ? pwrite(p->fd, p->buf, n, (off_t)off) : pread(p->fd, p->buf, n, (off_t)off);
        if (__builtin_expect(r <= 0, 0)) {
            if (r == 0 && !writing)
                break; /* end of file */
            int e = r < 0 ? errno : EIO;
            if (e == EINTR)
                continue;
            phase_fail(t, e, o->file);
            return;
        }
        if ((uint64_t)r > left)
            r = (ssize_t)left;
        off += (uint64_t)r;
        t->ops++;
        t->bytes += (uint64_t)r;
        uint64_t t1 = now_ns();
        hist_record(&t->hist, t1 - t0);
        t0 = t1;
        phase_publish_counts(t);
    }
    if (writing && o->fsync_end == ON && fsync(p->fd) != 0)
        phase_fail(t, errno, o->file);
}

static void write_params(struct json *j, const void *arg)
{
    const struct seqio_plan *p = arg;
    const struct seqio_opts *o = p->o;
    json_obj_begin(j);
    json_key(j, "dir");
    json_str(j, o->c.dir);
    json_key(j, "file");
    json_str(j, o->file);
    json_key(j, "mode");
    json_str(j, mode_names[o->mode]);
    json_key(j, "size");
    json_u64(j, p->total);
    json_key(j, "block");
    json_u64(j, o->block);
    json_key(j, "direct");
    json_bool(j, o->direct);
    json_key(j, "dio_align");
    if (o->direct)
        json_u64(j, p->dio_align);
    else
        json_null(j);
    json_key(j, "runs");
    json_u64(j, o->runs);
    json_key(j, "fsync_end");
    json_bool(j, o->mode == MODE_WRITE && o->fsync_end == ON);
    json_key(j, "content");
    if (o->mode == MODE_WRITE)
        json_str(j, content_names[o->content]);
    else
        json_null(j);
    json_key(j, "seed");
    json_u64(j, o->c.seed);
    json_key(j, "interval_s");
    json_double(j, o->c.interval_s);
    json_obj_end(j);
}

int seqio_main(int argc, char **argv)
{
    static struct seqio_opts o;
    static struct seqio_plan plan;
    memset(&o, 0, sizeof o);
    memset(&plan, 0, sizeof plan);
    plan.o = &o;
    struct opt_spec specs[COMMON_NSPECS + 9];
    memset(specs, 0, sizeof specs);
    unsigned n = common_specs_some(specs, &o.c, COMMON_NO_THREADS | COMMON_NO_ALLOW_EXISTING);
    o.runs = 1;
    o.mode = -1;
    o.fsync_end = -1;
    specs[n++] = (struct opt_spec){.name = "--file", .type = OPT_STR, .dst = &o.file, .required = 1};
    struct opt_spec *size_spec = &specs[n];
    specs[n++] = (struct opt_spec){
        .name = "--size", .type = OPT_SIZE, .dst = &o.size, .min = 1, .max = SEQIO_MAX_SIZE};
    specs[n++] = (struct opt_spec){
        .name = "--block", .type = OPT_SIZE, .dst = &o.block, .required = 1, .min = 1, .max = SEQIO_MAX_BLOCK};
    specs[n++] = (struct opt_spec){
        .name = "--mode", .type = OPT_ENUM, .dst = &o.mode, .required = 1, .choices = mode_names};
    specs[n++] = (struct opt_spec){.name = "--direct", .type = OPT_FLAG, .dst = &o.direct};
    specs[n++] = (struct opt_spec){
        .name = "--runs", .type = OPT_U64, .dst = &o.runs, .min = 1, .max = SEQIO_MAX_RUNS};
    struct opt_spec *fsync_spec = &specs[n];
    specs[n++] = (struct opt_spec){
        .name = "--fsync-end", .type = OPT_ENUM, .dst = &o.fsync_end, .choices = onoff_names};
    specs[n++] = (struct opt_spec){
        .name = "--content", .type = OPT_ENUM, .dst = &o.content, .choices = content_names};
    char err[CLI_ERR_MAX];
    if (cli_parse(argc, argv, specs, err, sizeof err) != 0) {
        cli_error("%s", err);
        return EXIT_USAGE;
    }
    if (strchr(o.file, '/') || strcmp(o.file, ".") == 0 || strcmp(o.file, "..") == 0) {
        cli_error("--file: expected a file name inside --dir (no '/'), got '%s'", o.file);
        return EXIT_USAGE;
    }
    if (o.mode == MODE_WRITE && !size_spec->seen) {
        cli_error("--size: required argument missing (with --mode write)");
        return EXIT_USAGE;
    }
    if (o.mode == MODE_READ && fsync_spec->seen) {
        cli_error("--fsync-end: only applies to --mode write");
        return EXIT_USAGE;
    }
    if (o.fsync_end < 0) /* default: on for a buffered write (dd conv=fsync), off with O_DIRECT */
        o.fsync_end = o.mode == MODE_WRITE && !o.direct ? ON : OFF;
    if (o.direct && o.block % COMMON_DIO_MIN_ALIGN != 0) {
        cli_error("--block: with --direct, expected a multiple of %u bytes, got '%llu'", COMMON_DIO_MIN_ALIGN,
                  (unsigned long long)o.block);
        return EXIT_USAGE;
    }
    if (o.direct && o.mode == MODE_WRITE && o.size % COMMON_DIO_MIN_ALIGN != 0) {
        cli_error("--size: with --direct, expected a multiple of %u bytes, got '%llu'", COMMON_DIO_MIN_ALIGN,
                  (unsigned long long)o.size);
        return EXIT_USAGE;
    }
    if (signals_install() != 0) {
        cli_error("cannot install signal handlers: %s", strerror(errno));
        return EXIT_FAILED;
    }
    int rootfd = common_open_dir(&o.c);
    if (rootfd < 0)
        return EXIT_USAGE;

    /* Open the file. Nothing is truncated before all checks have passed. */
    struct stat st;
    int existed = fstatat(rootfd, o.file, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (o.mode == MODE_READ && !existed) {
        cli_error("--file: '%s' does not exist in '%s'", o.file, o.c.dir);
        close(rootfd);
        return EXIT_USAGE;
    }
    if (existed && !S_ISREG(st.st_mode)) {
        cli_error("--file: '%s' in '%s' is not a regular file", o.file, o.c.dir);
        close(rootfd);
        return EXIT_USAGE;
    }
    if (o.direct) {
        /* other errors than "no O_DIRECT here" show up again at the open below */
        if (common_probe_direct(rootfd, o.c.dir, o.file, o.mode == MODE_WRITE, &plan.dio) < 0) {
            close(rootfd);
            return EXIT_USAGE;
        }
        plan.dio_align = plan.dio.offset_align;
        const char *bad = o.block % plan.dio_align ? "--block"
                          : o.mode == MODE_WRITE && o.size % plan.dio_align ? "--size"
                                                                            : NULL;
        if (bad) {
            cli_error("%s: with --direct on '%s', block and size must be multiples of %u bytes (its direct "
                      "I/O alignment%s), got block %llu, size %llu",
                      bad, o.c.dir, plan.dio_align, plan.dio.reported ? "" : ", assumed",
                      (unsigned long long)o.block, (unsigned long long)o.size);
            if (plan.dio.created)
                (void)unlinkat(rootfd, o.file, 0);
            close(rootfd);
            return EXIT_USAGE;
        }
    }
    int flags = (o.mode == MODE_WRITE ? O_WRONLY | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC |
                (o.direct ? O_DIRECT : 0);
    int open_err = 0;
    plan.fd = openat(rootfd, o.file, flags, 0644);
    if (plan.fd < 0)
        open_err = errno;
    if (plan.fd >= 0 && o.mode == MODE_READ) {
        if (fstat(plan.fd, &st) != 0)
            open_err = errno;
        plan.file_size = (uint64_t)st.st_size;
    }
    plan.total = o.mode == MODE_WRITE ? o.size
                 : size_spec->seen && o.size < plan.file_size ? o.size
                                                              : plan.file_size;
    plan.buf = common_dio_alloc(&plan.dio, (size_t)o.block);
    if (!plan.buf) {
        cli_error("--block: cannot allocate %llu bytes", (unsigned long long)o.block);
        if (plan.fd >= 0)
            close(plan.fd);
        close(rootfd);
        return EXIT_FAILED;
    }
    if (o.content == 1)
        prng_fill(plan.buf, o.block, o.c.seed, 0);
    else
        memset(plan.buf, 0, o.block);

    struct phase_result *res = calloc(o.runs, sizeof *res);
    if (!res) {
        cli_error("out of memory");
        if (plan.fd >= 0)
            close(plan.fd);
        close(rootfd);
        free(plan.buf);
        return EXIT_FAILED;
    }
    size_t nres = 0;
    int oom = 0;
    const char *name = mode_names[o.mode];
    for (uint64_t r = 0; r < o.runs; r++) {
        struct phase_opts po = {
            .name = name,
            .unit = "blocks",
            .threads = 1,
            .interval_s = o.c.interval_s,
            .progress = o.c.progress,
            .expected_ops = (plan.total + o.block - 1) / o.block,
            .has_run = 1,
            .run = r,
            .with_bytes = 1,
        };
        int rc;
        if (plan.fd < 0)
            rc = phase_result_setup_failed(&res[r], &po, open_err, o.file);
        else if (o.mode == MODE_WRITE && ftruncate(plan.fd, 0) != 0)
            rc = phase_result_setup_failed(&res[r], &po, errno, o.file);
        else
            rc = phase_run(&res[r], &po, seqio_worker, &plan);
        if (rc != 0 && !res[r].lat) {
            oom = 1;
            break;
        }
        nres = r + 1;
        if (phase_result_ends_run(&res[r]))
            break;
    }
    if (plan.fd >= 0)
        close(plan.fd);
    close(rootfd);
    free(plan.buf);
    struct report rep = {
        .workload = "seqio",
        .write_params = write_params,
        .params_arg = &plan,
        .phases = res,
        .nphases = nres,
        .out_of_memory = oom,
    };
    int code = report_finish(&rep, o.c.out);
    phase_results_free(res, nres);
    free(res);
    return code;
}
