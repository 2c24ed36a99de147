/* bare_create.c - baseline for the worker's overhead: the same files as
 * "boatload-worker tree --shape NDIRSxNFILES" with a bare mkdirat +
 * openat/close loop and no timing, histogram or counters.
 *
 *   build/bare-create DIR NDIRS NFILES   -> prints files/s
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bare-create DIR NDIRS NFILES\n");
        return 2;
    }
    int root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        perror(argv[1]);
        return 2;
    }
    long nd = atol(argv[2]), nf = atol(argv[3]);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    char name[32];
    for (long d = 0; d < nd; d++) {
        snprintf(name, sizeof name, "d%03ld", d);
        if (mkdirat(root, name, 0755) != 0) {
            perror("mkdirat");
            return 1;
        }
        int dfd = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        for (long f = 0; f < nf; f++) {
            snprintf(name, sizeof name, "f%06ld", f);
            int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd < 0) {
                perror("openat");
                return 1;
            }
            close(fd);
        }
        close(dfd);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    printf("%.0f files/s (%.3f s)\n", (double)(nd * nf) / s, s);
    return 0;
}
