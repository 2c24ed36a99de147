/* fuzz.h - helpers shared by the libFuzzer targets in native/fuzz/.
 *
 * Each target defines LLVMFuzzerTestOneInput and checks properties of its
 * parser beyond "does not crash": a violated property calls FUZZ_FAIL,
 * which prints one line and aborts, so libFuzzer saves the input as a crash
 * artifact like any sanitizer report.
 */
#ifndef BOATLOAD_FUZZ_H
#define BOATLOAD_FUZZ_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noreturn, format(printf, 3, 4))) static inline void fuzz_fail(const char *file, int line,
                                                                              const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FUZZ PROPERTY VIOLATED at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

#define FUZZ_FAIL(...) fuzz_fail(__FILE__, __LINE__, __VA_ARGS__)
#define FUZZ_ASSERT(cond, fmt, ...)                                                                   \
    do {                                                                                              \
        if (!(cond))                                                                                  \
            FUZZ_FAIL("%s: " fmt, #cond, ##__VA_ARGS__);                                              \
    } while (0)

/* The input as a C string in a heap block of exactly its length + 1, so
 * that ASan sees any read past the terminating NUL. NULL when the input
 * holds a NUL byte (an argument or option value never can). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    if (memchr(data, 0, size))
        return NULL;
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* An error message a parser wrote into err[0..errlen): NUL-terminated
 * within the buffer and not empty. (It may hold a newline copied from the
 * input: cli_error makes every message one line.) */
static inline void fuzz_check_message(const char *what, const char *input, const char *err, size_t errlen)
{
    const char *nul = memchr(err, 0, errlen);
    if (!nul)
        fuzz_fail(__FILE__, __LINE__, "%s('%s'): message not NUL-terminated", what, input);
    if (nul == err)
        fuzz_fail(__FILE__, __LINE__, "%s('%s'): rejected without a message", what, input);
}

#endif
