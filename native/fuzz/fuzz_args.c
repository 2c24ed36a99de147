/* fuzz_args.c - libFuzzer target for the whole command line: main()'s
 * workload dispatch (--version, --help, tree, meta, seqio, randio) and each
 * workload's option table and cross-option checks, up to the point where
 * the workload would first touch the file system.
 *
 * Input: the arguments after "boatload-worker", separated by NUL bytes
 * (like /proc/PID/cmdline), at most 64. Each argument gets a heap block of
 * exactly its length + 1, so ASan sees a read past any argument's end.
 *
 * Why this level. The parsers never call exit(): each workload's
 * *_main(argc, argv) returns 2 after one cli_error() line. But a *_main
 * that accepts its arguments goes on to open --dir and run the workload,
 * and installs SIGINT/SIGTERM handlers on the way (its plan step, after
 * the parse step, still checks the options against each other and opens
 * DIR). Rather than expose those static steps, this target runs the real
 * main() (main.c built with
 * -Dmain=boatload_worker_main) and intercepts four functions at link time
 * with ld's --wrap (see FUZZ_ARGS_WRAP in native/Makefile):
 *
 *   common_open_target, common_open_dir  the first file-system access of
 *       every workload: they record that the arguments were accepted and
 *       fail silently, so the workload returns 2 without a directory ever
 *       being opened (an input like "--dir / --allow-existing" is harmless);
 *   signals_install     a no-op, libFuzzer keeps its own handlers;
 *   common_ensure_nofile  a fixed hard limit of 2^20 descriptors instead of
 *       this machine's (raising the limit is process state, and a crash
 *       must not depend on the machine's limits);
 *   cli_error           counts the messages and keeps the last one instead
 *       of printing thousands of lines a second.
 *
 * Properties besides the sanitizers:
 *  - accepted arguments reach the directory with a --dir, --threads 1..256
 *    and --interval 0.01..86400, and without any message;
 *  - rejected arguments give exit code 2 and exactly one non-empty message;
 *  - exit code 0 only for --version, --help and -h, and for a workload
 *    whose arguments hold "--help" (its generated help), always without a
 *    message; a workload with "--help" among its arguments always exits 0.
 */
#include <math.h>

#include "cli.h"
#include "common.h"
#include "fuzz.h"
#include "phase.h"
#include "report.h"

#define MAX_ARGS 64
#define FAKE_NOFILE_HARD (1u << 20)

int boatload_worker_main(int argc, char **argv);

static int reached_dir;   /* a workload accepted its arguments */
static int messages;      /* cli_error calls */
static char message[CLI_ERR_MAX];
static const char *current; /* the input, for failure messages */

static int reached(const struct common_opts *c)
{
    FUZZ_ASSERT(!reached_dir, "the directory opened twice for %s", current);
    FUZZ_ASSERT(messages == 0, "accepted after the message '%s' for %s", message, current);
    FUZZ_ASSERT(c->dir && c->dir[0], "accepted without --dir: %s", current);
    FUZZ_ASSERT(c->threads >= 1 && c->threads <= PHASE_MAX_THREADS, "--threads %llu accepted: %s",
                (unsigned long long)c->threads, current);
    FUZZ_ASSERT(c->interval_s >= 0.01 && c->interval_s <= 86400 && isfinite(c->interval_s),
                "--interval %g accepted: %s", c->interval_s, current);
    reached_dir = 1;
    return -1; /* as if the directory were missing, but without a message */
}

int __wrap_common_open_target(const struct common_opts *c);
int __wrap_common_open_target(const struct common_opts *c)
{
    return reached(c);
}

int __wrap_common_open_dir(const struct common_opts *c);
int __wrap_common_open_dir(const struct common_opts *c)
{
    return reached(c);
}

int __wrap_signals_install(void);
int __wrap_signals_install(void)
{
    return 0;
}

int __wrap_common_ensure_nofile(uint64_t need, uint64_t *limit);
int __wrap_common_ensure_nofile(uint64_t need, uint64_t *limit)
{
    if (need <= FAKE_NOFILE_HARD)
        return 0;
    *limit = FAKE_NOFILE_HARD;
    return -1;
}

void __wrap_cli_error(const char *fmt, ...);
void __wrap_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    messages++;
}

/* A workload's call with "--help" among its arguments. */
static int workload_help(int argc, char **argv)
{
    static const char *const names[] = {"tree", "meta", "seqio", "randio"};
    int workload = 0;
    for (size_t k = 0; argc >= 2 && k < sizeof names / sizeof names[0]; k++)
        workload |= strcmp(argv[1], names[k]) == 0;
    for (int i = 2; workload && i < argc; i++)
        if (strcmp(argv[i], "--help") == 0)
            return 1;
    return 0;
}

/* The arguments for a failure message: quoted, separated by spaces. */
static void describe(char **argv, int argc, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 1; i < argc && n < len; i++) {
        int w = snprintf(buf + n, len - n, "%s'%s'", i > 1 ? " " : "", argv[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "boatload-worker";
    size_t start = 0;
    while (start < size) {
        if (argc == MAX_ARGS + 1)
            goto out; /* more arguments than any real call: not interesting */
        const uint8_t *nul = memchr(data + start, 0, size - start);
        size_t len = nul ? (size_t)(nul - (data + start)) : size - start;
        argv[argc] = malloc(len + 1);
        memcpy(argv[argc], data + start, len);
        argv[argc][len] = '\0';
        argc++;
        start += len + 1;
    }
    argv[argc] = NULL;

    char desc[2048];
    describe(argv, argc, desc, sizeof desc);
    current = desc;
    reached_dir = 0;
    messages = 0;
    message[0] = '\0';

    int rc = boatload_worker_main(argc, argv);

    if (workload_help(argc, argv))
        FUZZ_ASSERT(rc == EXIT_OK && messages == 0 && !reached_dir, "--help: rc %d with %d messages ('%s'): %s", rc,
                    messages, message, desc);
    if (reached_dir) {
        FUZZ_ASSERT(rc == EXIT_USAGE && messages == 0, "accepted, then rc %d with %d messages ('%s'): %s", rc,
                    messages, message, desc);
    } else if (rc == EXIT_OK) {
        FUZZ_ASSERT(argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "--help") == 0 ||
                                  strcmp(argv[1], "-h") == 0 || workload_help(argc, argv)),
                    "exit 0 without doing anything: %s", desc);
        FUZZ_ASSERT(messages == 0, "exit 0 with the message '%s': %s", message, desc);
    } else {
        FUZZ_ASSERT(rc == EXIT_USAGE, "rc %d ('%s'): %s", rc, message, desc);
        FUZZ_ASSERT(messages == 1, "%d messages, the last '%s': %s", messages, message, desc);
        FUZZ_ASSERT(message[0] != '\0' && strstr(message, ": ") != NULL, "message '%s' names no argument: %s",
                    message, desc);
    }
out:
    for (int i = 1; i < argc; i++)
        free(argv[i]);
    return 0;
}
