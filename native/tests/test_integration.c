/* test_integration.c - fork/exec the built worker against mkdtemp dirs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

struct run {
    int status;       /* exit code, or 128+signal */
    char *out;        /* captured stdout */
    char *err;        /* captured stderr */
};

static char *slurp_fd(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    lseek(fd, 0, SEEK_SET);
    for (;;) {
        if (len + 1 >= cap)
            buf = realloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    return buf;
}

/* Run the worker with the NULL-terminated argument array args. */
static struct run run_worker_argv(const char *const *args)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)test_worker_path;
    for (const char *const *a = args; *a && argc < 63; a++)
        argv[argc++] = (char *)*a;
    argv[argc] = NULL;

    struct run r = {.status = -1};
    FILE *fo = tmpfile(), *fe = tmpfile();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fileno(fo), 1);
        dup2(fileno(fe), 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp_fd(fileno(fo));
    r.err = slurp_fd(fileno(fe));
    fclose(fo);
    fclose(fe);
    return r;
}

/* Run the worker with a NULL-terminated argument list. */
static struct run run_worker(const char *first, ...)
{
    const char *args[64];
    int n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < 63; a = va_arg(ap, const char *))
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    return run_worker_argv(args);
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

static char *make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/boatload-test.XXXXXX", base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static void rm_rf(const char *path)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "  warning: could not remove %s\n", path);
}

/* Collected relative paths (dirs end with '/'), sorted. */
struct listing {
    char **v;
    size_t n, cap;
};

static void add(struct listing *l, const char *s)
{
    if (l->n == l->cap)
        l->v = realloc(l->v, (l->cap = l->cap ? l->cap * 2 : 256) * sizeof *l->v);
    l->v[l->n++] = strdup(s);
}

static void walk(struct listing *l, int dfd, const char *prefix, size_t *files, size_t *dirs)
{
    int dup_fd = dup(dfd);
    DIR *d = fdopendir(dup_fd);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char rel[1024];
        snprintf(rel, sizeof rel, "%s%s", prefix, de->d_name);
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            (*dirs)++;
            strcat(rel, "/");
            add(l, rel);
            int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
            if (sub >= 0) {
                walk(l, sub, rel, files, dirs);
                close(sub);
            }
        } else {
            if (S_ISREG(st.st_mode))
                (*files)++;
            add(l, rel);
        }
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct listing list_tree(const char *root, size_t *files, size_t *dirs)
{
    struct listing l = {0};
    *files = *dirs = 0;
    int fd = open(root, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        walk(&l, fd, "", files, dirs);
        close(fd);
    }
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, cmp_str);
    return l;
}

static void listing_free(struct listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static int listings_equal(const struct listing *a, const struct listing *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0)
            return 0;
    return 1;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* A usage error: the worker's arguments (NULL-terminated) and the option
 * its message must name. */
struct bad_args {
    const char *a[16];
    const char *named;
};

/* Exit 2 with one "boatload-worker: " line naming the option, no JSON. */
static int count_bad_lines(const struct run *r, const char *named)
{
    return r->status == 2 && count_lines(r->err) == 1 && strstr(r->err, named) &&
           strncmp(r->err, "boatload-worker: ", 17) == 0 && r->out[0] == '\0';
}

/* Every case must be refused as a usage error before anything is made in
 * dir: the argument checks come first. */
static void check_bad_args(const char *dir, const struct bad_args *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct run r = run_worker_argv(cases[i].a);
        CHECKF(count_bad_lines(&r, cases[i].named), "case %zu (%s): status %d stderr '%s'", i, cases[i].named,
               r.status, r.err);
        run_free(&r);
    }
    size_t files, dirs;
    struct listing l = list_tree(dir, &files, &dirs);
    CHECKF(l.n == 0, "%zu entries created", l.n);
    listing_free(&l);
}

void test_int_version(void)
{
    struct run r = run_worker("--version", NULL);
    CHECK(r.status == 0);
    CHECKF(strcmp(r.out, "boatload-worker 0.1.0\n") == 0, "got '%s'", r.out);
    run_free(&r);
}

/* --help from the option tables: exit 0, stdout only; every workload
 * listed at the top and each one's options in its own help. */
void test_int_help(void)
{
    struct run r = run_worker("--help", NULL);
    CHECK(r.status == 0 && r.err[0] == '\0');
    CHECKF(strncmp(r.out, "usage: boatload-worker ", 23) == 0, "'%s'", r.out);
    static const char *const workloads[] = {"tree", "meta", "seqio", "randio"};
    for (size_t i = 0; i < 4; i++) {
        char line[32];
        snprintf(line, sizeof line, "\n  %-8s", workloads[i]);
        CHECKF(strstr(r.out, line), "%s not listed: '%s'", workloads[i], r.out);
    }
    run_free(&r);
    static const char *const expect[][3] = {
        {"tree", "--shape AxBx...xF", "--create-call auto|open|mknod  default auto"},
        {"meta", "--phases LIST", "--dirs K"},
        {"seqio", "--fsync-end off|on", "--runs R"},
        {"randio", "--read-pct P", "--duration SECONDS"},
    };
    for (size_t i = 0; i < 4; i++) {
        r = run_worker(expect[i][0], "--dir", "/nonexistent", "--help", NULL);
        CHECKF(r.status == 0 && r.err[0] == '\0', "%s: status %d '%s'", expect[i][0], r.status, r.err);
        CHECKF(strstr(r.out, expect[i][1]) && strstr(r.out, expect[i][2]) && strstr(r.out, "  --dir DIR "),
               "%s: '%s'", expect[i][0], r.out);
        run_free(&r);
    }
}

void test_int_counts_and_names(void)
{
    char *d = make_tmpdir();
    CHECK(d != NULL);
    if (!d)
        return;
    struct run r = run_worker("tree", "--dir", d, "--shape", "3x4x25", "--threads", "2", NULL);
    CHECKF(r.status == 0, "status %d stderr %s", r.status, r.err);
    CHECK(strstr(r.out, "\"status\":\"ok\"") != NULL);
    CHECK(strstr(r.out, "\"ops\":300,") != NULL);
    CHECK(strstr(r.out, "\"dirs\":15,") != NULL);
    size_t files, dirs;
    struct listing l = list_tree(d, &files, &dirs);
    CHECKF(files == 300 && dirs == 15, "files %zu dirs %zu", files, dirs);
    /* the exact expected set of names */
    struct listing want = {0};
    char p[128];
    for (int a = 0; a < 3; a++) {
        snprintf(p, sizeof p, "d%03d/", a);
        add(&want, p);
        for (int b = 0; b < 4; b++) {
            snprintf(p, sizeof p, "d%03d/d%03d/", a, b);
            add(&want, p);
            for (int f = 0; f < 25; f++) {
                snprintf(p, sizeof p, "d%03d/d%03d/f%06d", a, b, f);
                add(&want, p);
            }
        }
    }
    qsort(want.v, want.n, sizeof *want.v, cmp_str);
    CHECK(listings_equal(&l, &want));
    listing_free(&l);
    listing_free(&want);
    run_free(&r);

    /* a single number: files directly in DIR */
    char *d2 = make_tmpdir();
    r = run_worker("tree", "--dir", d2, "--shape", "17", "--threads", "3", NULL);
    CHECK(r.status == 0);
    l = list_tree(d2, &files, &dirs);
    CHECK(files == 17 && dirs == 0 && l.n == 17 && strcmp(l.v[0], "f000000") == 0 &&
          strcmp(l.v[16], "f000016") == 0);
    listing_free(&l);
    run_free(&r);
    rm_rf(d);
    rm_rf(d2);
    free(d);
    free(d2);
}

void test_int_random_same_set(void)
{
    char *a = make_tmpdir(), *b = make_tmpdir(), *c = make_tmpdir();
    CHECK(a && b && c);
    if (!a || !b || !c)
        return;
    struct run ra = run_worker("tree", "--dir", a, "--shape", "7x13x11", "--order", "random",
                               "--seed", "99", "--threads", "2", NULL);
    struct run rb = run_worker("tree", "--dir", b, "--shape", "7x13x11", "--order", "random",
                               "--seed", "99", "--threads", "1", NULL);
    struct run rc = run_worker("tree", "--dir", c, "--shape", "7x13x11", NULL);
    CHECK(ra.status == 0 && rb.status == 0 && rc.status == 0);
    CHECK(strstr(ra.out, "\"order\":\"random\"") && strstr(ra.out, "\"seed\":99"));
    /* every file visited exactly once: no EEXIST, nothing skipped */
    CHECK(strstr(ra.out, "\"ops\":1001,\"dirs\":98,\"bytes\":0,\"existing\":0,") &&
          strstr(rb.out, "\"ops\":1001,\"dirs\":98,\"bytes\":0,\"existing\":0,"));
    size_t fa, da, fb, db, fc, dc;
    struct listing la = list_tree(a, &fa, &da), lb = list_tree(b, &fb, &db), lc = list_tree(c, &fc, &dc);
    CHECK(fa == 1001 && da == 7 + 91);
    CHECK(listings_equal(&la, &lb));
    CHECK(listings_equal(&la, &lc));
    listing_free(&la);
    listing_free(&lb);
    listing_free(&lc);
    run_free(&ra);
    run_free(&rb);
    run_free(&rc);
    rm_rf(a);
    rm_rf(b);
    rm_rf(c);
    free(a);
    free(b);
    free(c);
}

void test_int_nonempty_exit2(void)
{
    char *d = make_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/existing", d);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    struct run r = run_worker("tree", "--dir", d, "--shape", "2x3", NULL);
    CHECK(r.status == 2);
    CHECK(count_lines(r.err) == 1 && strstr(r.err, "--dir") && strstr(r.err, "not empty"));
    CHECK(r.out[0] == '\0');
    run_free(&r);
    /* with --allow-existing it proceeds */
    r = run_worker("tree", "--dir", d, "--shape", "2x3", "--allow-existing", NULL);
    CHECK(r.status == 0 && strstr(r.out, "\"allow_existing\":true"));
    run_free(&r);
    /* existing files of the shape are counted, not failed, with --allow-existing */
    r = run_worker("tree", "--dir", d, "--shape", "2x3", "--allow-existing", NULL);
    CHECK(r.status == 0 && strstr(r.out, "\"ops\":0,") && strstr(r.out, "\"existing\":6"));
    run_free(&r);
    /* missing dir and a regular file as dir */
    r = run_worker("tree", "--dir", p, "--shape", "2", NULL);
    CHECK(r.status == 2 && count_lines(r.err) == 1 && strstr(r.err, "--dir"));
    run_free(&r);
    strcat(p, "-missing");
    r = run_worker("tree", "--dir", p, "--shape", "2", NULL);
    CHECK(r.status == 2 && count_lines(r.err) == 1 && strstr(r.err, "--dir"));
    run_free(&r);
    rm_rf(d);
    free(d);
}

void test_int_bad_args_exit2(void)
{
    char *d = make_tmpdir();
    struct bad_args cases[] = {
        {{"tree", "--dir", d, "--shape", "10x1000", "--threads", "x", NULL}, "--threads"},
        {{"tree", "--dir", d, "--shape", "10x1000", "--threads", "0", NULL}, "--threads"},
        {{"tree", "--dir", d, "--shape", "10x1000", "--threads", "257", NULL}, "--threads"},
        {{"tree", "--dir", d, "--shape", "10xx1000", NULL}, "--shape"},
        {{"tree", "--dir", d, "--shape", "10x1000", "--order", "up", NULL}, "--order"},
        {{"tree", "--dir", d, "--shape", "10x1000", "--fsync", "all", NULL}, "--fsync"},
        {{"tree", "--dir", d, "--shape", "10x1000", "--seed", "-1", NULL}, "--seed"},
        {{"tree", "--dir", d, "--shape", "10x1000", "--interval", "abc", NULL}, "--interval"},
        {{"tree", "--dir", d, "--shape", "10x1000", "--wat", NULL}, "--wat"},
        {{"tree", "--dir", d, "--shape", NULL}, "--shape"},
        {{"tree", "--shape", "10", NULL}, "--dir"},
        {{"tree", "--dir", d, NULL}, "--shape"},
        {{"nosuch", NULL}, "nosuch"},
    };
    check_bad_args(d, cases, sizeof cases / sizeof cases[0]);
    rm_rf(d);
    free(d);
}

/* Found by fuzz_args: a message that quoted an argument before its reason
 * ("X: unknown workload", "--X: unknown argument", "X: unexpected
 * argument") lost the reason when the argument was long: the message was
 * cut at 511 bytes. The argument is now shortened (64 bytes, a UTF-8
 * boundary, then "..."), so the reason always comes through. */
void test_int_long_argument_keeps_reason(void)
{
    char *d = make_tmpdir();
    char name[700], opt[700], utf8[700];
    memset(name, 'x', 600);
    name[600] = '\0';
    memcpy(opt, "--", 2);
    memset(opt + 2, 'd', 598);
    opt[600] = '\0';
    /* 2-byte characters, one byte out of step: a cut at 64 bytes would split one */
    utf8[0] = 'a';
    for (int i = 1; i < 599; i += 2)
        memcpy(utf8 + i, "\xc3\xa9", 2);
    utf8[599] = '\0';
    struct bad_args cases[] = {
        {{name, NULL}, "...: unknown workload"},
        {{"tree", "--dir", d, "--shape", "10", opt, NULL}, "...: unknown argument"},
        {{"tree", "--dir", d, "--shape", "10", name, NULL}, "...: unexpected argument"},
        {{"meta", utf8, NULL}, "...: unexpected argument"},
    };
    check_bad_args(d, cases, sizeof cases / sizeof cases[0]);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct run r = run_worker_argv(cases[i].a);
        /* "boatload-worker: " + 64 bytes at most + "..." + the reason */
        CHECKF(strlen(r.err) < 17 + 64 + 3 + 80, "case %zu: %zu bytes: '%s'", i, strlen(r.err), r.err);
        const char *dots = strstr(r.err, "...");
        CHECKF(dots && ((unsigned char)dots[-1] & 0xC0) != 0xC0, "case %zu: a character cut: '%s'", i, r.err);
        run_free(&r);
    }
    rm_rf(d);
    free(d);
}

void test_int_symlink_dir_not_followed(void)
{
    char *d = make_tmpdir(), *elsewhere = make_tmpdir();
    char link[600];
    snprintf(link, sizeof link, "%s/d000", d);
    CHECK(symlink(elsewhere, link) == 0);
    struct run r = run_worker("tree", "--dir", d, "--shape", "2x5", "--allow-existing", NULL);
    CHECKF(r.status == 1, "status %d", r.status);
    CHECK(strstr(r.out, "\"status\":\"error\"") && strstr(r.out, "\"where\":\"d000\""));
    CHECK(strstr(r.out, "\"code\":\"ELOOP\"") || strstr(r.out, "\"code\":\"ENOTDIR\""));
    size_t files, dirs;
    struct listing l = list_tree(elsewhere, &files, &dirs);
    CHECKF(l.n == 0, "%zu entries created outside the tree", l.n);
    listing_free(&l);
    run_free(&r);

    /* deeper: an intermediate directory replaced by a symlink */
    char *d2 = make_tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/d001", d2);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/d001/d000", d2);
    CHECK(symlink(elsewhere, p) == 0);
    r = run_worker("tree", "--dir", d2, "--shape", "2x2x3", "--allow-existing", NULL);
    CHECK(r.status == 1 && strstr(r.out, "\"where\":\"d001/d000\""));
    l = list_tree(elsewhere, &files, &dirs);
    CHECK(l.n == 0);
    listing_free(&l);
    run_free(&r);
    rm_rf(d);
    rm_rf(d2);
    rm_rf(elsewhere);
    free(d);
    free(d2);
    free(elsewhere);
}

void test_int_symlink_file_not_followed(void)
{
    char *d = make_tmpdir(), *elsewhere = make_tmpdir();
    char link[600], target[600];
    snprintf(link, sizeof link, "%s/f000002", d);
    snprintf(target, sizeof target, "%s/victim", elsewhere);
    CHECK(symlink(target, link) == 0);
    /* without --allow-existing: exit 2 (not empty) */
    struct run r = run_worker("tree", "--dir", d, "--shape", "5", NULL);
    CHECK(r.status == 2);
    run_free(&r);
    r = run_worker("tree", "--dir", d, "--shape", "5", "--allow-existing", NULL);
    CHECKF(r.status == 0, "status %d", r.status);
    CHECK(strstr(r.out, "\"ops\":4,") && strstr(r.out, "\"existing\":1"));
    CHECK(access(target, F_OK) != 0);
    run_free(&r);
    rm_rf(d);
    rm_rf(elsewhere);
    free(d);
    free(elsewhere);
}

void test_int_out_file(void)
{
    char *d = make_tmpdir(), *o = make_tmpdir();
    char out[600];
    snprintf(out, sizeof out, "%s/result.json", o);
    struct run r = run_worker("tree", "--dir", d, "--shape", "4x50", "--out", out, "--fsync", "dir",
                              NULL);
    CHECK(r.status == 0 && r.out[0] == '\0');
    int fd = open(out, O_RDONLY);
    CHECK(fd >= 0);
    if (fd >= 0) {
        char *s = slurp_fd(fd);
        close(fd);
        CHECK(s[0] == '{' && strstr(s, "\"status\":\"ok\"") && strstr(s, "\"fsync\":\"dir\"") &&
              strstr(s, "\"ops\":200,"));
        free(s);
    }
    size_t files, dirs;
    struct listing l = list_tree(o, &files, &dirs);
    CHECK(l.n == 1); /* no temp file left behind */
    listing_free(&l);
    run_free(&r);
    rm_rf(d);
    rm_rf(o);
    free(d);
    free(o);
}

/* ---- meta, seqio, randio -------------------------------------------------- */

/* The unsigned number after the first occurrence of key (e.g. "\"ops\":")
 * at or after from; UINT64_MAX if missing. */
static uint64_t json_num_after(const char *doc, const char *from, const char *key)
{
    const char *p = strstr(from ? from : doc, key);
    if (!p)
        return UINT64_MAX;
    return strtoull(p + strlen(key), NULL, 10);
}

/* The measured phases: the part of the document after "error" (params
 * can hold phase names too). */
static const char *phases_part(const char *doc)
{
    const char *p = strstr(doc, "\"error\":");
    return p ? p : "";
}

void test_int_meta_phases(void)
{
    char *d = make_tmpdir();
    CHECK(d != NULL);
    if (!d)
        return;
    struct run r = run_worker("meta", "--dir", d, "--files", "300", "--dirs", "7", "--size", "100:2000",
                              "--phases", "create:rand", "--threads", "2", "--seed", "5", NULL);
    CHECKF(r.status == 0, "status %d stderr %s", r.status, r.err);
    CHECK(strstr(r.out, "\"name\":\"create\",\"order\":\"random\",\"ops\":300,\"dirs\":7,"));
    uint64_t written = json_num_after(r.out, phases_part(r.out), "\"bytes\":");
    run_free(&r);
    size_t files, dirs;
    struct listing l = list_tree(d, &files, &dirs);
    CHECKF(files == 300 && dirs == 7, "files %zu dirs %zu", files, dirs);
    /* 300 / 7: dirs d000..d005 hold 43 files, d006 holds 42 */
    CHECK(l.n == 307 && strcmp(l.v[0], "d000/") == 0 && strcmp(l.v[1], "d000/f000000") == 0 &&
          strcmp(l.v[43], "d000/f000042") == 0 && strcmp(l.v[44], "d001/") == 0);
    uint64_t total = 0;
    int dfd = open(d, O_RDONLY | O_DIRECTORY);
    for (size_t i = 0; i < l.n; i++) {
        struct stat st;
        if (l.v[i][strlen(l.v[i]) - 1] == '/')
            continue;
        CHECK(fstatat(dfd, l.v[i], &st, 0) == 0 && st.st_size >= 100 && st.st_size <= 2000);
        total += (uint64_t)st.st_size;
    }
    close(dfd);
    CHECKF(total == written, "on disk %llu, reported %llu", (unsigned long long)total,
           (unsigned long long)written);
    listing_free(&l);

    r = run_worker("meta", "--dir", d, "--files", "300", "--dirs", "7", "--allow-existing", "--phases",
                   "open:rand,stat:seq,read:rand,delete:rand", "--threads", "3", NULL);
    CHECKF(r.status == 0, "status %d stderr %s", r.status, r.err);
    CHECK(strstr(r.out, "\"name\":\"open\",\"order\":\"random\",\"ops\":300,"));
    CHECK(strstr(r.out, "\"name\":\"stat\",\"order\":\"sequential\",\"ops\":300,"));
    CHECK(strstr(r.out, "\"name\":\"read\",\"order\":\"random\",\"ops\":300,"));
    CHECK(json_num_after(r.out, strstr(phases_part(r.out), "\"name\":\"read\""), "\"bytes\":") == total);
    CHECK(strstr(r.out, "\"name\":\"delete\",\"order\":\"random\",\"ops\":300,\"dirs\":7,"));
    run_free(&r);
    l = list_tree(d, &files, &dirs);
    CHECKF(l.n == 0, "%zu entries left", l.n);
    listing_free(&l);

    /* files directly in DIR, every default phase */
    r = run_worker("meta", "--dir", d, "--files", "50", "--dirs", "0", "--size", "1K", NULL);
    CHECKF(r.status == 0, "status %d stderr %s", r.status, r.err);
    CHECK(strstr(r.out, "\"name\":\"delete\",\"order\":\"sequential\",\"ops\":50,\"dirs\":0,"));
    run_free(&r);
    l = list_tree(d, &files, &dirs);
    CHECK(l.n == 0);
    listing_free(&l);
    rm_rf(d);
    free(d);
}

void test_int_meta_missing_file_exit1(void)
{
    char *d = make_tmpdir();
    struct run r = run_worker("meta", "--dir", d, "--files", "20", "--dirs", "2", "--phases", "create", NULL);
    CHECK(r.status == 0);
    run_free(&r);
    char p[600];
    snprintf(p, sizeof p, "%s/d001/f000004", d);
    CHECK(unlink(p) == 0);
    r = run_worker("meta", "--dir", d, "--files", "20", "--dirs", "2", "--allow-existing", "--phases",
                   "stat:seq,delete", NULL);
    CHECKF(r.status == 1, "status %d", r.status);
    CHECK(strstr(r.out, "\"status\":\"error\"") && strstr(r.out, "\"code\":\"ENOENT\"") &&
          strstr(r.out, "\"where\":\"d001/f000004\"") && strstr(r.out, "\"phase\":\"stat\""));
    /* d000 holds 10 files: 10 + 4 stats succeeded; delete never ran */
    CHECK(strstr(r.out, "\"ops\":14,") && !strstr(phases_part(r.out), "\"name\":\"delete\""));
    run_free(&r);
    rm_rf(d);
    free(d);
}

void test_int_new_workloads_bad_args_exit2(void)
{
    char *d = make_tmpdir();
    struct bad_args cases[] = {
        {{"meta", "--dir", d, "--files", "0", "--dirs", "0", NULL}, "--files"},
        {{"meta", "--dir", d, "--files", "10", NULL}, "--dirs"},
        {{"meta", "--dir", d, "--files", "10", "--dirs", "11", NULL}, "--dirs"},
        {{"meta", "--dir", d, "--files", "10", "--dirs", "1", "--size", "2K:1K", NULL}, "--size"},
        {{"meta", "--dir", d, "--files", "10", "--dirs", "1", "--size", "1Q", NULL}, "--size"},
        {{"meta", "--dir", d, "--files", "10", "--dirs", "1", "--phases", "create:up", NULL}, "--phases"},
        {{"meta", "--dir", d, "--files", "10", "--dirs", "1", "--phases", "make", NULL}, "--phases"},
        {{"meta", "--dir", d, "--files", "10", "--dirs", "1", "--content", "ones", NULL}, "--content"},
        {{"meta", "--dir", d, "--files", "10", "--dirs", "1", "--fsync", "all", NULL}, "--fsync"},
        {{"meta", "--dir", d, "--files", "10", "--dirs", "1", "--threads", "0", NULL}, "--threads"},
        {{"seqio", "--dir", d, "--file", "x", "--block", "1M", "--mode", "write", NULL}, "--size"},
        {{"seqio", "--dir", d, "--file", "x", "--size", "1M", "--block", "1M", NULL}, "--mode"},
        {{"seqio", "--dir", d, "--file", "x", "--size", "1M", "--block", "0", "--mode", "write", NULL}, "--block"},
        {{"seqio", "--dir", d, "--file", "x", "--size", "1M", "--block", "2G", "--mode", "write", NULL}, "--block"},
        {{"seqio", "--dir", d, "--file", "x", "--size", "1M", "--block", "1000", "--mode", "write", "--direct", NULL},
         "--block"},
        {{"seqio", "--dir", d, "--file", "x", "--size", "1000", "--block", "4K", "--mode", "write", "--direct", NULL},
         "--size"},
        {{"seqio", "--dir", d, "--file", "a/b", "--size", "1M", "--block", "1M", "--mode", "write", NULL}, "--file"},
        {{"seqio", "--dir", d, "--file", "x", "--block", "1M", "--mode", "read", NULL}, "--file"},
        {{"seqio", "--dir", d, "--file", "x", "--block", "1M", "--mode", "read", "--fsync-end", "on", NULL},
         "--fsync-end"},
        {{"seqio", "--dir", d, "--file", "x", "--size", "1M", "--block", "1M", "--mode", "write", "--threads", "2",
          NULL},
         "--threads"},
        {{"seqio", "--dir", d, "--file", "x", "--size", "1M", "--block", "1M", "--mode", "write", "--runs", "0", NULL},
         "--runs"},
        {{"randio", "--dir", d, "--files", "1", "--file-size", "1M", "--xfer", "4K", "--read-pct", "70", NULL},
         "--duration"},
        {{"randio", "--dir", d, "--files", "1", "--file-size", "1M", "--xfer", "4K", "--read-pct", "101",
          "--duration", "1", NULL},
         "--read-pct"},
        {{"randio", "--dir", d, "--files", "1", "--file-size", "1M", "--xfer", "2M", "--read-pct", "70",
          "--duration", "1", NULL},
         "--xfer"},
        {{"randio", "--dir", d, "--files", "1", "--file-size", "1M", "--xfer", "1000", "--read-pct", "70",
          "--duration", "1", "--direct", NULL},
         "--xfer"},
        {{"randio", "--dir", d, "--files", "1", "--file-size", "1M", "--xfer", "4K", "--read-pct", "70",
          "--duration", "1", "--threads", "257", NULL},
         "--threads"},
        {{"randio", "--dir", d, "--files", "0", "--file-size", "1M", "--prepare", NULL}, "--files"},
        {{"randio", "--dir", d, "--files", "1", "--prepare", NULL}, "--file-size"},
        /* found by fuzzing: hexadecimal numbers were read (0x10 = 16 s) */
        {{"randio", "--dir", d, "--files", "1", "--file-size", "1M", "--xfer", "4K", "--read-pct", "70",
          "--duration", "0x10", NULL},
         "--duration: expected a number 0.01..1e+07, got '0x10'"},
        /* found by fuzzing: an option was taken as the value before it */
        {{"meta", "--dir", d, "--files", "10", "--dirs", "1", "--out", "--progress", NULL}, "--out: missing value"},
        {{"seqio", "--dir", "--file", "x", "--size", "1M", "--block", "1M", "--mode", "write", NULL},
         "--dir: missing value"},
    };
    check_bad_args(d, cases, sizeof cases / sizeof cases[0]);
    rm_rf(d);
    free(d);
}

void test_int_seqio_write_read(void)
{
    char *d = make_tmpdir();
    struct run r = run_worker("seqio", "--dir", d, "--file", "big", "--size", "1M", "--block", "192K", "--mode",
                              "write", "--runs", "2", NULL);
    CHECKF(r.status == 0, "status %d stderr %s", r.status, r.err);
    /* 5 full blocks and one of 64K per run */
    CHECK(strstr(r.out, "\"name\":\"write\",\"run\":0,\"ops\":6,\"dirs\":0,\"bytes\":1048576,"));
    CHECK(strstr(r.out, "\"name\":\"write\",\"run\":1,\"ops\":6,"));
    CHECK(strstr(r.out, "\"fsync_end\":true"));
    run_free(&r);
    char p[600];
    snprintf(p, sizeof p, "%s/big", d);
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size == 1048576);
    r = run_worker("seqio", "--dir", d, "--file", "big", "--block", "256K", "--mode", "read", NULL);
    CHECKF(r.status == 0, "status %d stderr %s", r.status, r.err);
    CHECK(strstr(r.out, "\"name\":\"read\",\"run\":0,\"ops\":4,\"dirs\":0,\"bytes\":1048576,"));
    CHECK(strstr(r.out, "\"fsync_end\":false"));
    run_free(&r);
    r = run_worker("seqio", "--dir", d, "--file", "big", "--block", "100K", "--size", "300K", "--mode", "read", NULL);
    CHECK(r.status == 0 && strstr(r.out, "\"ops\":3,\"dirs\":0,\"bytes\":307200,"));
    run_free(&r);
    rm_rf(d);
    free(d);
}

void test_int_randio_counts(void)
{
    char *d = make_tmpdir();
    struct run r = run_worker("randio", "--dir", d, "--files", "3", "--file-size", "256K", "--prepare", NULL);
    CHECKF(r.status == 0, "status %d stderr %s", r.status, r.err);
    CHECK(strstr(r.out, "\"name\":\"prepare\",\"ops\":3,\"dirs\":0,\"bytes\":786432,\"existing\":0,"));
    CHECK(!strstr(r.out, "\"name\":\"io\""));
    run_free(&r);
    char p[600];
    struct stat st;
    snprintf(p, sizeof p, "%s/f002", d);
    CHECK(stat(p, &st) == 0 && st.st_size == 262144);
    r = run_worker("randio", "--dir", d, "--files", "3", "--file-size", "256K", "--xfer", "4K", "--read-pct", "70",
                   "--duration", "0.2", "--threads", "3", "--interval", "0.05", NULL);
    CHECKF(r.status == 0, "status %d stderr %s", r.status, r.err);
    CHECK(strstr(r.out, "\"name\":\"prepare\",\"ops\":0,\"dirs\":0,\"bytes\":0,\"existing\":3,"));
    const char *io = strstr(r.out, "\"name\":\"io\"");
    CHECK(io != NULL);
    if (io) {
        uint64_t ops = json_num_after(r.out, io, "\"ops\":");
        uint64_t reads = json_num_after(r.out, strstr(io, "\"reads\":"), "\"ops\":");
        uint64_t writes = json_num_after(r.out, strstr(io, "\"writes\":"), "\"ops\":");
        CHECKF(ops > 0 && ops == reads + writes, "ops %llu reads %llu writes %llu", (unsigned long long)ops,
               (unsigned long long)reads, (unsigned long long)writes);
        CHECK(strstr(io, "\"read_ops_per_s\":") && strstr(io, "\"write_ops\":"));
    }
    run_free(&r);
    rm_rf(d);
    free(d);
}

/* ---- tree: random layout, sizes, content ----------------------------------- */

/* 64-bit FNV-1a of a file's bytes, or 0 when it cannot be read. */
static uint64_t file_hash(int dfd, const char *rel, int *all_zero)
{
    int fd = openat(dfd, rel, O_RDONLY | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    unsigned char buf[8192];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < r; i++) {
            h = (h ^ buf[i]) * 0x100000001b3ull;
            if (buf[i])
                *all_zero = 0;
        }
    }
    close(fd);
    return h;
}

/* list_tree with "path size hash" for files; totals of sizes, the deepest
 * directory level of a file, and whether every byte is zero. */
struct data_listing {
    struct listing l;
    size_t files, dirs;
    uint64_t bytes, min_size, max_size, unaligned;
    unsigned depth;
    int all_zero;
};

static struct data_listing list_tree_data(const char *root, uint64_t align)
{
    struct data_listing d = {.min_size = UINT64_MAX, .all_zero = 1};
    struct listing names = list_tree(root, &d.files, &d.dirs);
    int dfd = open(root, O_RDONLY | O_DIRECTORY);
    for (size_t i = 0; i < names.n; i++) {
        const char *rel = names.v[i];
        size_t len = strlen(rel);
        if (rel[len - 1] == '/') {
            add(&d.l, rel);
            continue;
        }
        struct stat st;
        if (fstatat(dfd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        uint64_t size = (uint64_t)st.st_size;
        d.bytes += size;
        d.min_size = size < d.min_size ? size : d.min_size;
        d.max_size = size > d.max_size ? size : d.max_size;
        d.unaligned += size % align != 0;
        unsigned depth = 0;
        for (const char *c = rel; *c; c++)
            depth += *c == '/';
        d.depth = depth > d.depth ? depth : d.depth;
        char line[1200];
        snprintf(line, sizeof line, "%s %llu %016llx", rel, (unsigned long long)size,
                 (unsigned long long)file_hash(dfd, rel, &d.all_zero));
        add(&d.l, line);
    }
    close(dfd);
    listing_free(&names);
    return d;
}

void test_int_tree_random_layout(void)
{
    char *a = make_tmpdir(), *b = make_tmpdir(), *c = make_tmpdir();
    CHECK(a && b && c);
    if (!a || !b || !c)
        return;
    struct run ra = run_worker("tree", "--dir", a, "--layout", "random", "--files", "3000", "--max-depth", "3",
                               "--files-per-dir-max", "300", "--size", "0:6552", "--size-align", "8", "--content",
                               "random", "--seed", "5", "--threads", "2", NULL);
    struct run rb = run_worker("tree", "--dir", b, "--layout", "random", "--files", "3000", "--max-depth", "3",
                               "--files-per-dir-max", "300", "--size", "0:6552", "--size-align", "8", "--content",
                               "random", "--seed", "5", "--order", "random", NULL);
    struct run rc = run_worker("tree", "--dir", c, "--layout", "random", "--files", "3000", "--max-depth", "3",
                               "--files-per-dir-max", "300", "--size", "0:6552", "--size-align", "8", "--content",
                               "random", "--seed", "6", "--threads", "3", NULL);
    CHECKF(ra.status == 0 && rb.status == 0 && rc.status == 0, "status %d %d %d: %s", ra.status, rb.status,
           rc.status, ra.err);
    CHECK(strstr(ra.out, "\"shape\":null,\"files\":3000,"));
    CHECK(strstr(ra.out, "\"layout\":\"random\"") && strstr(ra.out, "\"max_depth\":3,") &&
          strstr(ra.out, "\"files_per_dir_max\":300,") && strstr(ra.out, "\"size_min\":0,\"size_max\":6552,"
                                                                          "\"size_align\":8,\"content\":\"random\""));
    struct data_listing da = list_tree_data(a, 8), db = list_tree_data(b, 8), dc = list_tree_data(c, 8);
    CHECKF(da.files == 3000 && db.files == 3000 && dc.files == 3000, "files %zu %zu %zu", da.files, db.files,
           dc.files);
    uint64_t dirs = json_num_after(ra.out, NULL, "\"dirs\":");
    CHECKF(da.dirs == dirs && json_num_after(ra.out, phases_part(ra.out), "\"dirs\":") == dirs,
           "on disk %zu, params %llu", da.dirs, (unsigned long long)dirs);
    CHECK(json_num_after(ra.out, phases_part(ra.out), "\"ops\":") == 3000);
    CHECK(json_num_after(ra.out, phases_part(ra.out), "\"existing\":") == 0);
    CHECKF(json_num_after(ra.out, phases_part(ra.out), "\"bytes\":") == da.bytes, "on disk %llu",
           (unsigned long long)da.bytes);
    CHECK(json_num_after(rc.out, phases_part(rc.out), "\"bytes\":") == dc.bytes);
    CHECK(da.unaligned == 0 && da.max_size <= 6552 && da.depth >= 1 && da.depth <= 3 && !da.all_zero);
    CHECK(da.dirs >= 10); /* 3000 files, at most 300 per directory */
    /* same seed: the same tree, byte for byte, whatever the order and threads */
    CHECK(listings_equal(&da.l, &db.l));
    CHECK(!listings_equal(&da.l, &dc.l));
    listing_free(&da.l);
    listing_free(&db.l);
    listing_free(&dc.l);
    run_free(&ra);
    run_free(&rb);
    run_free(&rc);

    /* zero content: written, all zero bytes; a fixed layout with sizes */
    rm_rf(a);
    mkdir(a, 0700);
    ra = run_worker("tree", "--dir", a, "--shape", "3x50", "--size", "4K", "--threads", "2", NULL);
    CHECKF(ra.status == 0, "status %d: %s", ra.status, ra.err);
    da = list_tree_data(a, 4096);
    CHECK(da.files == 150 && da.bytes == 150 * 4096 && da.min_size == 4096 && da.all_zero);
    CHECK(strstr(ra.out, "\"ops\":150,\"dirs\":3,\"bytes\":614400,"));
    CHECK(strstr(ra.out, "\"layout\":\"fixed\",\"depth\":1,\"max_depth\":null,\"files_per_dir_max\":null,"));
    listing_free(&da.l);
    run_free(&ra);
    rm_rf(a);
    rm_rf(b);
    rm_rf(c);
    free(a);
    free(b);
    free(c);
}

void test_int_tree_new_bad_args_exit2(void)
{
    char *d = make_tmpdir();
    struct bad_args cases[] = {
        {{"tree", "--dir", d, "--layout", "random", NULL}, "--files"},
        {{"tree", "--dir", d, "--layout", "random", "--files", "0", NULL}, "--files"},
        {{"tree", "--dir", d, "--layout", "random", "--files", "10", "--shape", "10", NULL}, "--shape"},
        {{"tree", "--dir", d, "--layout", "sideways", "--files", "10", NULL}, "--layout"},
        {{"tree", "--dir", d, "--shape", "10", "--files", "10", NULL}, "--files"},
        {{"tree", "--dir", d, "--shape", "10", "--max-depth", "2", NULL}, "--max-depth"},
        {{"tree", "--dir", d, "--shape", "10", "--files-per-dir-max", "2", NULL}, "--files-per-dir-max"},
        {{"tree", "--dir", d, "--layout", "random", "--files", "10", "--max-depth", "0", NULL}, "--max-depth"},
        {{"tree", "--dir", d, "--layout", "random", "--files", "10", "--max-depth", "17", NULL}, "--max-depth"},
        {{"tree", "--dir", d, "--layout", "random", "--files", "10", "--files-per-dir-max", "0", NULL},
         "--files-per-dir-max"},
        {{"tree", "--dir", d, "--layout", "random", "--files", "1000000000000", "--files-per-dir-max", "1", NULL},
         "--files-per-dir-max"},
        {{"tree", "--dir", d, "--shape", "10", "--size", "2K:1K", NULL}, "--size"},
        {{"tree", "--dir", d, "--shape", "10", "--size", "2G", NULL}, "--size"},
        {{"tree", "--dir", d, "--shape", "10", "--size", "bonnie:", NULL}, "--size"},
        {{"tree", "--dir", d, "--shape", "10", "--size", "lots", NULL}, "--size"},
        {{"tree", "--dir", d, "--shape", "10", "--size", "100", "--size-align", "8", NULL}, "--size-align"},
        {{"tree", "--dir", d, "--shape", "10", "--size", "1:7", "--size-align", "8", NULL}, "--size-align"},
        {{"tree", "--dir", d, "--shape", "10", "--size-align", "0", NULL}, "--size-align"},
        {{"tree", "--dir", d, "--shape", "10", "--content", "ones", NULL}, "--content"},
    };
    check_bad_args(d, cases, sizeof cases / sizeof cases[0]);
    rm_rf(d);
    free(d);
}
