/* integ.h - what the integration tests share: running the built worker
 * and capturing its output, scratch directories, listing a tree, and
 * checking that bad arguments are refused before anything is made. */
#ifndef BOATLOAD_TEST_INTEG_H
#define BOATLOAD_TEST_INTEG_H

#include <stddef.h>
#include <stdint.h>

struct run {
    int status;       /* exit code, or 128+signal */
    char *out;        /* captured stdout */
    char *err;        /* captured stderr */
};

/* Collected relative paths (dirs end with '/'), sorted. */
struct listing {
    char **v;
    size_t n, cap;
};

/* A usage error: the worker's arguments (NULL-terminated) and the option
 * its message must name. */
struct bad_args {
    const char *a[16];
    const char *named;
};

/* Run the worker with the NULL-terminated argument array args. */
struct run run_worker_argv(const char *const *args);
/* Run the worker with a NULL-terminated argument list. */
struct run run_worker(const char *first, ...);
void run_free(struct run *r);
/* All of fd's contents up to EOF, NUL-terminated (malloc'd). */
char *slurp_fd(int fd);
char *make_tmpdir(void);
void rm_rf(const char *path);
/* rm_rf(dir), then free(dir): the end of a make_tmpdir() directory. */
void tmpdir_remove(char *dir);
struct listing list_tree(const char *root, size_t *files, size_t *dirs);
void listing_free(struct listing *l);
void listing_add(struct listing *l, const char *s);
/* qsort comparator of a listing's strings. */
int listing_cmp(const void *a, const void *b);
int listings_equal(const struct listing *a, const struct listing *b);
int count_lines(const char *s);
/* Exit 2 with one "boatload-worker: " line naming the option, no JSON. */
int count_bad_lines(const struct run *r, const char *named);
/* Every case must be refused as a usage error before anything is made in
 * dir: the argument checks come first. */
void check_bad_args(const char *dir, const struct bad_args *cases, size_t n);

/* The unsigned number after the first occurrence of key (e.g. "\"ops\":")
 * at or after from; UINT64_MAX if missing. */
uint64_t json_num_after(const char *doc, const char *from, const char *key);
/* The measured phases: the part of the document after "error" (params
 * can hold phase names too). */
const char *phases_part(const char *doc);

#endif
