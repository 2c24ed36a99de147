/* test_integration_tree.c - the built worker's tree workload: random
 * layout, file sizes and content. */
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
            listing_add(&d.l, rel);
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
        listing_add(&d.l, line);
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
    tmpdir_remove(a);
    tmpdir_remove(b);
    tmpdir_remove(c);
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
    tmpdir_remove(d);
}
