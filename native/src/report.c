/* report.c - assemble the run document, choose status/exit code, write it. */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "timing.h"

#ifndef BOATLOAD_VERSION
#define BOATLOAD_VERSION "unknown"
#endif
#ifndef BOATLOAD_CC
#define BOATLOAD_CC "unknown"
#endif
#ifndef BOATLOAD_CFLAGS
#define BOATLOAD_CFLAGS "unknown"
#endif

const char *report_status(const struct report *r, int *exit_code)
{
    int interrupted = 0;
    for (size_t i = 0; i < r->nphases; i++) {
        if (r->phases[i].error.set) {
            *exit_code = EXIT_FAILED;
            return "error";
        }
        interrupted |= r->phases[i].interrupted;
    }
    for (size_t i = 0; i < r->ndir_phases; i++) {
        if (r->dir_phases[i].error.set) {
            *exit_code = EXIT_FAILED;
            return "error";
        }
        interrupted |= r->dir_phases[i].interrupted;
    }
    if (interrupted) {
        *exit_code = EXIT_INTERRUPTED;
        return "interrupted";
    }
    *exit_code = EXIT_OK;
    return "ok";
}

const char *report_errno_name(int err, char *buf, size_t len)
{
    const char *name = strerrorname_np(err);
    if (name)
        return name;
    snprintf(buf, len, "E%d", err);
    return buf;
}

static void write_error(struct json *j, const struct report *r)
{
    const struct run_error *e = NULL;
    for (size_t i = 0; i < r->nphases && !e; i++)
        if (r->phases[i].error.set)
            e = &r->phases[i].error;
    for (size_t i = 0; i < r->ndir_phases && !e; i++)
        if (r->dir_phases[i].error.set)
            e = &r->dir_phases[i].error;
    if (!e) {
        json_null(j);
        return;
    }
    char nb[32];
    char msg[256];
    json_obj_begin(j);
    json_key(j, "phase");
    json_str(j, e->phase);
    json_key(j, "errno");
    json_i64(j, e->err);
    json_key(j, "code");
    json_str(j, report_errno_name(e->err, nb, sizeof nb));
    json_key(j, "message");
    json_str(j, strerror_r(e->err, msg, sizeof msg));
    json_key(j, "where");
    json_str(j, e->where);
    json_obj_end(j);
}

void report_build(struct json *j, const struct report *r)
{
    int code;
    json_obj_begin(j);
    json_key(j, "worker");
    json_obj_begin(j);
    json_key(j, "name");
    json_str(j, "boatload-worker");
    json_key(j, "version");
    json_str(j, BOATLOAD_VERSION);
    json_key(j, "cc");
    json_str(j, BOATLOAD_CC);
    json_key(j, "cc_version");
    json_str(j, __VERSION__);
    json_key(j, "cflags");
    json_str(j, BOATLOAD_CFLAGS);
    json_obj_end(j);
    json_key(j, "workload");
    json_str(j, r->workload);
    json_key(j, "params");
    if (r->write_params)
        r->write_params(j, r->params_arg);
    else
        json_null(j);
    json_key(j, "status");
    json_str(j, report_status(r, &code));
    json_key(j, "error");
    write_error(j, r);
    json_key(j, "phases");
    json_arr_begin(j);
    for (size_t i = 0; i < r->nphases; i++)
        phase_write_json(j, &r->phases[i]);
    json_arr_end(j);
    if (r->with_dir_phases) {
        json_key(j, "dir_phases");
        json_arr_begin(j);
        for (size_t i = 0; i < r->ndir_phases; i++)
            phase_write_dir_json(j, &r->dir_phases[i]);
        json_arr_end(j);
    }
    json_key(j, "max_rss_kib");
    int64_t rss = peak_rss_kib();
    if (rss >= 0)
        json_u64(j, (uint64_t)rss);
    else
        json_null(j);
    json_obj_end(j);
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

static int write_atomically(const char *path, const char *buf, size_t len)
{
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    int saved = 0;
    if (fchmod(fd, 0644) != 0 || write_all(fd, buf, len) != 0 || write_all(fd, "\n", 1) != 0 ||
        fsync(fd) != 0)
        saved = errno;
    if (close(fd) != 0 && !saved)
        saved = errno;
    if (!saved && rename(tmp, path) != 0)
        saved = errno;
    if (saved) {
        unlink(tmp);
        free(tmp);
        errno = saved;
        return -1;
    }
    /* make the rename durable: fsync the containing directory */
    char *slash = strrchr(tmp, '/');
    int dfd;
    if (slash == tmp)
        dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    else if (slash) {
        *slash = '\0';
        dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else
        dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    free(tmp);
    return 0;
}

int report_output(const struct json *j, const char *out_path)
{
    if (j->oom) {
        cli_error("out of memory while building the JSON document");
        return -1;
    }
    if (out_path) {
        if (write_atomically(out_path, j->buf, j->len) == 0)
            return 0;
        cli_error("--out: cannot write '%s': %s (writing to stdout instead)", out_path,
                  strerror(errno));
    }
    if (write_all(STDOUT_FILENO, j->buf, j->len) != 0 || write_all(STDOUT_FILENO, "\n", 1) != 0) {
        if (!out_path)
            cli_error("cannot write the JSON document to stdout: %s", strerror(errno));
        return -1;
    }
    return out_path ? -1 : 0;
}

int report_finish(const struct report *r, const char *out_path)
{
    if (r->out_of_memory) {
        cli_error("out of memory");
        return EXIT_FAILED;
    }
    struct json j;
    int code;
    json_init(&j);
    report_build(&j, r);
    report_status(r, &code);
    int rc = report_output(&j, out_path);
    json_free(&j);
    if (rc != 0 && code == EXIT_OK)
        code = EXIT_FAILED;
    return code;
}
