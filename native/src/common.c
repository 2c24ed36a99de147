/* common.c - shared options (--dir, --threads, ...) and target validation. */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "phase.h"

int common_open_dir(const struct common_opts *c)
{
    int fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            cli_error("--dir: '%s' does not exist", c->dir);
        else if (e == ENOTDIR)
            cli_error("--dir: '%s' is not a directory", c->dir);
        else
            cli_error("--dir: cannot open '%s': %s", c->dir, strerror(e));
        return -1;
    }
    return fd;
}

int common_ensure_nofile(uint64_t need, uint64_t *limit)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        *limit = 0;
        return -1;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
            *limit = rl.rlim_max;
            return -1;
        }
        rl.rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            *limit = rl.rlim_cur;
            return -1;
        }
    }
    return 0;
}

int common_probe_direct(int dirfd, const char *dir, const char *name, int create, struct dio_info *info)
{
    memset(info, 0, sizeof *info);
    info->offset_align = COMMON_DIO_DEFAULT_ALIGN;
    info->mem_align = COMMON_DIO_DEFAULT_ALIGN;
    struct stat st;
    int existed = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    int flags = O_RDONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC;
    if (create && !existed)
        flags = O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(dirfd, name, flags, 0644);
    if (fd >= 0) {
        info->created = !existed;
#ifdef STATX_DIOALIGN
        struct statx sx;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
            sx.stx_dio_offset_align > 0) {
            info->offset_align = sx.stx_dio_offset_align;
            if (sx.stx_dio_mem_align > info->mem_align)
                info->mem_align = sx.stx_dio_mem_align;
            info->reported = 1;
        }
#endif
        close(fd);
        return 0;
    }
    int e = errno;
    if (e != EINVAL)
        return e;
    /* O_CREAT can make the file before O_DIRECT is refused: undo that */
    if (create && !existed)
        (void)unlinkat(dirfd, name, 0);
    cli_error("--direct: the file system of '%s' does not support O_DIRECT (open %s: %s)", dir, name,
              strerror(e));
    return -1;
}

void *common_dio_alloc(const struct dio_info *info, size_t len)
{
    size_t align = info->mem_align > COMMON_DIO_DEFAULT_ALIGN ? info->mem_align : COMMON_DIO_DEFAULT_ALIGN;
    /* aligned_alloc wants a size that is a multiple of the alignment */
    return aligned_alloc(align, (len + align - 1) / align * align);
}

int common_open_target(const struct common_opts *c)
{
    int fd = common_open_dir(c);
    if (fd < 0)
        return -1;
    if (c->allow_existing)
        return fd;
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        cli_error("--dir: cannot list '%s': %s", c->dir, strerror(errno));
        if (dup_fd >= 0)
            close(dup_fd);
        close(fd);
        return -1;
    }
    struct dirent *de;
    int empty = 1;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            empty = 0;
            break;
        }
    }
    closedir(d);
    if (!empty) {
        cli_error("--dir: '%s' is not empty (use --allow-existing)", c->dir);
        close(fd);
        return -1;
    }
    return fd;
}
