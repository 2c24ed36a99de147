/* rlayout.c - building tree's random folder structure. */
#include "rlayout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prng.h"

/* mktemp's alphabet */
static const char name_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
#define NAME_SPACE 839299365868340224ull /* 62^10 */

uint64_t rlayout_expected_dirs(uint64_t files, uint64_t files_per_dir_max)
{
    /* mean files per directory: (1 + max) / 2 */
    long double mean = ((long double)files_per_dir_max + 1) / 2;
    long double n = (long double)files / mean;
    if (n > (long double)UINT64_MAX / 2)
        return UINT64_MAX / 2;
    uint64_t k = (uint64_t)n;
    return k < n ? k + 1 : k < 1 ? 1 : k;
}

/* A growable array of directory indices (those of one depth). */
struct ids {
    uint64_t *v;
    uint64_t n, cap;
};

static int ids_push(struct ids *a, uint64_t x)
{
    if (a->n == a->cap) {
        uint64_t cap = a->cap ? a->cap * 2 : 64;
        uint64_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

int rlayout_build(struct rlayout *l, uint64_t files, unsigned max_depth, uint64_t files_per_dir_max,
                  uint64_t seed)
{
    memset(l, 0, sizeof *l);
    if (files < 1 || files > RLAYOUT_MAX_FILES || max_depth < 1 || max_depth > RLAYOUT_MAX_DEPTH ||
        files_per_dir_max < 1 || files_per_dir_max > RLAYOUT_MAX_FILES_PER_DIR) {
        errno = EINVAL;
        return -1;
    }
    l->files = files;
    l->max_depth = max_depth;
    l->files_per_dir_max = files_per_dir_max;
    l->file_width = shape_name_width(files_per_dir_max, 6);

    uint64_t st = mix64(seed ^ 0x726c61796f7574ull); /* "rlayout" */
    struct xoshiro256 g;
    xoshiro256_seed(&g, splitmix64(&st));
    struct perm names;
    perm_init(&names, NAME_SPACE, splitmix64(&st));

    struct ids by_depth[RLAYOUT_MAX_DEPTH];
    memset(by_depth, 0, sizeof by_depth);
    uint64_t cap = 0, left = files;
    int rc = -1;
    while (left > 0) {
        if (l->ndirs == cap) {
            uint64_t ncap = cap ? cap * 2 : 64;
            struct rlayout_dir *v = realloc(l->dirs, ncap * sizeof *v);
            if (!v)
                goto out;
            l->dirs = v;
            cap = ncap;
        }
        unsigned depth = 1 + (unsigned)xoshiro256_below(&g, max_depth);
        if (depth > l->depth + 1)
            depth = l->depth + 1;
        uint64_t parent = RLAYOUT_ROOT;
        if (depth > 1) {
            const struct ids *up = &by_depth[depth - 2];
            parent = up->v[xoshiro256_below(&g, up->n)];
            if (l->dirs[parent].subdirs < UINT32_MAX)
                l->dirs[parent].subdirs++;
        }
        uint64_t n = 1 + xoshiro256_below(&g, files_per_dir_max);
        if (n > left)
            n = left;
        uint64_t d = l->ndirs++;
        l->dirs[d] = (struct rlayout_dir){
            .parent = parent,
            .name = perm_apply(&names, d),
            .first_file = files - left,
            .nfiles = n,
            .depth = depth,
        };
        if (ids_push(&by_depth[depth - 1], d) != 0)
            goto out;
        if (depth > l->depth)
            l->depth = depth;
        left -= n;
    }
    for (uint64_t d = 0; d < l->ndirs; d++)
        l->leaf_dirs += l->dirs[d].subdirs == 0;
    rc = 0;
out:
    for (unsigned k = 0; k < RLAYOUT_MAX_DEPTH; k++)
        free(by_depth[k].v);
    if (rc != 0) {
        rlayout_free(l);
        errno = ENOMEM;
    }
    return rc;
}

void rlayout_free(struct rlayout *l)
{
    free(l->dirs);
    l->dirs = NULL;
    l->ndirs = 0;
}

void rlayout_dir_name(const struct rlayout *l, uint64_t d, char *buf)
{
    uint64_t code = l->dirs[d].name;
    for (int i = RLAYOUT_NAME_LEN - 1; i >= 0; i--) {
        buf[i] = name_chars[code % 62];
        code /= 62;
    }
    buf[RLAYOUT_NAME_LEN] = '\0';
}

unsigned rlayout_chain(const struct rlayout *l, uint64_t d, uint64_t *chain)
{
    unsigned depth = l->dirs[d].depth;
    for (unsigned k = depth; k >= 1; k--) {
        chain[k - 1] = d;
        d = l->dirs[d].parent;
    }
    return depth;
}

size_t rlayout_path(const struct rlayout *l, uint64_t d, const char *file, char *buf, size_t buflen)
{
    uint64_t chain[RLAYOUT_MAX_DEPTH];
    unsigned depth = rlayout_chain(l, d, chain);
    char name[RLAYOUT_NAME_LEN + 1];
    size_t n = 0;
    if (buflen == 0)
        return 0;
    buf[0] = '\0';
    for (unsigned k = 0; k < depth; k++) {
        rlayout_dir_name(l, chain[k], name);
        if (shape_path_append(buf, buflen, &n, name) != 0)
            return strlen(buf);
    }
    if (file && shape_path_append(buf, buflen, &n, file) != 0)
        return strlen(buf);
    return n;
}
