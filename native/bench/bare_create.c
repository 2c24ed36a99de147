/* bare_create.c - baseline for the worker's overhead: the same files as
 * "boatload-worker tree --shape NDIRSxNFILES" with a bare mkdirat +
 * openat/close (or mknodat) loop and no timing, histogram or counters.
 *
 *   build/bare-create DIR NDIRS NFILES [open|mknod [NAMELEN]]   -> prints files/s
 *
 * NAMELEN (default 7, the worker's "f000000") pads the file names with
 * zeros: "f" and NAMELEN-1 digits, to see what the name length alone costs
 * a file system (bench/README.md, "ext4 create and name length"). Only the
 * file loop is timed; the directories are made before it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 6) {
        fprintf(stderr, "usage: bare-create DIR NDIRS NFILES [open|mknod [NAMELEN]]\n");
        return 2;
    }
    int use_mknod = argc >= 5 && strcmp(argv[4], "mknod") == 0;
    if (argc >= 5 && !use_mknod && strcmp(argv[4], "open") != 0) {
        fprintf(stderr, "bare-create: the call is open or mknod, not %s\n", argv[4]);
        return 2;
    }
    int namelen = argc == 6 ? atoi(argv[5]) : 7;
    if (namelen < 7 || namelen > 200) {
        fprintf(stderr, "bare-create: NAMELEN is 7..200, not %s\n", argv[5]);
        return 2;
    }
    int root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        perror(argv[1]);
        return 2;
    }
    long nd = atol(argv[2]), nf = atol(argv[3]);
    int *dfds = calloc((size_t)nd, sizeof *dfds);
    char name[256];
    if (!dfds) {
        perror("calloc");
        return 1;
    }
    for (long d = 0; d < nd; d++) {
        snprintf(name, sizeof name, "d%03ld", d);
        if (mkdirat(root, name, 0755) != 0) {
            perror("mkdirat");
            return 1;
        }
        dfds[d] = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfds[d] < 0) {
            perror("openat");
            return 1;
        }
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long d = 0; d < nd; d++) {
        for (long f = 0; f < nf; f++) {
            snprintf(name, sizeof name, "f%0*ld", namelen - 1, f);
            if (use_mknod) {
                if (mknodat(dfds[d], name, S_IFREG | 0644, 0) != 0) {
                    perror("mknodat");
                    return 1;
                }
                continue;
            }
            int fd = openat(dfds[d], name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd < 0) {
                perror("openat");
                return 1;
            }
            close(fd);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    for (long d = 0; d < nd; d++)
        close(dfds[d]);
    free(dfds);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    printf("%.0f files/s (%.3f s)\n", (double)(nd * nf) / s, s);
    return 0;
}
