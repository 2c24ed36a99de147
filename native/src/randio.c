/* randio.c - "randio" workload: vdbench-like random reads and writes of
 * --xfer bytes over N files of --file-size bytes, on T threads, for a fixed
 * duration.
 *
 * Phase "prepare" (not part of the measurement): files f000.. are opened
 * relative to the DIR fd (O_CREAT|O_NOFOLLOW); a file shorter than
 * --file-size is filled up to it with non-zero pseudo-random bytes
 * (pwrite of 1 MiB blocks from its current end) and fdatasync'ed. ops =
 * files created or extended, existing = files already long enough.
 *
 * Phase "io": each thread opens the files itself (O_RDWR, O_DIRECT with
 * --direct), like fio's jobs: one struct file per thread and file, so the
 * threads do not bounce one file's reference count between CPUs on every
 * pread/pwrite (2-3 % of the rate with 64 threads on tmpfs here). When
 * files x threads descriptors exceed the open-file limit, the threads share
 * one fd per file instead (params.fds says which). I/O is pread/pwrite only. Each
 * thread loops until the deadline (set by the first thread to start:
 * start + --duration): file = uniform over the N files, offset = uniform
 * over the whole --xfer slots that fit in --file-size (aligned to --xfer),
 * read when a uniform draw in [0, 100) is below --read-pct, else write.
 * Each thread has its own xoshiro256** generator seeded from --seed and the
 * thread index, so the decisions are independent of timing: the read share
 * is --read-pct in expectation. Reads and writes are the phase's two op
 * classes: separate counts, bytes, latency histograms and interval rates.
 */
#include "randio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
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

#define RANDIO_MAX_FILES 1000000
#define RANDIO_MAX_FILE_SIZE (1ull << 50)
#define RANDIO_MAX_XFER (1ull << 30)
#define RANDIO_FILL_BLOCK (1u << 20)
#define RANDIO_NAME_MAX 16

enum { CLS_READ, CLS_WRITE };
static const char *const class_names[] = {"read", "write", NULL};

struct randio_opts {
    struct common_opts c;
    uint64_t files;
    uint64_t file_size;
    uint64_t xfer;
    double read_pct;
    double duration_s;
    int direct;
    int prepare_only;
};

struct randio_plan {
    const struct randio_opts *o;
    int rootfd;
    unsigned width;             /* digits in file names */
    int *fds;                   /* io phase: fd_sets x files fds, set k for thread k */
    unsigned fd_sets;           /* threads (one set each) or 1 (shared) */
    unsigned char *fill;        /* prepare: RANDIO_FILL_BLOCK non-zero bytes */
    uint64_t slots;             /* file_size / xfer */
    uint64_t seed_key;
    uint64_t duration_ns;
    struct dio_info dio;        /* --direct: alignment of f000 */
    _Atomic uint64_t next_file; /* prepare work handout */
    _Atomic uint64_t deadline;  /* io: 0 until the first thread starts */
};

static void file_name(const struct randio_plan *p, uint64_t i, char *buf)
{
    snprintf(buf, RANDIO_NAME_MAX, "f%0*llu", (int)p->width, (unsigned long long)i);
}

static int fill_file(struct phase_thread *t, const struct randio_plan *p, int fd, uint64_t from)
{
    uint64_t off = from, end = p->o->file_size;
    while (off < end) {
        if (phase_stopping(t))
            return EINTR;
        size_t n = end - off < RANDIO_FILL_BLOCK ? (size_t)(end - off) : RANDIO_FILL_BLOCK;
        ssize_t w = pwrite(fd, p->fill, n, (off_t)off);
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            if (e == EINTR)
                continue;
            return e;
        }
        off += (uint64_t)w;
        t->bytes += (uint64_t)w;
    }
    return fdatasync(fd) != 0 ? errno : 0;
}

static void prepare_worker(struct phase_thread *t, void *arg)
{
    struct randio_plan *p = arg;
    char name[RANDIO_NAME_MAX];
    uint64_t t0 = now_ns();
    while (!phase_stopping(t)) {
        uint64_t i = atomic_fetch_add_explicit(&p->next_file, 1, memory_order_relaxed);
        if (i >= p->o->files)
            break;
        file_name(p, i, name);
        int fd = openat(p->rootfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            phase_fail(t, errno, name);
            return;
        }
        struct stat st;
        if (fstat(fd, &st) != 0) {
            phase_fail(t, errno, name);
            close(fd);
            return;
        }
        if (!S_ISREG(st.st_mode)) {
            phase_fail(t, EINVAL, name);
            close(fd);
            return;
        }
        int existing = (uint64_t)st.st_size >= p->o->file_size;
        int e = existing ? 0 : fill_file(t, p, fd, (uint64_t)st.st_size);
        if (close(fd) != 0 && !e)
            e = errno;
        if (e) {
            if (!(e == EINTR && phase_stopping(t)))
                phase_fail(t, e, name);
            return;
        }
        if (existing) { /* not an op: no latency, like tree's --allow-existing */
            t->existing++;
            t0 = now_ns();
            continue;
        }
        t->ops++;
        uint64_t t1 = now_ns();
        hist_record(&t->hist, t1 - t0);
        t0 = t1;
        phase_publish_counts(t);
    }
}

static void io_worker(struct phase_thread *t, void *arg)
{
    struct randio_plan *p = arg;
    const struct randio_opts *o = p->o;
    const uint64_t nfiles = o->files, slots = p->slots;
    const size_t xfer = (size_t)o->xfer;
    const double pct = o->read_pct;
    struct phase_class *rd = &t->cls[CLS_READ], *wr = &t->cls[CLS_WRITE];
    const int *fds = p->fds + (p->fd_sets > 1 ? (uint64_t)t->id * nfiles : 0);
    unsigned char *rbuf = common_dio_alloc(&p->dio, xfer);
    unsigned char *wbuf = common_dio_alloc(&p->dio, xfer);
    if (!rbuf || !wbuf) {
        phase_fail(t, ENOMEM, "setup");
        free(rbuf);
        free(wbuf);
        return;
    }
    prng_fill(wbuf, xfer, mix64(p->seed_key + t->id), 1);
    struct xoshiro256 g;
    xoshiro256_seed(&g, mix64(p->seed_key ^ mix64((uint64_t)t->id + 1)));

    uint64_t t0 = now_ns();
    uint64_t none = 0;
    atomic_compare_exchange_strong(&p->deadline, &none, t0 + p->duration_ns);
    const uint64_t deadline = atomic_load(&p->deadline);
    while (t0 < deadline && !phase_stopping(t)) {
        uint64_t f = xoshiro256_below(&g, nfiles);
        off_t off = (off_t)(xoshiro256_below(&g, slots) * xfer);
        int is_read = xoshiro256_double(&g) * 100.0 < pct;
        ssize_t r = is_read ? pread(fds[f], rbuf, xfer, off) : pwrite(fds[f], wbuf, xfer, off);
        if (__builtin_expect(r <= 0, 0)) {
            /* 0: a read at or past the end (the file was shortened behind our back) */
            int e = r < 0 ? errno : ENODATA;
            if (e == EINTR)
                continue;
            char name[RANDIO_NAME_MAX];
            file_name(p, f, name);
            phase_fail(t, e, name);
            break;
        }
        struct phase_class *c = is_read ? rd : wr;
        c->ops++;
        c->bytes += (uint64_t)r;
        t->ops++;
        t->bytes += (uint64_t)r;
        uint64_t t1 = now_ns();
        hist_record(&c->hist, t1 - t0);
        t0 = t1;
        phase_publish_counts(t);
    }
    free(rbuf);
    free(wbuf);
}

static void write_params(struct json *j, const void *arg)
{
    const struct randio_plan *p = arg;
    const struct randio_opts *o = p->o;
    json_obj_begin(j);
    json_key(j, "dir");
    json_str(j, o->c.dir);
    json_key(j, "files");
    json_u64(j, o->files);
    json_key(j, "file_size");
    json_u64(j, o->file_size);
    json_key(j, "threads");
    json_u64(j, o->c.threads);
    json_key(j, "xfer");
    json_u64(j, o->xfer);
    json_key(j, "read_pct");
    json_double(j, o->read_pct);
    json_key(j, "duration_s");
    json_double(j, o->duration_s);
    json_key(j, "direct");
    json_bool(j, o->direct);
    json_key(j, "dio_align");
    if (o->direct && !o->prepare_only)
        json_u64(j, p->dio.offset_align);
    else
        json_null(j);
    json_key(j, "fds");
    json_str(j, p->fd_sets > 1 ? "per-thread" : "shared");
    json_key(j, "prepare_only");
    json_bool(j, o->prepare_only);
    json_key(j, "seed");
    json_u64(j, o->c.seed);
    json_key(j, "interval_s");
    json_double(j, o->c.interval_s);
    json_obj_end(j);
}

/* Open the files for the io phase, fd_sets times. 0, or an errno with the
 * file's name. */
static int open_files(struct randio_plan *p, char *where)
{
    int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (p->o->direct ? O_DIRECT : 0);
    uint64_t nfiles = p->o->files;
    for (uint64_t k = 0; k < p->fd_sets * nfiles; k++) {
        file_name(p, k % nfiles, where);
        p->fds[k] = openat(p->rootfd, where, flags);
        if (p->fds[k] < 0)
            return errno;
    }
    return 0;
}

static void close_files(struct randio_plan *p)
{
    for (uint64_t k = 0; k < p->fd_sets * p->o->files; k++)
        if (p->fds[k] >= 0)
            close(p->fds[k]);
}

/* ---- the command line: options, parse, plan, run, report ------------------ */

static struct randio_opts opts;
static struct randio_plan plan;

#define REQUIRED_UNLESS_PREPARE "required unless --prepare"

static struct opt_spec specs[] = {
    COMMON_OPT_DIR(opts.c, "The directory of the files. It may hold other files."),
    COMMON_OPT_THREADS(opts.c, "Threads doing I/O (vdbench forthreads)."),
    COMMON_OPT_SEED(opts.c, "Seeds the per-thread generators (file, offset, read or write) and the bytes."),
    COMMON_OPT_OUT(opts.c),
    COMMON_OPT_PROGRESS(opts.c),
    COMMON_OPT_INTERVAL(opts.c),
    {.name = "--files", .type = OPT_U64, .dst = &opts.files, .required = 1, .min = 1, .max = RANDIO_MAX_FILES,
     .help = "Files f000..f<N-1> (names padded to max(3, digits(N-1)))."},
    {.name = "--file-size", .type = OPT_SIZE, .dst = &opts.file_size, .required = 1, .min = 1,
     .max = RANDIO_MAX_FILE_SIZE, .help = "The size each file must have; the I/O stays within it."},
    {.name = "--xfer", .type = OPT_SIZE, .dst = &opts.xfer, .min = 1, .max = RANDIO_MAX_XFER,
     .def_text = REQUIRED_UNLESS_PREPARE,
     .help = "Bytes per pread or pwrite, at most --file-size; offsets are multiples of it."},
    {.name = "--read-pct", .type = OPT_DOUBLE, .dst = &opts.read_pct, .dmin = 0, .dmax = 100, .metavar = "P",
     .def_text = REQUIRED_UNLESS_PREPARE, .help = "Each op is a read with probability P/100."},
    {.name = "--duration", .type = OPT_DOUBLE, .dst = &opts.duration_s, .dmin = 0.01, .dmax = 1e7,
     .metavar = "SECONDS", .def_text = REQUIRED_UNLESS_PREPARE, .help = "Seconds of I/O."},
    {.name = "--direct", .type = OPT_FLAG, .dst = &opts.direct,
     .help = "The io phase opens the files with O_DIRECT; --xfer must be a multiple of 512 and of the "
             "files' direct I/O alignment."},
    {.name = "--prepare", .type = OPT_FLAG, .dst = &opts.prepare_only,
     .help = "Only make sure the files exist and are full (the prepare phase), no io phase."},
    {0},
};

const struct cli_command randio_command = {
    .name = "randio",
    .summary = "vdbench-like random reads and writes over N files for a fixed time",
    .synopsis = "--dir DIR --files N --file-size BYTES --xfer BYTES --read-pct P --duration SECONDS "
                "[OPTION]...\n"
                "--dir DIR --files N --file-size BYTES --prepare [OPTION]...",
    .notes = "Two timed phases: prepare makes or extends the files (not part of the measurement), then io, "
             "whose reads and writes are counted apart.",
};

/* Checks across options after parsing. 0 or -1 after a one-line message
 * (exit 2). */
static int check_options(const struct randio_opts *o)
{
    if (o->prepare_only)
        return 0;
    static const char *const needed[] = {"--xfer", "--read-pct", "--duration"};
    for (int k = 0; k < 3; k++) {
        if (!cli_given(specs, needed[k])) {
            cli_error("%s: required argument missing (unless --prepare)", needed[k]);
            return -1;
        }
    }
    if (o->xfer > o->file_size) {
        cli_error("--xfer: expected at most --file-size (%llu), got '%llu'", (unsigned long long)o->file_size,
                  (unsigned long long)o->xfer);
        return -1;
    }
    if (o->direct && o->xfer % COMMON_DIO_MIN_ALIGN != 0) {
        cli_error("--xfer: with --direct, expected a multiple of %u bytes, got '%llu'", COMMON_DIO_MIN_ALIGN,
                  (unsigned long long)o->xfer);
        return -1;
    }
    return 0;
}

/* Parse: the arguments into opts. CLI_CONTINUE or the exit code. */
static int parse_args(int argc, char **argv)
{
    memset(&opts, 0, sizeof opts);
    int code = cli_parse_command(&randio_command, argc, argv, specs);
    if (code != CLI_CONTINUE)
        return code;
    return check_options(&opts) != 0 ? EXIT_USAGE : CLI_CONTINUE;
}

/* --direct: O_DIRECT works on f000 and --xfer fits its alignment. 0, or
 * -1 after a one-line message (exit 2). */
static int check_direct(struct randio_plan *p, const struct randio_opts *o)
{
    char name[RANDIO_NAME_MAX];
    file_name(p, 0, name);
    /* other errors than "no O_DIRECT here" show up again in the prepare phase */
    if (common_probe_direct(p->rootfd, o->c.dir, name, 1, &p->dio) < 0)
        return -1;
    if (o->xfer % p->dio.offset_align == 0)
        return 0;
    cli_error("--xfer: with --direct on '%s', expected a multiple of %u bytes (its direct I/O alignment%s), "
              "got '%llu'",
              o->c.dir, p->dio.offset_align, p->dio.reported ? "" : ", assumed", (unsigned long long)o->xfer);
    if (p->dio.created)
        (void)unlinkat(p->rootfd, name, 0);
    return -1;
}

/* Plan, first part: one fd set per thread when files x threads fit the
 * open-file limit, else one shared set; the signal handlers; DIR; the
 * names' width; --direct. CLI_CONTINUE or the exit code. */
static int check_and_open(struct randio_plan *p, const struct randio_opts *o)
{
    uint64_t limit;
    memset(p, 0, sizeof *p);
    p->fd_sets = (unsigned)o->c.threads;
    if (o->prepare_only || common_ensure_nofile(o->files * o->c.threads + 64, &limit) != 0)
        p->fd_sets = 1; /* shared fds: files x threads do not fit */
    if (p->fd_sets == 1 && common_ensure_nofile(o->files + 64, &limit) != 0) {
        cli_error("--files: %llu files are kept open, but the open-file limit is %llu", (unsigned long long)o->files,
                  (unsigned long long)limit);
        return EXIT_USAGE;
    }
    if (signals_install() != 0) {
        cli_error("cannot install signal handlers: %s", strerror(errno));
        return EXIT_FAILED;
    }
    p->o = o;
    p->rootfd = common_open_dir(&o->c);
    if (p->rootfd < 0)
        return EXIT_USAGE;
    p->width = 3;
    for (uint64_t v = o->files - 1; v >= 1000; v /= 10)
        p->width++;
    if (o->direct && !o->prepare_only && check_direct(p, o) != 0) {
        close(p->rootfd);
        return EXIT_USAGE;
    }
    return CLI_CONTINUE;
}

/* Plan: as above, then the fds, the fill block, the seeds and the slots.
 * CLI_CONTINUE or the exit code. */
static int make_plan(struct randio_plan *p, const struct randio_opts *o)
{
    int code = check_and_open(p, o);
    if (code != CLI_CONTINUE)
        return code;
    p->fds = malloc(p->fd_sets * o->files * sizeof *p->fds);
    p->fill = malloc(RANDIO_FILL_BLOCK);
    if (!p->fds || !p->fill) {
        cli_error("out of memory");
        free(p->fds);
        free(p->fill);
        close(p->rootfd);
        return EXIT_FAILED;
    }
    for (uint64_t k = 0; k < p->fd_sets * o->files; k++)
        p->fds[k] = -1;
    uint64_t st = o->c.seed;
    p->seed_key = splitmix64(&st);
    prng_fill(p->fill, RANDIO_FILL_BLOCK, splitmix64(&st), 1);
    p->slots = o->xfer ? o->file_size / o->xfer : 0;
    p->duration_ns = (uint64_t)(o->duration_s * 1e9);
    atomic_init(&p->next_file, 0);
    atomic_init(&p->deadline, 0);
    return CLI_CONTINUE;
}

/* The io phase into *res: open the files (a failure is the phase's
 * setup error), then run. Returns phase_run's code. */
static int run_io(struct randio_plan *p, struct phase_result *res)
{
    const struct randio_opts *o = p->o;
    struct phase_opts io = {
        .name = "io",
        .unit = "ops",
        .threads = (unsigned)o->c.threads,
        .interval_s = o->c.interval_s,
        .progress = o->c.progress,
        .with_bytes = 1,
        .nclasses = 2,
        .class_names = class_names,
    };
    char where[RANDIO_NAME_MAX];
    int e = open_files(p, where);
    return e ? phase_result_setup_failed(res, &io, e, where) : phase_run(res, &io, io_worker, p);
}

/* Run: prepare, then io (unless --prepare or prepare ended the run); then
 * close everything and free the fds and fill block. Returns how many
 * phases have results; *oom when one could not run. */
static size_t run_phases(struct randio_plan *p, struct phase_result *res, int *oom)
{
    const struct randio_opts *o = p->o;
    size_t nres = 0;
    struct phase_opts prep = {
        .name = "prepare",
        .unit = "files",
        .threads = (unsigned)o->c.threads,
        .interval_s = o->c.interval_s,
        .progress = o->c.progress,
        .expected_ops = o->files,
        .with_bytes = 1,
    };
    if (phase_run(&res[0], &prep, prepare_worker, p) != 0 && !res[0].lat)
        *oom = 1;
    else
        nres = 1;
    if (!*oom && !o->prepare_only && !phase_result_ends_run(&res[0])) {
        if (run_io(p, &res[1]) != 0 && !res[1].lat)
            *oom = 1;
        else
            nres = 2;
    }
    close_files(p);
    close(p->rootfd);
    free(p->fds);
    free(p->fill);
    return nres;
}

/* Report: the document. Returns the exit code. */
static int write_report(struct randio_plan *p, struct phase_result *res, size_t nres, int oom)
{
    struct report rep = {
        .workload = "randio",
        .write_params = write_params,
        .params_arg = p,
        .phases = res,
        .nphases = nres,
        .out_of_memory = oom,
    };
    int code = report_finish(&rep, p->o->c.out);
    phase_results_free(res, nres);
    return code;
}

int randio_main(int argc, char **argv)
{
    int code = parse_args(argc, argv);
    if (code == CLI_CONTINUE)
        code = make_plan(&plan, &opts);
    if (code != CLI_CONTINUE)
        return code;
    static struct phase_result res[2];
    int oom = 0;
    size_t nres = run_phases(&plan, res, &oom);
    return write_report(&plan, res, nres, oom);
}
