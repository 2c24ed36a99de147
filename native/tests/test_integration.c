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

/* Run the worker with a NULL-terminated argument list. */
static struct run run_worker(const char *first, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)test_worker_path;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
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

void test_int_version(void)
{
    struct run r = run_worker("--version", NULL);
    CHECK(r.status == 0);
    CHECKF(strcmp(r.out, "boatload-worker 0.1.0\n") == 0, "got '%s'", r.out);
    run_free(&r);
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
    struct {
        const char *a[8];
        const char *named;
    } cases[] = {
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
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char **a = cases[i].a;
        struct run r = run_worker(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
        CHECKF(r.status == 2, "case %zu: status %d", i, r.status);
        CHECKF(count_lines(r.err) == 1 && strstr(r.err, cases[i].named) &&
                   strncmp(r.err, "boatload-worker: ", 17) == 0,
               "case %zu: stderr '%s'", i, r.err);
        CHECK(r.out[0] == '\0');
        run_free(&r);
    }
    size_t files, dirs;
    struct listing l = list_tree(d, &files, &dirs);
    CHECK(l.n == 0); /* nothing created */
    listing_free(&l);
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
