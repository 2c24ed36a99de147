/* test_integration.c - fork/exec the built worker against mkdtemp dirs:
 * the tree workload's basics, --help, bad arguments, symlinks, --out. */
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
#include "integ.h"

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
        listing_add(&want, p);
        for (int b = 0; b < 4; b++) {
            snprintf(p, sizeof p, "d%03d/d%03d/", a, b);
            listing_add(&want, p);
            for (int f = 0; f < 25; f++) {
                snprintf(p, sizeof p, "d%03d/d%03d/f%06d", a, b, f);
                listing_add(&want, p);
            }
        }
    }
    qsort(want.v, want.n, sizeof *want.v, listing_cmp);
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
    tmpdir_remove(d);
    tmpdir_remove(d2);
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
    tmpdir_remove(a);
    tmpdir_remove(b);
    tmpdir_remove(c);
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
    tmpdir_remove(d);
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
    tmpdir_remove(d);
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
    tmpdir_remove(d);
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
    tmpdir_remove(d);
    tmpdir_remove(d2);
    tmpdir_remove(elsewhere);
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
    tmpdir_remove(d);
    tmpdir_remove(elsewhere);
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
    tmpdir_remove(d);
    tmpdir_remove(o);
}
