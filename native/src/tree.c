/* tree.c - "tree" workload: make a tree of files, with a fixed fan-out
 * (--layout fixed, --shape) or a seeded random folder structure (--layout
 * random, --files; see rlayout.h). Files are empty unless --size asks for
 * bytes (see filedata.h).
 *
 * The directories are made first, in a directory phase of their own
 * ("mkdir" in "dir_phases"), outside the timed window of the create phase:
 * threads take the directories that hold files one at a time and walk from
 * the target directory fd down to each with mkdirat (EEXIST is fine: another
 * thread made it) and openat(O_DIRECTORY|O_NOFOLLOW).
 *
 * In the create phase each thread has a fixed share (split.h) of the
 * directories that hold files, in visit order (in order, or shuffled with
 * --order random): whole directories when there are at least as many as
 * threads, so no two threads create in one directory; else a chunk of one
 * directory's files. Each thread walks down to its directories with openat
 * only, keeping the fds of its current path open so consecutive directories
 * share the prefix.
 * Files are created with openat(O_CREAT|O_EXCL|O_NOFOLLOW), written, and
 * closed relative to the directory fd; an empty file with no fsync is made
 * with one mknodat(S_IFREG) instead (--create-call auto): the same file
 * without the open file the program never uses, and one system call
 * instead of two. No absolute path is ever built and no symlink is ever
 * followed (mknodat, like O_CREAT|O_EXCL, fails with EEXIST on a symlink).
 *
 * This file holds the options, the plan and the report; the phases are in
 * tree_create.c.
 */
#include "tree.h"
#include "tree_plan.h"

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
#include "filedata.h"
#include "phase.h"
#include "prng.h"
#include "report.h"
#include "rlayout.h"
#include "shape.h"
#include "signals.h"
#include "split.h"
#include "timing.h"

static const char *const order_names[] = {"sequential", "random", NULL};
static const char *const fsync_names[] = {"none", "file", "dir", NULL};
static const char *const layout_names[] = {"fixed", "random", NULL};
static const char *const create_call_names[] = {"auto", "open", "mknod", NULL};


static int parse_shape(const char *val, void *dst, char *err, size_t errlen)
{
    return shape_parse(val, dst, err, errlen);
}

static int parse_size(const char *val, void *dst, char *err, size_t errlen)
{
    return filedata_parse_size(val, dst, err, errlen);
}

static void write_params(struct json *j, const void *arg)
{
    const struct tree_plan *p = arg;
    const struct tree_opts *o = p->o;
    json_obj_begin(j);
    json_key(j, "dir");
    json_str(j, o->c.dir);
    json_key(j, "shape");
    if (p->random_layout) {
        json_null(j);
    } else {
        json_arr_begin(j);
        for (unsigned l = 0; l < o->shape.nlevels; l++)
            json_u64(j, o->shape.fan[l]);
        json_arr_end(j);
    }
    json_key(j, "files");
    json_u64(j, p->files);
    json_key(j, "dirs");
    json_u64(j, p->dirs);
    json_key(j, "leaf_dirs");
    if (p->random_layout)
        json_u64(j, p->lay.leaf_dirs);
    else
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
    json_key(j, "layout");
    json_str(j, layout_names[o->layout]);
    json_key(j, "depth");
    json_u64(j, p->random_layout ? p->lay.depth : o->shape.nlevels - 1);
    json_key(j, "max_depth");
    if (p->random_layout)
        json_u64(j, o->max_depth);
    else
        json_null(j);
    json_key(j, "files_per_dir_max");
    if (p->random_layout)
        json_u64(j, o->files_per_dir_max);
    else
        json_null(j);
    json_key(j, "size_min");
    json_u64(j, filedata_size_min(&o->size));
    json_key(j, "size_max");
    json_u64(j, filedata_size_max(&o->size));
    json_key(j, "size_align");
    json_u64(j, o->size.align);
    json_key(j, "content");
    json_str(j, filedata_content_names[o->content]);
    json_key(j, "create_call");
    json_str(j, atomic_load(&p->use_mknod) ? "mknod" : "open");
    json_key(j, "split");
    tree_write_split(j, p);
    json_obj_end(j);
}

/* ---- the command line: options, parse, plan, run, report ------------------ */

static struct tree_opts opts; /* static: struct shape is a few hundred bytes */
static struct tree_plan plan;

static struct opt_spec specs[] = {
    COMMON_OPT_DIR(opts.c, "The target directory. It must exist and be empty unless --allow-existing."),
    COMMON_OPT_THREADS(opts.c, "Threads making the files."),
    COMMON_OPT_SEED(opts.c, "Seeds --order random, the random layout, the file sizes and --content random."),
    COMMON_OPT_ALLOW_EXISTING(opts.c, "Allow a non-empty DIR: existing directories are reused, files that already "
                                      "exist are counted in \"existing\" and not opened."),
    COMMON_OPT_OUT(opts.c),
    COMMON_OPT_PROGRESS(opts.c),
    COMMON_OPT_INTERVAL(opts.c),
    {.name = "--shape", .type = OPT_CUSTOM, .dst = &opts.shape, .parse = parse_shape, .metavar = "AxBx...xF",
     .def_text = "required with --layout fixed",
     .help = "Fixed layout: the fan-out per level, the last number the files per leaf directory (10x1000: 10 "
             "directories of 1000 files; N: N files directly in DIR). Up to 16 levels, each 1..1e12."},
    {.name = "--order", .type = OPT_ENUM, .dst = &opts.order, .choices = order_names, .def = "sequential",
     .help = "random: shuffle the directories and the files inside each, reproducibly from --seed."},
    {.name = "--fsync", .type = OPT_ENUM, .dst = &opts.fsync, .choices = fsync_names, .def = "none",
     .help = "file: fsync each file before close. dir: also fsync each directory after the thread's files in it."},
    {.name = "--layout", .type = OPT_ENUM, .dst = &opts.layout, .choices = layout_names, .def = "fixed",
     .help = "fixed: the fan-out tree of --shape. random: a seeded random folder structure of --files files "
             "(the degradation study's mktemp -d loop)."},
    {.name = "--files", .type = OPT_U64, .dst = &opts.files, .min = 1, .max = RLAYOUT_MAX_FILES,
     .def_text = "required with --layout random",
     .help = "Random layout: the files in total; exactly this many are made."},
    {.name = "--max-depth", .type = OPT_U64, .dst = &opts.max_depth, .min = 1, .max = RLAYOUT_MAX_DEPTH,
     .metavar = "D", .def = "4", .help = "Random layout: directories lie 1..D levels below DIR."},
    {.name = "--files-per-dir-max", .type = OPT_U64, .dst = &opts.files_per_dir_max, .min = 1,
     .max = RLAYOUT_MAX_FILES_PER_DIR, .metavar = "M", .def = "16383",
     .help = "Random layout: each directory gets a uniform 1..M files (the last one what is left); 16383 is the "
             "study's $RANDOM/2."},
    {.name = "--size", .type = OPT_CUSTOM, .dst = &opts.size, .parse = parse_size,
     .metavar = "S|MIN:MAX|bonnie:MAX[:MIN]", .def = "0",
     .help = "Bytes written to each file: S, uniform in MIN..MAX, or bonnie++ -n's MAX[:MIN] (MIN default 0); "
             "at most 1G. A file's size depends only on --seed and the file's number."},
    {.name = "--size-align", .type = OPT_SIZE, .dst = &opts.size_align, .min = 1, .max = FILEDATA_MAX_SIZE,
     .metavar = "B", .def = "1",
     .help = "Sizes are multiples of B: B x uniform(ceil(MIN/B)..floor(MAX/B)); a fixed S must be a multiple of "
             "B."},
    {.name = "--content", .type = OPT_ENUM, .dst = &opts.content, .choices = filedata_content_names,
     .def = "zero", .help = "zero: zero bytes (written, not holes). random: pseudo-random bytes from --seed."},
    {.name = "--create-call", .type = OPT_ENUM, .dst = &opts.create_call, .choices = create_call_names,
     .def = "auto",
     .help = "open: openat(O_CREAT|O_EXCL) and close per file. mknod: one mknodat(S_IFREG) per file (empty "
             "files without --fsync only). auto: mknod where it can, else open. params.create_call reports "
             "the call used."},
    {0},
};

const struct cli_command tree_command = {
    .name = "tree",
    .summary = "a tree of files: fixed fan-out (--shape) or random (--layout random)",
    .synopsis = "--dir DIR --shape AxBx...xF [OPTION]...\n--dir DIR --layout random --files N [OPTION]...",
    .notes = "One timed phase, create. The directories are made before it, timed apart (the mkdir phase in "
             "\"dir_phases\"). Each thread creates in whole directories of its own when there are at least as "
             "many directories holding files as threads, else in a chunk of one directory. "
             "Directories are d and files f, each followed by a zero-padded index; "
             "random-layout directories have mktemp-like names. The same --seed gives the same tree, whatever "
             "--threads and --order.",
};

/* Checks across options after parsing. Returns 0 or -1 after a one-line
 * message (exit 2). */
static int check_options(struct tree_opts *o)
{
    char err[CLI_ERR_MAX];
    if (o->layout == LAYOUT_FIXED) {
        if (!cli_given(specs, "--shape")) {
            cli_error("--shape: required argument missing");
            return -1;
        }
        static const char *const random_only[] = {"--files", "--max-depth", "--files-per-dir-max"};
        for (size_t k = 0; k < 3; k++) {
            if (cli_given(specs, random_only[k])) {
                cli_error("%s: only with --layout random", random_only[k]);
                return -1;
            }
        }
    } else {
        if (cli_given(specs, "--shape")) {
            cli_error("--shape: not with --layout random (give --files)");
            return -1;
        }
        if (!cli_given(specs, "--files")) {
            cli_error("--files: required with --layout random");
            return -1;
        }
        uint64_t expect = rlayout_expected_dirs(o->files, o->files_per_dir_max);
        if (expect > RLAYOUT_MAX_DIRS) {
            cli_error("--files-per-dir-max: %llu files with at most %llu per directory make about %llu "
                      "directories; at most %llu are supported",
                      (unsigned long long)o->files, (unsigned long long)o->files_per_dir_max,
                      (unsigned long long)expect, (unsigned long long)RLAYOUT_MAX_DIRS);
            return -1;
        }
    }
    if (filedata_size_align(&o->size, o->size_align, err, sizeof err) != 0) {
        cli_error("--size-align: %s", err);
        return -1;
    }
    if (o->create_call == CREATE_MKNOD && (filedata_size_max(&o->size) > 0 || o->fsync != FSYNC_NONE)) {
        cli_error("--create-call: mknod makes empty files and keeps no fd to fsync; not with --size above 0 "
                  "or --fsync");
        return -1;
    }
    return 0;
}

/* Parse: the arguments into opts, checked across options. CLI_CONTINUE or
 * the exit code. */
static int parse_args(int argc, char **argv)
{
    memset(&opts, 0, sizeof opts);
    int code = cli_parse_command(&tree_command, argc, argv, specs);
    if (code != CLI_CONTINUE)
        return code;
    return check_options(&opts) != 0 ? EXIT_USAGE : CLI_CONTINUE;
}

/* The seeds, the file data, the layout and the work items. 0, or -1 when
 * out of memory. */
static int derive(struct tree_plan *p, const struct tree_opts *o)
{
    uint64_t st = o->c.seed;
    uint64_t order_key = splitmix64(&st);
    p->file_key = splitmix64(&st);
    uint64_t data_seed = splitmix64(&st);
    uint64_t layout_seed = splitmix64(&st);
    if (filedata_init(&p->data, &o->size, o->content, data_seed) != 0)
        return -1;
    if (p->random_layout) {
        if (rlayout_build(&p->lay, o->files, (unsigned)o->max_depth, o->files_per_dir_max, layout_seed) != 0)
            return -1;
        p->files = p->lay.files;
        p->dirs = p->lay.ndirs;
        p->items = p->lay.ndirs;
    } else {
        p->files = o->shape.files;
        p->dirs = o->shape.dirs;
        p->items = o->shape.leaves;
    }
    perm_init(&p->leaf_perm, p->items, order_key);
    tree_plan_chunk(p, (unsigned)o->c.threads);
    return 0;
}

/* Plan: the open-file limit, the signal handlers, DIR (the last check that
 * exits 2), then the work. CLI_CONTINUE or the exit code; *oom set when
 * the work could not be planned. */
static int make_plan(struct tree_plan *p, const struct tree_opts *o, int *oom)
{
    /* each thread keeps one fd per directory level and one file open */
    uint64_t levels = o->layout == LAYOUT_RANDOM ? o->max_depth : o->shape.nlevels, limit;
    (void)common_ensure_nofile(o->c.threads * (levels + 1) + 64, &limit);
    if (signals_install() != 0) {
        cli_error("cannot install signal handlers: %s", strerror(errno));
        return EXIT_FAILED;
    }
    int rootfd = common_open_target(&o->c);
    if (rootfd < 0)
        return EXIT_USAGE;
    memset(p, 0, sizeof *p);
    p->o = o;
    p->random_layout = o->layout == LAYOUT_RANDOM;
    p->rootfd = rootfd;
    *oom = derive(p, o) != 0;
    atomic_init(&p->next_item, 0);
    atomic_init(&p->use_mknod, o->create_call == CREATE_MKNOD ||
                                   (o->create_call == CREATE_AUTO && filedata_size_max(&o->size) == 0 &&
                                    o->fsync == FSYNC_NONE));
    return CLI_CONTINUE;
}

/* Run: the mkdir phase (when there are directories), then the create
 * phase (unless out of memory or the mkdir phase ended the run); closes DIR.
 * *ndres: 1 when the mkdir phase ran. */
static void run_phase(struct tree_plan *p, struct phase_result *res, struct phase_result *dres, size_t *ndres,
                      int *nres, int *oom)
{
    const struct tree_opts *o = p->o;
    *ndres = 0;
    *nres = 0;
    uint64_t made = 0;
    if (!*oom && p->dirs > 0) {
        struct phase_opts dpo = {
            .name = "mkdir",
            .unit = "dirs",
            .threads = (unsigned)o->c.threads,
            .interval_s = o->c.interval_s,
            .progress = 0, /* --progress lines are the file phases' */
            .expected_ops = p->dirs,
            .no_sync = 1,
        };
        atomic_store(&p->next_item, 0);
        if (phase_run(dres, &dpo, tree_mkdir_worker, p) != 0 && !dres->lat) {
            *oom = 1;
        } else {
            *ndres = 1;
            made = dres->ops;
        }
    }
    struct phase_opts po = {
        .name = "create",
        .unit = "files",
        .threads = (unsigned)o->c.threads,
        .interval_s = o->c.interval_s,
        .progress = o->c.progress,
        .expected_ops = p->files,
        .with_bytes = filedata_size_max(&o->size) > 0,
        .per_thread = 1,
    };
    if (!*oom && *ndres && phase_result_ends_run(dres)) {
        /* the create phase did not start: it carries the mkdir phase's error or interruption */
        if (phase_result_not_run(res, &po, dres) != 0)
            *oom = 1;
        else
            *nres = 1;
    } else if (!*oom) {
        if (phase_run(res, &po, tree_create_worker, p) != 0 && !res->lat)
            *oom = 1;
        else {
            *nres = 1;
            res->dirs = made; /* made by the mkdir phase, outside its timed window */
        }
    }
    close(p->rootfd);
}

/* Report: the document, then free everything. Returns the exit code. */
static int write_report(struct tree_plan *p, struct phase_result *res, int nres, struct phase_result *dres,
                        size_t ndres, int oom)
{
    struct report rep = {
        .workload = "tree",
        .write_params = write_params,
        .params_arg = p,
        .phases = res,
        .nphases = oom ? 0 : (size_t)nres,
        .with_dir_phases = 1,
        .dir_phases = dres,
        .ndir_phases = ndres,
        .out_of_memory = oom,
    };
    int code = report_finish(&rep, p->o->c.out);
    phase_results_free(res, (size_t)nres);
    phase_results_free(dres, ndres);
    filedata_free(&p->data);
    rlayout_free(&p->lay);
    return code;
}

int tree_main(int argc, char **argv)
{
    int oom = 0;
    int code = parse_args(argc, argv);
    if (code == CLI_CONTINUE)
        code = make_plan(&plan, &opts, &oom);
    if (code != CLI_CONTINUE)
        return code;
    struct phase_result res, dres;
    size_t ndres;
    int nres;
    run_phase(&plan, &res, &dres, &ndres, &nres, &oom);
    return write_report(&plan, &res, nres, &dres, ndres, oom);
}
