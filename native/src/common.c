/* common.c - shared options (--dir, --threads, ...) and target validation. */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "phase.h"

void common_specs(struct opt_spec *dst, struct common_opts *c)
{
    memset(c, 0, sizeof *c);
    c->threads = 1;
    c->seed = 1;
    c->interval_s = 1.0;
    struct opt_spec specs[COMMON_NSPECS] = {
        {.name = "--dir", .type = OPT_STR, .dst = &c->dir, .required = 1},
        {.name = "--threads", .type = OPT_U64, .dst = &c->threads, .min = 1, .max = PHASE_MAX_THREADS},
        {.name = "--seed", .type = OPT_U64, .dst = &c->seed, .min = 0, .max = UINT64_MAX},
        {.name = "--allow-existing", .type = OPT_FLAG, .dst = &c->allow_existing},
        {.name = "--out", .type = OPT_STR, .dst = &c->out},
        {.name = "--progress", .type = OPT_FLAG, .dst = &c->progress},
        {.name = "--interval", .type = OPT_DOUBLE, .dst = &c->interval_s, .dmin = 0.01, .dmax = 86400},
    };
    memcpy(dst, specs, sizeof specs);
}

int common_open_target(const struct common_opts *c)
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
