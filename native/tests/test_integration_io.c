/* test_integration_io.c - the built worker's meta, seqio and randio
 * workloads against mkdtemp dirs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "integ.h"

/* ---- meta, seqio, randio -------------------------------------------------- */

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
    tmpdir_remove(d);
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
    tmpdir_remove(d);
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
        {{"meta", "--dir", d, "--files", "10", "--dirs", "1", "--sync", "always", NULL}, "--sync"},
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
    tmpdir_remove(d);
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
    tmpdir_remove(d);
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
    tmpdir_remove(d);
}

/* --sync end: the create phase ends with the file system synced, so no file
 * it made still waits for its blocks (delayed allocation, which ext4 and
 * XFS report through FIEMAP). Without --sync nothing is asserted about the
 * files: another process's sync may write them back at any time. */
static int delalloc_extents(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY);
    if (fd < 0)
        return -1;
    struct {
        struct fiemap m;
        struct fiemap_extent e[8];
    } fm;
    memset(&fm, 0, sizeof fm);
    fm.m.fm_length = FIEMAP_MAX_OFFSET;
    fm.m.fm_extent_count = 8;
    int rc = ioctl(fd, FS_IOC_FIEMAP, &fm.m);
    close(fd);
    if (rc != 0)
        return -1;
    int n = 0;
    for (unsigned i = 0; i < fm.m.fm_mapped_extents; i++)
        n += (fm.e[i].fe_flags & FIEMAP_EXTENT_DELALLOC) != 0;
    return n;
}

void test_int_meta_sync_end(void)
{
    char *d = make_tmpdir();
    CHECK(d != NULL);
    if (!d)
        return;
    struct run r = run_worker("meta", "--dir", d, "--files", "200", "--dirs", "0", "--size", "4K", "--phases",
                              "create", "--threads", "2", "--sync", "end", NULL);
    CHECKF(r.status == 0, "status %d stderr %s", r.status, r.err);
    CHECK(strstr(r.out, "\"fsync\":\"none\",\"sync\":\"end\","));
    CHECK(strstr(r.out, "\"name\":\"create\",\"order\":\"sequential\",\"ops\":200,"));
    run_free(&r);
    int dfd = open(d, O_RDONLY | O_DIRECTORY);
    int mapped = 0, delayed = 0;
    for (int i = 0; i < 200; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%06d", i);
        int n = delalloc_extents(dfd, name);
        mapped += n >= 0;
        delayed += n > 0;
    }
    close(dfd);
    /* a file system without FIEMAP (tmpfs) maps none: nothing to see there */
    CHECKF(mapped == 200 || mapped == 0, "FIEMAP on %d of 200 files", mapped);
    CHECKF(delayed == 0, "%d of %d files still wait for their blocks after --sync end", delayed, mapped);

    r = run_worker("meta", "--dir", d, "--files", "200", "--dirs", "0", "--allow-existing", "--phases", "delete",
                   NULL);
    CHECKF(r.status == 0 && strstr(r.out, "\"sync\":\"none\","), "status %d stderr %s", r.status, r.err);
    run_free(&r);
    tmpdir_remove(d);
}
