/* calc.c - devmodel-calc: what the model's parameters give, for tests and
 * bench to compare measurements against (one implementation of the model).
 *
 *   devmodel-calc KEY=VALUE... size=BYTES check
 *   devmodel-calc KEY=VALUE... size=BYTES random-read SPAN LEN   -> mean us
 *   devmodel-calc KEY=VALUE... size=BYTES seq-read OFFSET LEN    -> MB/s
 *   devmodel-calc KEY=VALUE... size=BYTES writeout LEN OFF...    -> us
 *
 * writeout: the time a flush takes after writes of LEN bytes at each OFF
 * (in that order, into the cache); with rot=none it is the least the model
 * can give, with rot=full the most. Exit 2 with one line on bad input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int usage(const char *why)
{
    fprintf(stderr, "devmodel-calc: %s\n", why);
    return 2;
}

static int parse_u64(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno || end == s || *end || s[0] == '-' ? -1 : 0;
}

int main(int argc, char **argv)
{
    struct dm_params p;
    dm_params_init(&p);
    unsigned long long size = 0;
    int i = 1;
    for (; i < argc && strchr(argv[i], '='); i++) {
        char key[64];
        const char *eq = strchr(argv[i], '=');
        size_t n = (size_t)(eq - argv[i]);
        if (n >= sizeof key)
            return usage("parameter name too long");
        memcpy(key, argv[i], n);
        key[n] = 0;
        if (!strcmp(key, "size")) {
            if (parse_u64(eq + 1, &size) || size == 0)
                return usage("size must be a positive number of bytes");
            continue;
        }
        int r = dm_params_set(&p, key, eq + 1);
        if (r) {
            fprintf(stderr, "devmodel-calc: %s: %s\n", key, r == -1 ? "unknown parameter" : "bad value");
            return 2;
        }
    }
    if (i >= argc)
        return usage("no command (check, random-read, seq-read, writeout)");
    const char *why = dm_params_check(&p);
    if (why)
        return usage(why);
    if (size == 0)
        return usage("size=BYTES is required");
    struct dm m;
    if (dm_init(&m, &p, size) != 0)
        return usage("cannot set up the model");
    const char *cmd = argv[i++];
    int rc = 0;
    unsigned long long a, b;
    if (!strcmp(cmd, "check") && i == argc) {
        printf("ok\n");
    } else if (!strcmp(cmd, "random-read") && i + 2 == argc && parse_u64(argv[i + 1], &b) == 0 && b > 0) {
        double span = strtod(argv[i], NULL);
        if (!(span > 0 && span <= 1))
            rc = usage("random-read: SPAN must be in (0, 1]");
        else
            printf("%.3f\n", dm_expect_random_read_us(&m, span, (uint32_t)b));
    } else if (!strcmp(cmd, "seq-read") && i + 2 == argc && parse_u64(argv[i], &a) == 0 &&
               parse_u64(argv[i + 1], &b) == 0 && b > 0) {
        printf("%.3f\n", dm_expect_seq_read_mbps(&m, a, (uint32_t)b));
    } else if (!strcmp(cmd, "writeout") && i + 1 < argc && parse_u64(argv[i], &b) == 0 && b > 0) {
        double t = 0;
        for (int k = i + 1; k < argc && rc == 0; k++) {
            if (parse_u64(argv[k], &a) || a + b > size)
                rc = usage("writeout: each OFF must be a byte offset inside the device");
            else
                t = dm_write(&m, a, (uint32_t)b, 0, t);
        }
        if (rc == 0)
            printf("%.3f\n", dm_flush(&m, t) - t);
    } else {
        rc = usage("bad command or arguments (see the comment at the top of calc.c)");
    }
    dm_free(&m);
    return rc;
}
