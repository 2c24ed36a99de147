/* meta.c - "meta" workload: create / open / stat / read / delete phases over
 * a tree of small files, like bonnie++ -n and the XFS log study.
 *
 * The directories (or DIR itself with --dirs 0) are opened once per run and
 * their fds shared by all threads: every file operation is a single *at()
 * call relative to a directory fd, with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW,
 * so no path is walked and no symlink is followed.
 *
 * The directories are made and removed outside the file phases' timed
 * windows, in directory phases of their own ("dir_phases" in the JSON):
 * "mkdir" before each create phase (mkdirat and open, threads sharing the
 * directories), "rmdir" after each delete phase. Any other phase first
 * opens the directories not open yet, untimed.
 *
 * Each thread of a file phase has a fixed share (meta_share, split.h): whole
 * directories when there are at least as many directories as threads, so no
 * two threads work in one directory; else a chunk of one directory's
 * files. A share is a contiguous block of file indices, visited in order or
 * in a keyed permutation of the block (meta_order_init_share).
 *
 * This file holds the pure parts, the options, the plan, the run and the
 * report; the phases are in meta_phases.c and the visit order, which both
 * use, in meta_order.c.
 */
#include "meta.h"
#include "meta_plan.h"

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
#include "report.h"
#include "signals.h"
#include "timing.h"

#define META_DEFAULT_PHASES "create:seq,open:rand,stat:rand,read:rand,delete:seq"

const char *const meta_op_names[] = {"create", "open", "stat", "read", "delete", NULL};
static const char *const fsync_names[] = {"none", "file", "dir", NULL};
static const char *const content_names[] = {"zero", "random", NULL};
static const char *const sync_names[] = {"none", "end", NULL};

/* ---- pure helpers (also used by the C tests) ---------------------------- */

int meta_parse_phases(const char *s, struct meta_phases *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *p = s;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        size_t nlen = colon ? (size_t)(colon - p) : len;
        int op = -1;
        for (int k = 0; k < META_NOPS; k++)
            if (strlen(meta_op_names[k]) == nlen && strncmp(p, meta_op_names[k], nlen) == 0)
                op = k;
        if (op < 0) {
            snprintf(err, errlen,
                     "expected a list of create|open|stat|read|delete[:seq|rand] joined by ',', got '%s'",
                     s);
            return -1;
        }
        int random = 0;
        if (colon) {
            const char *ord = colon + 1;
            size_t olen = len - nlen - 1;
            if ((olen == 3 && strncmp(ord, "seq", 3) == 0) || (olen == 10 && strncmp(ord, "sequential", 10) == 0))
                random = 0;
            else if ((olen == 4 && strncmp(ord, "rand", 4) == 0) || (olen == 6 && strncmp(ord, "random", 6) == 0))
                random = 1;
            else {
                snprintf(err, errlen, "order must be seq or rand (e.g. open:rand), got '%s'", s);
                return -1;
            }
        }
        if (out->n == META_MAX_PHASES) {
            snprintf(err, errlen, "at most %d phases, got '%s'", META_MAX_PHASES, s);
            return -1;
        }
        out->p[out->n++] = (struct meta_phase){.op = op, .random = random};
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

int meta_parse_size(const char *s, struct meta_size *out, char *err, size_t errlen)
{
    char buf[64];
    const char *colon = strchr(s, ':');
    uint64_t lo, hi;
    int ok;
    if (colon) {
        size_t n = (size_t)(colon - s);
        ok = n < sizeof buf;
        if (ok) {
            memcpy(buf, s, n);
            buf[n] = '\0';
            ok = cli_parse_size(buf, &lo) == 0 && cli_parse_size(colon + 1, &hi) == 0;
        }
    } else {
        ok = cli_parse_size(s, &lo) == 0;
        hi = lo;
    }
    if (!ok || lo > hi || hi > META_MAX_FILE_SIZE) {
        snprintf(err, errlen, "expected MIN[:MAX] bytes (suffix K, M, G), MIN <= MAX <= 1G, got '%s'", s);
        return -1;
    }
    out->min = lo;
    out->max = hi;
    return 0;
}

int meta_layout_init(struct meta_layout *l, uint64_t files, uint64_t dirs)
{
    memset(l, 0, sizeof *l);
    if (files < 1 || files > META_MAX_FILES || dirs > files)
        return -1;
    l->files = files;
    l->dirs = dirs;
    if (dirs == 0)
        return shape_from_fans(&l->names, &files, 1);
    l->per = files / dirs;
    l->rem = files % dirs;
    uint64_t fan[2] = {dirs, l->per + (l->rem ? 1 : 0)};
    return shape_from_fans(&l->names, fan, 2);
}

/* ---- the workload --------------------------------------------------------- */

static int parse_phases(const char *val, void *dst, char *err, size_t errlen)
{
    return meta_parse_phases(val, dst, err, errlen);
}

static int parse_size(const char *val, void *dst, char *err, size_t errlen)
{
    return meta_parse_size(val, dst, err, errlen);
}

static void write_params(struct json *j, const void *arg)
{
    const struct meta_plan *p = arg;
    const struct meta_opts *o = p->o;
    json_obj_begin(j);
    json_key(j, "dir");
    json_str(j, o->c.dir);
    json_key(j, "files");
    json_u64(j, o->files);
    json_key(j, "dirs");
    json_u64(j, o->dirs);
    json_key(j, "files_per_dir");
    json_u64(j, o->dirs ? p->lay.names.fan[1] : o->files);
    json_key(j, "size_min");
    json_u64(j, o->size.min);
    json_key(j, "size_max");
    json_u64(j, o->size.max);
    json_key(j, "content");
    json_str(j, content_names[o->content]);
    json_key(j, "phases");
    json_arr_begin(j);
    for (unsigned k = 0; k < o->phases.n; k++) {
        json_obj_begin(j);
        json_key(j, "name");
        json_str(j, meta_op_names[o->phases.p[k].op]);
        json_key(j, "order");
        json_str(j, o->phases.p[k].random ? "random" : "sequential");
        json_obj_end(j);
    }
    json_arr_end(j);
    json_key(j, "fsync");
    json_str(j, fsync_names[o->fsync]);
    json_key(j, "sync");
    json_str(j, sync_names[o->sync]);
    json_key(j, "threads");
    json_u64(j, o->c.threads);
    json_key(j, "seed");
    json_u64(j, o->c.seed);
    json_key(j, "allow_existing");
    json_bool(j, o->c.allow_existing);
    json_key(j, "pair_dir");
    if (o->pair_dir)
        json_str(j, o->pair_dir);
    else
        json_null(j);
    json_key(j, "interval_s");
    json_double(j, o->c.interval_s);
    json_key(j, "files_per_work_item");
    json_u64(j, p->chunk);
    json_key(j, "split");
    meta_write_split(j, p);
    json_obj_end(j);
}

/* ---- the command line: options, parse, plan, run, report ------------------ */

static struct meta_opts opts;
static struct meta_plan plan;

static struct opt_spec specs[] = {
    COMMON_OPT_DIR(opts.c, "The target directory. It must exist and be empty unless --allow-existing."),
    COMMON_OPT_THREADS(opts.c, "Threads sharing each phase's files."),
    COMMON_OPT_SEED(opts.c, "Seeds the random orders, the file sizes and --content random."),
    COMMON_OPT_ALLOW_EXISTING(opts.c, "Run on a non-empty DIR: existing directories are reused, files that create "
                                      "finds are counted in \"existing\". Needed to run open, stat, read or delete "
                                      "on a tree an earlier call made."),
    COMMON_OPT_OUT(opts.c),
    COMMON_OPT_PROGRESS(opts.c),
    COMMON_OPT_INTERVAL(opts.c),
    {.name = "--files", .type = OPT_U64, .dst = &opts.files, .required = 1, .min = 1, .max = META_MAX_FILES,
     .help = "Number of files."},
    {.name = "--dirs", .type = OPT_U64, .dst = &opts.dirs, .required = 1, .min = 0, .max = META_MAX_FILES,
     .metavar = "K",
     .help = "Number of directories, at most --files; 0: the files are directly in DIR. The names are tree's: "
             "--files 10000 --dirs 10 makes the names of tree --shape 10x1000."},
    {.name = "--size", .type = OPT_CUSTOM, .dst = &opts.size, .parse = parse_size, .metavar = "MIN[:MAX]",
     .def = "0",
     .help = "Bytes written per file by create: uniform in MIN..MAX, at most 1G; a file's size depends only on "
             "--seed and its index."},
    {.name = "--content", .type = OPT_ENUM, .dst = &opts.content, .choices = content_names, .def = "zero",
     .help = "zero: zero bytes (written, not holes). random: pseudo-random bytes from --seed, each file starting "
             "at a different offset of one buffer."},
    {.name = "--phases", .type = OPT_CUSTOM, .dst = &opts.phases, .parse = parse_phases, .metavar = "LIST",
     .def = META_DEFAULT_PHASES,
     .help = "The phases in order, joined by ',': create, open, stat, read, delete, each with :seq or :rand (no "
             "suffix: seq). Up to 16, repeats allowed. The default is the XFS log study's."},
    {.name = "--fsync", .type = OPT_ENUM, .dst = &opts.fsync, .choices = fsync_names, .def = "none",
     .help = "file: fsync each created file before close. dir: also fsync the file's directory after each "
             "create and unlink, and DIR after each mkdir and rmdir."},
    {.name = "--sync", .type = OPT_ENUM, .dst = &opts.sync, .choices = sync_names, .def = "none",
     .help = "end: the last thread to finish a create phase calls syncfs(2) on DIR's file system before the "
             "phase's clock stops, so the phase ends when the files it made are on the device (a durable "
             "create timed as one). none: what create wrote may still be in the page cache when it ends."},
    {.name = "--pair-dir", .type = OPT_STR, .dst = &opts.pair_dir, .metavar = "PDIR", .def_text = "no pair",
     .help = "A directory on another file system holding the same files (as an earlier meta call with the same "
             "--files, --dirs and --size made them): in the open, stat and read phases each file is also "
             "opened, statted or read in PDIR, the two one after the other (which first alternates) and timed "
             "apart, so that a slow moment of the host falls on both. Such a phase reports both sums and their "
             "ratio (\"paired\"); its latencies are the target's ops alone, its seconds the whole phase's."},
    {0},
};

const struct cli_command meta_command = {
    .name = "meta",
    .summary = "create/open/stat/read/delete phases over small files (bonnie++ -n)",
    .synopsis = "--dir DIR --files N --dirs K [OPTION]...",
    .notes = "Each phase is timed on its own and visits every file once, in sequential or seeded random order. "
             "Each thread has whole directories of its own when there are at least as many directories as "
             "threads, else a chunk of one directory; a random order is a permutation of each thread's share. "
             "The directories are made before each create phase and removed after each delete phase, timed "
             "apart (\"dir_phases\").",
};

/* Parse: the arguments into opts. CLI_CONTINUE or the exit code. */
static int parse_args(int argc, char **argv)
{
    memset(&opts, 0, sizeof opts);
    int code = cli_parse_command(&meta_command, argc, argv, specs);
    if (code != CLI_CONTINUE)
        return code;
    if (opts.dirs > opts.files) {
        cli_error("--dirs: expected at most --files (%llu), got '%llu'", (unsigned long long)opts.files,
                  (unsigned long long)opts.dirs);
        return EXIT_USAGE;
    }
    return CLI_CONTINUE;
}

/* --pair-dir, opened: an existing directory other than --dir. The fd, or -1
 * after the error. */
static int open_pair(const struct meta_opts *o)
{
    int fd = open(o->pair_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        cli_error("--pair-dir: cannot open '%s': %s", o->pair_dir, e == ENOTDIR ? "not a directory" : strerror(e));
        return -1;
    }
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(o->c.dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        cli_error("--pair-dir: '%s' is --dir itself; a pair is another directory holding the same files",
                  o->pair_dir);
        close(fd);
        return -1;
    }
    return fd;
}

/* Plan: the layout, the open-file limit, the signal handlers and DIR (the
 * last check that exits 2). CLI_CONTINUE or the exit code. */
static int check_and_open(struct meta_plan *p, const struct meta_opts *o)
{
    memset(p, 0, sizeof *p);
    if (meta_layout_init(&p->lay, o->files, o->dirs) != 0) {
        cli_error("--files: too many files, got '%llu'", (unsigned long long)o->files);
        return EXIT_USAGE;
    }
    p->ndirfds = o->dirs ? o->dirs : 1;
    uint64_t limit;
    if (common_ensure_nofile((o->pair_dir ? 2 : 1) * p->ndirfds + o->c.threads + 64, &limit) != 0) {
        cli_error("--dirs: %llu directories are kept open, but the open-file limit is %llu",
                  (unsigned long long)o->dirs, (unsigned long long)limit);
        return EXIT_USAGE;
    }
    if (signals_install() != 0) {
        cli_error("cannot install signal handlers: %s", strerror(errno));
        return EXIT_FAILED;
    }
    p->pairfd = -1;
    if (o->pair_dir && (p->pairfd = open_pair(o)) < 0)
        return EXIT_USAGE;
    p->rootfd = common_open_target(&o->c);
    if (p->rootfd < 0 && p->pairfd >= 0)
        close(p->pairfd);
    return p->rootfd < 0 ? EXIT_USAGE : CLI_CONTINUE;
}

/* Plan, continued: the directory fds, the content, the sizes' key and the
 * chunk of positions per work item. CLI_CONTINUE or the exit code. */
static int make_plan(struct meta_plan *p, const struct meta_opts *o)
{
    int code = check_and_open(p, o);
    if (code != CLI_CONTINUE)
        return code;
    p->o = o;
    p->dirfds = malloc(p->ndirfds * sizeof *p->dirfds);
    p->pair_dirfds = p->pairfd >= 0 ? malloc(p->ndirfds * sizeof *p->pair_dirfds) : NULL;
    size_t content_len = o->size.max ? (o->size.max < META_IO_CHUNK ? o->size.max : META_IO_CHUNK) + META_CONTENT_SLACK : 0;
    p->content = content_len ? calloc(1, content_len) : NULL;
    if (!p->dirfds || (content_len && !p->content) || (p->pairfd >= 0 && !p->pair_dirfds)) {
        cli_error("out of memory");
        free(p->dirfds);
        free(p->pair_dirfds);
        free(p->content);
        close(p->rootfd);
        if (p->pairfd >= 0)
            close(p->pairfd);
        return EXIT_FAILED;
    }
    for (uint64_t j = 0; j < p->ndirfds; j++) {
        p->dirfds[j] = o->dirs ? -1 : p->rootfd;
        if (p->pair_dirfds)
            p->pair_dirfds[j] = o->dirs ? -1 : p->pairfd;
    }
    uint64_t st = o->c.seed;
    p->size_key = splitmix64(&st);
    if (p->content && o->content == CONTENT_RANDOM)
        prng_fill(p->content, content_len, splitmix64(&st), 0);
    p->chunk = 0;
    for (unsigned t = 0; t < o->c.threads; t++) {
        struct split_share sh;
        uint64_t begin, end;
        meta_share(&p->lay, (unsigned)o->c.threads, t, &sh, &begin, &end);
        if (end - begin > p->chunk)
            p->chunk = end - begin;
    }
    return CLI_CONTINUE;
}

/* A directory phase (meta_mkdir_worker or meta_rmdir_worker) belonging to file phase
 * k, into *d. 0, or -1 when out of memory. */
static int run_dir_phase(struct meta_plan *p, struct phase_result *d, const char *name, phase_worker_fn fn,
                         unsigned k)
{
    const struct meta_opts *o = p->o;
    atomic_store(&p->next_dir, 0);
    struct phase_opts po = {
        .name = name,
        .unit = "dirs",
        .threads = (unsigned)o->c.threads,
        .interval_s = o->c.interval_s,
        .progress = 0, /* --progress lines are the file phases' */
        .expected_ops = p->lay.dirs,
        .run = k,
        .no_sync = 1,
    };
    return phase_run(d, &po, fn, p) != 0 && !d->lat ? -1 : 0;
}

/* Run: the phases in order, until one ends the run; then close and free
 * the directories and the content. The directory phases go to dres
 * (*ndres of them, at most one per file phase). Returns how many phases
 * have results; *oom when one could not run for lack of memory. */
static size_t run_phases(struct meta_plan *p, struct phase_result *res, struct phase_result *dres,
                         size_t *ndres, int *oom)
{
    const struct meta_opts *o = p->o;
    size_t nres = 0;
    *ndres = 0;
    for (unsigned k = 0; k < o->phases.n; k++) {
        const struct meta_phase *ph = &o->phases.p[k];
        p->op = ph->op;
        p->random = ph->random;
        p->phase_index = k;
        struct phase_opts po = {
            .name = meta_op_names[ph->op],
            .unit = "files",
            .threads = (unsigned)o->c.threads,
            .interval_s = o->c.interval_s,
            .progress = o->c.progress,
            .expected_ops = o->files,
            .order = ph->random ? "random" : "sequential",
            .with_bytes = 1,
            .per_thread = 1,
        };
        uint64_t made = 0;
        atomic_store(&p->threads_done, 0);
        atomic_store(&p->pair_own_ns, 0);
        atomic_store(&p->pair_pair_ns, 0);
        if (p->lay.dirs && ph->op == META_CREATE) {
            struct phase_result *d = &dres[(*ndres)++];
            if (run_dir_phase(p, d, "mkdir", meta_mkdir_worker, k) != 0) {
                (*ndres)--;
                *oom = 1;
                break;
            }
            if (phase_result_ends_run(d)) {
                /* the create phase did not start: it carries the mkdir phase's error or interruption */
                if (phase_result_not_run(&res[k], &po, d) != 0)
                    *oom = 1;
                else
                    nres = k + 1;
                break;
            }
            made = d->ops;
        } else {
            char where[PHASE_WHERE_MAX];
            int err = meta_open_dirs(p, where, sizeof where);
            if (err) {
                if (phase_result_setup_failed(&res[k], &po, err, where) != 0) {
                    *oom = 1;
                    break;
                }
                nres = k + 1;
                break;
            }
        }
        if (phase_run(&res[k], &po, meta_file_worker, p) != 0 && !res[k].lat) {
            *oom = 1;
            break;
        }
        nres = k + 1;
        res[k].dirs = made; /* made by its mkdir phase, outside its timed window */
        if (p->pairfd >= 0 && meta_op_pairs(ph->op)) {
            res[k].paired = 1;
            res[k].pair = o->pair_dir;
            res[k].paired_own_s = (double)atomic_load(&p->pair_own_ns) / 1e9;
            res[k].paired_pair_s = (double)atomic_load(&p->pair_pair_ns) / 1e9;
        }
        if (phase_result_ends_run(&res[k]))
            break;
        if (p->lay.dirs && ph->op == META_DELETE) {
            struct phase_result *d = &dres[(*ndres)++];
            if (run_dir_phase(p, d, "rmdir", meta_rmdir_worker, k) != 0) {
                (*ndres)--;
                *oom = 1;
                break;
            }
            res[k].dirs = d->ops; /* removed by its rmdir phase, outside its timed window */
            if (phase_result_ends_run(d))
                break;
        }
    }
    meta_close_dirs(p);
    close(p->rootfd);
    free(p->dirfds);
    free(p->pair_dirfds);
    free(p->content);
    return nres;
}

/* Report: the document. Returns the exit code. */
static int write_report(struct meta_plan *p, struct phase_result *res, size_t nres, struct phase_result *dres,
                        size_t ndres, int oom)
{
    struct report rep = {
        .workload = "meta",
        .write_params = write_params,
        .params_arg = p,
        .phases = res,
        .nphases = nres,
        .with_dir_phases = 1,
        .dir_phases = dres,
        .ndir_phases = ndres,
        .out_of_memory = oom,
    };
    int code = report_finish(&rep, p->o->c.out);
    phase_results_free(res, nres);
    phase_results_free(dres, ndres);
    return code;
}

int meta_main(int argc, char **argv)
{
    int code = parse_args(argc, argv);
    if (code == CLI_CONTINUE)
        code = make_plan(&plan, &opts);
    if (code != CLI_CONTINUE)
        return code;
    static struct phase_result res[META_MAX_PHASES], dres[META_MAX_PHASES];
    size_t ndres = 0;
    int oom = 0;
    size_t nres = run_phases(&plan, res, dres, &ndres, &oom);
    return write_report(&plan, res, nres, dres, ndres, oom);
}
