/* filedata.c - file size distributions and file content. */
#include "filedata.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char *const filedata_content_names[] = {"zero", "random", NULL};

/* Split s at ':' into at most 3 byte counts. Returns how many, or -1. */
static int parse_sizes(const char *s, uint64_t *v, int maxn)
{
    char buf[64];
    int n = 0;
    for (;;) {
        const char *colon = strchr(s, ':');
        size_t len = colon ? (size_t)(colon - s) : strlen(s);
        if (n == maxn || len == 0 || len >= sizeof buf)
            return -1;
        memcpy(buf, s, len);
        buf[len] = '\0';
        if (cli_parse_size(buf, &v[n++]) != 0)
            return -1;
        if (!colon)
            return n;
        s = colon + 1;
    }
}

int filedata_parse_size(const char *s, struct filedata_size *out, char *err, size_t errlen)
{
    uint64_t v[2] = {0, 0}, lo = 0, hi = 0;
    int ok;
    if (strncmp(s, "bonnie:", 7) == 0) {
        /* bonnie++ -n files:max[:min[:dirs]]: max first, min (default 0) second */
        int n = parse_sizes(s + 7, v, 2);
        ok = n >= 1;
        hi = v[0];
        lo = n == 2 ? v[1] : 0;
    } else {
        int n = parse_sizes(s, v, 2);
        ok = n >= 1;
        lo = v[0];
        hi = n == 2 ? v[1] : v[0];
    }
    if (!ok || lo > hi || hi > FILEDATA_MAX_SIZE) {
        snprintf(err, errlen,
                 "expected BYTES, MIN:MAX or bonnie:MAX[:MIN] (suffix K, M, G), MIN <= MAX <= 1G, got '%s'", s);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->min = lo;
    out->max = hi;
    out->align = 1;
    out->lo = lo;
    out->n = hi - lo + 1;
    return 0;
}

int filedata_size_align(struct filedata_size *sz, uint64_t align, char *err, size_t errlen)
{
    if (align < 1) {
        snprintf(err, errlen, "expected at least 1, got '0'");
        return -1;
    }
    uint64_t lo = sz->min / align + (sz->min % align != 0);
    uint64_t hi = sz->max / align;
    if (lo > hi) {
        if (sz->min == sz->max)
            snprintf(err, errlen, "--size %llu is not a multiple of %llu", (unsigned long long)sz->min,
                     (unsigned long long)align);
        else
            snprintf(err, errlen, "no multiple of %llu in --size %llu:%llu", (unsigned long long)align,
                     (unsigned long long)sz->min, (unsigned long long)sz->max);
        return -1;
    }
    sz->align = align;
    sz->lo = lo;
    sz->n = hi - lo + 1;
    return 0;
}

int filedata_init(struct filedata *fd, const struct filedata_size *size, int content, uint64_t seed)
{
    memset(fd, 0, sizeof *fd);
    fd->size = *size;
    fd->content = content;
    uint64_t st = seed;
    fd->size_key = splitmix64(&st);
    fd->content_key = splitmix64(&st);
    uint64_t max = filedata_size_max(size);
    if (max == 0)
        return 0;
    fd->len = (size_t)(max < FILEDATA_IO_CHUNK ? max : FILEDATA_IO_CHUNK);
    if (content == FILEDATA_RANDOM)
        fd->len += FILEDATA_SLACK;
    fd->buf = calloc(1, fd->len);
    if (!fd->buf)
        return -1;
    if (content == FILEDATA_RANDOM)
        prng_fill(fd->buf, fd->len, splitmix64(&st), 0);
    return 0;
}

void filedata_free(struct filedata *fd)
{
    free(fd->buf);
    fd->buf = NULL;
}

int filedata_write(const struct filedata *data, int fd, uint64_t i, uint64_t size, uint64_t *bytes)
{
    if (size == 0)
        return 0;
    const unsigned char *src = filedata_bytes(data, i);
    uint64_t done = 0;
    while (done < size) {
        /* a file longer than 1 MiB repeats its first MiB; a short write
         * resumes where it stopped, so the bytes depend only on (seed, i) */
        size_t off = (size_t)(done % FILEDATA_IO_CHUNK);
        uint64_t left = size - done;
        size_t n = left < FILEDATA_IO_CHUNK - off ? (size_t)left : FILEDATA_IO_CHUNK - off;
        ssize_t w = write(fd, src + off, n);
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            if (e == EINTR)
                continue;
            return -e;
        }
        *bytes += (uint64_t)w;
        done += (uint64_t)w;
    }
    return 0;
}
