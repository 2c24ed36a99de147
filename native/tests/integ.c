/* integ.c - helpers of the integration tests (integ.h). */
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

char *slurp_fd(int fd)
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
struct run run_worker_argv(const char *const *args)
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
struct run run_worker(const char *first, ...)
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

void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

char *make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/boatload-test.XXXXXX", base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

void rm_rf(const char *path)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "  warning: could not remove %s\n", path);
}

void tmpdir_remove(char *dir)
{
    rm_rf(dir);
    free(dir);
}

void listing_add(struct listing *l, const char *s)
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
            listing_add(l, rel);
            int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
            if (sub >= 0) {
                walk(l, sub, rel, files, dirs);
                close(sub);
            }
        } else {
            if (S_ISREG(st.st_mode))
                (*files)++;
            listing_add(l, rel);
        }
    }
    closedir(d);
}

int listing_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct listing list_tree(const char *root, size_t *files, size_t *dirs)
{
    struct listing l = {0};
    *files = *dirs = 0;
    int fd = open(root, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        walk(&l, fd, "", files, dirs);
        close(fd);
    }
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, listing_cmp);
    return l;
}

void listing_free(struct listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

int listings_equal(const struct listing *a, const struct listing *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0)
            return 0;
    return 1;
}

int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Exit 2 with one "boatload-worker: " line naming the option, no JSON. */
int count_bad_lines(const struct run *r, const char *named)
{
    return r->status == 2 && count_lines(r->err) == 1 && strstr(r->err, named) &&
           strncmp(r->err, "boatload-worker: ", 17) == 0 && r->out[0] == '\0';
}

/* Every case must be refused as a usage error before anything is made in
 * dir: the argument checks come first. */
void check_bad_args(const char *dir, const struct bad_args *cases, size_t n)
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

/* The unsigned number after the first occurrence of key (e.g. "\"ops\":")
 * at or after from; UINT64_MAX if missing. */
uint64_t json_num_after(const char *doc, const char *from, const char *key)
{
    const char *p = strstr(from ? from : doc, key);
    if (!p)
        return UINT64_MAX;
    return strtoull(p + strlen(key), NULL, 10);
}

/* The measured phases: the part of the document after "error" (params
 * can hold phase names too). */
const char *phases_part(const char *doc)
{
    const char *p = strstr(doc, "\"error\":");
    return p ? p : "";
}
