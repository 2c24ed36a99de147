/* seqio.c - "seqio" workload: dd-like sequential write or read of one file.
 *
 * The file NAME is opened once, relative to the DIR fd with O_NOFOLLOW
 * (and O_DIRECT with --direct). Each run is one phase on one thread:
 *   write: ftruncate(0) (before the clock starts, like dd's O_TRUNC), then
 *          pwrite blocks of --block bytes from offset 0 up to --size (the
 *          last block may be shorter), then fsync when --fsync-end is on
 *          (inside the timed phase, like dd conv=fsync);
 *   read:  pread blocks from offset 0 until EOF (or --size bytes).
 * With --pair-file (a read, or an O_DIRECT write without --fsync-end) the
 * target's blocks go in turns of SEQIO_PAIR_TURN bytes (at least a block)
 * with the same reads or writes of the pair file, each turn timed apart
 * ("paired"); the pair is written in place, never grown or truncated.
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

#include "cli.h"
#include "common.h"
#include "phase.h"
#include "prng.h"
#include "report.h"
#include "signals.h"
#include "timing.h"

#define SEQIO_MAX_BLOCK (1ull << 30)
#define SEQIO_MAX_SIZE (1ull << 50)     /* 1 PiB */
#define SEQIO_MAX_RUNS 10000
/* --pair-file: bytes moved on one file (whole blocks, at least one) before
 * the other's turn; short beside the host's slow stretches (tens of ms) */
#define SEQIO_PAIR_TURN (1u << 20)

enum mode { MODE_WRITE, MODE_READ };
enum onoff { OFF, ON };

static const char *const mode_names[] = {"write", "read", NULL};
static const char *const onoff_names[] = {"off", "on", NULL};
static const char *const content_names[] = {"zero", "random", NULL};

struct seqio_opts {
    struct common_opts c;
    const char *file;
    uint64_t size;        /* write: bytes to write; read: at most this many (not given: whole file) */
    uint64_t block;
    int mode;
    int direct;
    uint64_t runs;
    int fsync_end;
    int content;
    const char *pair_file;
};

struct seqio_plan {
    const struct seqio_opts *o;
    int rootfd;
    int fd;
    int open_err;         /* the file's open failed: each run reports this errno */
    struct phase_result *res; /* --runs results */
    unsigned char *buf;
    uint64_t total;       /* bytes this run moves (read: limit) */
    uint64_t file_size;   /* read: size of the file at the start */
    unsigned dio_align;   /* direct I/O offset alignment in force (0 without --direct) */
    struct dio_info dio;
    int pair_fd;          /* --pair-file, or -1 */
    uint64_t pair_span;   /* its bytes used in turn, whole blocks (turns wrap around there) */
    uint64_t pair_off;    /* where its next turn starts; goes on from run to run */
    uint64_t own_ns, pair_ns; /* the run being timed: its turns' times, each file's */
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

/* One turn of reads or writes (the run's mode): up to `bytes` on fd from
 * *off, `block` at a time, wrapping at `wrap` when not 0 (the pair, never
 * read or written past it), else stopping at `end`. The target's blocks
 * (t given) count as ops with their latencies. Returns the bytes moved, or
 * -errno; *eof at the target's end of file. */
static int64_t io_turn(struct phase_thread *t, const struct seqio_plan *p, int fd, uint64_t *off, uint64_t end,
                       uint64_t wrap, uint64_t bytes, int *eof)
{
    const int writing = p->o->mode == MODE_WRITE;
    uint64_t done = 0;
    while (done < bytes && (wrap || *off < end)) {
        if (wrap && *off >= wrap)
            *off = 0;
        uint64_t left = bytes - done, room = wrap ? wrap - *off : end - *off;
        if (room < left)
            left = room;
        size_t n = left < p->o->block ? (size_t)left : (size_t)p->o->block;
        if (!writing && p->dio_align && n % p->dio_align) /* direct read of an unaligned tail: ask for more */
            n += p->dio_align - n % p->dio_align;
        uint64_t a = now_ns();
        ssize_t r = writing ? pwrite(fd, p->buf, n, (off_t)*off) : pread(fd, p->buf, n, (off_t)*off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0) {
            if (writing || wrap)
                return -EIO; /* a write that moved nothing, or the pair shrank under us */
            *eof = 1;
            break;
        }
        if ((uint64_t)r > left)
            r = (ssize_t)left;
        *off += (uint64_t)r;
        done += (uint64_t)r;
        if (t) {
            t->ops++;
            t->bytes += (uint64_t)r;
            hist_record(&t->hist, now_ns() - a);
            phase_publish_counts(t);
        }
    }
    return (int64_t)done;
}

/* A run with --pair-file: turns of the target's blocks and as many bytes of
 * the pair's (which first alternates), each turn timed apart. */
static void seqio_paired_worker(struct phase_thread *t, void *arg)
{
    struct seqio_plan *p = arg;
    const uint64_t turn = p->o->block >= SEQIO_PAIR_TURN ? p->o->block
                                                         : SEQIO_PAIR_TURN / p->o->block * p->o->block;
    uint64_t off = 0;
    int eof = 0;
    p->own_ns = p->pair_ns = 0;
    for (uint64_t k = 0; off < p->total && !eof; k++) {
        if (__builtin_expect(phase_stopping(t), 0))
            return;
        uint64_t own_bytes = 0;
        for (int side = 0; side < 2; side++) {
            int on_target = (side == 0) == (k % 2 == 0);
            uint64_t a = now_ns();
            int64_t r = on_target ? io_turn(t, p, p->fd, &off, p->total, 0, turn, &eof)
                                  : io_turn(NULL, p, p->pair_fd, &p->pair_off, 0, p->pair_span,
                                            own_bytes ? own_bytes : turn, &eof);
            uint64_t b = now_ns();
            if (r < 0) {
                phase_fail(t, (int)-r, on_target ? p->o->file : p->o->pair_file);
                return;
            }
            if (on_target) {
                p->own_ns += b - a;
                own_bytes = (uint64_t)r;
            } else {
                p->pair_ns += b - a;
            }
        }
    }
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
    json_key(j, "pair_file");
    if (o->pair_file)
        json_str(j, o->pair_file);
    else
        json_null(j);
    json_key(j, "interval_s");
    json_double(j, o->c.interval_s);
    json_obj_end(j);
}

/* ---- the command line: options, parse, plan, run, report ------------------ */

static struct seqio_opts opts;
static struct seqio_plan plan;

static struct opt_spec specs[] = {
    COMMON_OPT_DIR(opts.c, "The directory of the file. It may hold other files."),
    COMMON_OPT_SEED(opts.c, "Seeds --content random."),
    COMMON_OPT_OUT(opts.c),
    COMMON_OPT_PROGRESS(opts.c),
    COMMON_OPT_INTERVAL(opts.c),
    {.name = "--file", .type = OPT_STR, .dst = &opts.file, .required = 1, .metavar = "NAME",
     .help = "A file name inside DIR (no '/'). write: created if missing, truncated at the start of each run. "
             "read: it must exist."},
    {.name = "--size", .type = OPT_SIZE, .dst = &opts.size, .min = 1, .max = SEQIO_MAX_SIZE,
     .def_text = "required with --mode write; read: the whole file",
     .help = "write: the bytes to write (the last block may be short). read: read at most this many."},
    {.name = "--block", .type = OPT_SIZE, .dst = &opts.block, .required = 1, .min = 1, .max = SEQIO_MAX_BLOCK,
     .help = "Bytes per pwrite or pread."},
    {.name = "--mode", .type = OPT_ENUM, .dst = &opts.mode, .required = 1, .choices = mode_names,
     .help = "Write the file, or read it."},
    {.name = "--direct", .type = OPT_FLAG, .dst = &opts.direct,
     .help = "Open the file with O_DIRECT and an aligned buffer; --block (and for write --size) must be "
             "multiples of 512 and of the file's direct I/O alignment."},
    {.name = "--runs", .type = OPT_U64, .dst = &opts.runs, .min = 1, .max = SEQIO_MAX_RUNS, .metavar = "R",
     .def = "1", .help = "Repeat R times, one phase per run."},
    {.name = "--fsync-end", .type = OPT_ENUM, .dst = &opts.fsync_end, .choices = onoff_names,
     .def_text = "default on for a buffered write, off with --direct",
     .help = "write only: fsync once after the last block, inside the timed phase (dd conv=fsync)."},
    {.name = "--content", .type = OPT_ENUM, .dst = &opts.content, .choices = content_names, .def = "zero",
     .help = "write: zero bytes (dd if=/dev/zero), or one block of pseudo-random bytes from --seed written "
             "over and over."},
    {.name = "--pair-file", .type = OPT_STR, .dst = &opts.pair_file, .metavar = "PATH", .def_text = "no pair",
     .help = "A file on another file system, at least one block long, read (or, for a write, overwritten in "
             "place) the same way in turns with the target (1 MiB or one block each, which first alternates, "
             "the pair's turns wrapping around at its end and going on where the last run left off), each turn "
             "timed apart, so that a slow moment of the host falls on both. A write is paired only with "
             "--direct and without --fsync-end. Each run reports both sums and their ratio (\"paired\"); its "
             "latencies and bytes are the target's alone, its seconds the whole run's."},
    {0},
};

const struct cli_command seqio_command = {
    .name = "seqio",
    .summary = "dd-like sequential write or read of one file, buffered or O_DIRECT",
    .synopsis = "--dir DIR --file NAME --mode write --size BYTES --block BYTES [OPTION]...\n"
                "--dir DIR --file NAME --mode read --block BYTES [OPTION]...",
    .notes = "Each run is one timed phase on one thread, named after --mode. A write run truncates the file "
             "first, before its clock starts.",
};

/* Checks across options after parsing, and --fsync-end's default. 0 or -1
 * after a one-line message (exit 2). */
static int check_options(struct seqio_opts *o)
{
    if (strchr(o->file, '/') || strcmp(o->file, ".") == 0 || strcmp(o->file, "..") == 0) {
        cli_error("--file: expected a file name inside --dir (no '/'), got '%s'", o->file);
        return -1;
    }
    if (o->mode == MODE_WRITE && !cli_given(specs, "--size")) {
        cli_error("--size: required argument missing (with --mode write)");
        return -1;
    }
    if (o->mode == MODE_READ && cli_given(specs, "--fsync-end")) {
        cli_error("--fsync-end: only applies to --mode write");
        return -1;
    }
    if (!cli_given(specs, "--fsync-end")) /* on for a buffered write (dd conv=fsync), off with O_DIRECT */
        o->fsync_end = o->mode == MODE_WRITE && !o->direct ? ON : OFF;
    if (o->pair_file && o->mode == MODE_WRITE && (!o->direct || o->fsync_end == ON)) {
        /* a buffered write's turns would time the page cache, and the fsync the target alone */
        cli_error("--pair-file: a write is paired only with --direct and --fsync-end off");
        return -1;
    }
    if (o->direct && o->block % COMMON_DIO_MIN_ALIGN != 0) {
        cli_error("--block: with --direct, expected a multiple of %u bytes, got '%llu'", COMMON_DIO_MIN_ALIGN,
                  (unsigned long long)o->block);
        return -1;
    }
    if (o->direct && o->mode == MODE_WRITE && o->size % COMMON_DIO_MIN_ALIGN != 0) {
        cli_error("--size: with --direct, expected a multiple of %u bytes, got '%llu'", COMMON_DIO_MIN_ALIGN,
                  (unsigned long long)o->size);
        return -1;
    }
    return 0;
}

/* Parse: the arguments into opts. CLI_CONTINUE or the exit code. */
static int parse_args(int argc, char **argv)
{
    memset(&opts, 0, sizeof opts);
    opts.c.threads = 1; /* not an option: one thread */
    int code = cli_parse_command(&seqio_command, argc, argv, specs);
    if (code != CLI_CONTINUE)
        return code;
    return check_options(&opts) != 0 ? EXIT_USAGE : CLI_CONTINUE;
}

/* The file in rootfd before anything is opened for writing: a read needs
 * it, it must be a regular file, and --direct's alignment must fit block
 * and size. 0, or -1 after a one-line message (exit 2). */
static int check_file(struct seqio_plan *p, const struct seqio_opts *o, int rootfd)
{
    struct stat st;
    int existed = fstatat(rootfd, o->file, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (o->mode == MODE_READ && !existed) {
        cli_error("--file: '%s' does not exist in '%s'", o->file, o->c.dir);
        return -1;
    }
    if (existed && !S_ISREG(st.st_mode)) {
        cli_error("--file: '%s' in '%s' is not a regular file", o->file, o->c.dir);
        return -1;
    }
    if (!o->direct)
        return 0;
    /* other errors than "no O_DIRECT here" show up again at the open */
    if (common_probe_direct(rootfd, o->c.dir, o->file, o->mode == MODE_WRITE, &p->dio) < 0)
        return -1;
    p->dio_align = p->dio.offset_align;
    const char *bad = o->block % p->dio_align                             ? "--block"
                      : o->mode == MODE_WRITE && o->size % p->dio_align ? "--size"
                                                                          : NULL;
    if (bad) {
        cli_error("%s: with --direct on '%s', block and size must be multiples of %u bytes (its direct "
                  "I/O alignment%s), got block %llu, size %llu",
                  bad, o->c.dir, p->dio_align, p->dio.reported ? "" : ", assumed", (unsigned long long)o->block,
                  (unsigned long long)o->size);
        return -1; /* make_plan removes the file the probe made */
    }
    return 0;
}

/* --pair-file, opened: a regular file of at least one block, not --file
 * itself (the buffer is the target's; --direct opens it with O_DIRECT
 * too). 0, or -1 after a one-line message (exit 2). */
static int open_pair(struct seqio_plan *p, const struct seqio_opts *o, int rootfd)
{
    /* a write's pair: overwritten in place, never created or truncated */
    p->pair_fd = open(o->pair_file, (o->mode == MODE_WRITE ? O_WRONLY : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC |
                                        (o->direct ? O_DIRECT : 0));
    struct stat st, mine;
    const char *why = NULL;
    if (p->pair_fd < 0)
        why = strerror(errno);
    else if (fstat(p->pair_fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if ((uint64_t)st.st_size < o->block)
        why = "shorter than one --block";
    else if (fstatat(rootfd, o->file, &mine, AT_SYMLINK_NOFOLLOW) == 0 && mine.st_dev == st.st_dev &&
             mine.st_ino == st.st_ino)
        why = "it is --file itself";
    if (!why) {
        p->pair_span = (uint64_t)st.st_size / o->block * o->block;
        return 0;
    }
    cli_error("--pair-file: '%s': %s", o->pair_file, why);
    if (p->pair_fd >= 0)
        close(p->pair_fd);
    p->pair_fd = -1;
    return -1;
}

/* Open the file (an error is kept for the phases to report) and learn how
 * much each run moves. Nothing is truncated before all checks passed. */
static void open_file(struct seqio_plan *p, const struct seqio_opts *o, int rootfd)
{
    int flags = (o->mode == MODE_WRITE ? O_WRONLY | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC |
                (o->direct ? O_DIRECT : 0);
    struct stat st;
    memset(&st, 0, sizeof st);
    p->open_err = 0;
    p->fd = openat(rootfd, o->file, flags, 0644);
    if (p->fd < 0)
        p->open_err = errno;
    if (p->fd >= 0 && o->mode == MODE_READ) {
        if (fstat(p->fd, &st) != 0)
            p->open_err = errno;
        p->file_size = (uint64_t)st.st_size;
    }
    p->total = o->mode == MODE_WRITE                                   ? o->size
               : cli_given(specs, "--size") && o->size < p->file_size ? o->size
                                                                        : p->file_size;
}

/* Plan: signal handlers, DIR, the file, the buffer and the results. Returns
 * CLI_CONTINUE or the exit code; on CLI_CONTINUE p->rootfd is open. */
static int make_plan(struct seqio_plan *p, const struct seqio_opts *o)
{
    if (signals_install() != 0) {
        cli_error("cannot install signal handlers: %s", strerror(errno));
        return EXIT_FAILED;
    }
    p->o = o;
    p->rootfd = common_open_dir(&o->c);
    if (p->rootfd < 0)
        return EXIT_USAGE;
    p->pair_fd = -1;
    if (check_file(p, o, p->rootfd) != 0 || (o->pair_file && open_pair(p, o, p->rootfd) != 0)) {
        if (p->dio.created) /* the O_DIRECT probe made the file: nothing of a refused run is left behind */
            (void)unlinkat(p->rootfd, o->file, 0);
        close(p->rootfd);
        return EXIT_USAGE;
    }
    open_file(p, o, p->rootfd);
    p->buf = common_dio_alloc(&p->dio, (size_t)o->block);
    p->res = p->buf ? calloc(o->runs, sizeof *p->res) : NULL;
    if (!p->res) {
        if (p->buf)
            cli_error("out of memory");
        else
            cli_error("--block: cannot allocate %llu bytes", (unsigned long long)o->block);
        if (p->fd >= 0)
            close(p->fd);
        if (p->pair_fd >= 0)
            close(p->pair_fd);
        close(p->rootfd);
        free(p->buf);
        return EXIT_FAILED;
    }
    if (o->content == 1)
        prng_fill(p->buf, o->block, o->c.seed, 0);
    else
        memset(p->buf, 0, o->block);
    return CLI_CONTINUE;
}

/* Run: --runs phases, until one ends the run; then close the file and DIR.
 * Returns how many phases have results; *oom when one could not run. */
static size_t run_phases(struct seqio_plan *p, int *oom)
{
    const struct seqio_opts *o = p->o;
    size_t nres = 0;
    for (uint64_t r = 0; r < o->runs; r++) {
        struct phase_opts po = {
            .name = mode_names[o->mode],
            .unit = "blocks",
            .threads = 1,
            .interval_s = o->c.interval_s,
            .progress = o->c.progress,
            .expected_ops = (p->total + o->block - 1) / o->block,
            .has_run = 1,
            .run = r,
            .with_bytes = 1,
        };
        int rc;
        if (p->fd < 0)
            rc = phase_result_setup_failed(&p->res[r], &po, p->open_err, o->file);
        else if (o->mode == MODE_WRITE && ftruncate(p->fd, 0) != 0)
            rc = phase_result_setup_failed(&p->res[r], &po, errno, o->file);
        else
            rc = phase_run(&p->res[r], &po, p->pair_fd >= 0 ? seqio_paired_worker : seqio_worker, p);
        if (rc != 0 && !p->res[r].lat) {
            *oom = 1;
            break;
        }
        nres = r + 1;
        if (p->pair_fd >= 0 && p->fd >= 0) {
            p->res[r].paired = 1;
            p->res[r].pair = o->pair_file;
            p->res[r].paired_own_s = (double)p->own_ns / 1e9;
            p->res[r].paired_pair_s = (double)p->pair_ns / 1e9;
        }
        if (phase_result_ends_run(&p->res[r]))
            break;
    }
    if (p->fd >= 0)
        close(p->fd);
    if (p->pair_fd >= 0)
        close(p->pair_fd);
    close(p->rootfd);
    return nres;
}

/* Report: the document, then free the buffer and results. Returns the exit code. */
static int write_report(struct seqio_plan *p, size_t nres, int oom)
{
    struct report rep = {
        .workload = "seqio",
        .write_params = write_params,
        .params_arg = p,
        .phases = p->res,
        .nphases = nres,
        .out_of_memory = oom,
    };
    int code = report_finish(&rep, p->o->c.out);
    phase_results_free(p->res, nres);
    free(p->res);
    free(p->buf);
    return code;
}

int seqio_main(int argc, char **argv)
{
    memset(&plan, 0, sizeof plan);
    int code = parse_args(argc, argv);
    if (code == CLI_CONTINUE)
        code = make_plan(&plan, &opts);
    if (code != CLI_CONTINUE)
        return code;
    int oom = 0;
    size_t nres = run_phases(&plan, &oom);
    return write_report(&plan, nres, oom);
}
