/* json.c - JSON writer with proper string escaping. */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_init(struct json *j)
{
    memset(j, 0, sizeof(*j));
    j->first[0] = 1;
}

void json_free(struct json *j)
{
    free(j->buf);
    j->buf = NULL;
    j->len = j->cap = 0;
}

static int reserve(struct json *j, size_t extra)
{
    if (j->oom)
        return -1;
    if (j->len + extra + 1 <= j->cap)
        return 0;
    size_t cap = j->cap ? j->cap : 4096;
    while (cap < j->len + extra + 1)
        cap *= 2;
    char *nb = realloc(j->buf, cap);
    if (!nb) {
        j->oom = 1;
        return -1;
    }
    j->buf = nb;
    j->cap = cap;
    return 0;
}

static void put(struct json *j, const char *s, size_t n)
{
    if (reserve(j, n) != 0)
        return;
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void putc1(struct json *j, char c)
{
    put(j, &c, 1);
}

/* Separator before a value or a key. */
static void sep(struct json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (!j->first[j->depth])
        putc1(j, ',');
    j->first[j->depth] = 0;
}

static void open_(struct json *j, char c)
{
    sep(j);
    putc1(j, c);
    if (j->depth + 1 < JSON_MAX_DEPTH)
        j->depth++;
    j->first[j->depth] = 1;
}

static void close_(struct json *j, char c)
{
    putc1(j, c);
    if (j->depth > 0)
        j->depth--;
}

void json_obj_begin(struct json *j) { open_(j, '{'); }
void json_obj_end(struct json *j) { close_(j, '}'); }
void json_arr_begin(struct json *j) { open_(j, '['); }
void json_arr_end(struct json *j) { close_(j, ']'); }

void json_key(struct json *j, const char *key)
{
    sep(j);
    json_escape(j, key, strlen(key));
    putc1(j, ':');
    j->after_key = 1;
}

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    else if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

void json_escape(struct json *j, const char *str, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    putc1(j, '"');
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(j, e, 2);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\b': put(j, "\\b", 2); break;
            case '\f': put(j, "\\f", 2); break;
            case '\n': put(j, "\\n", 2); break;
            case '\r': put(j, "\\r", 2); break;
            case '\t': put(j, "\\t", 2); break;
            default: {
                char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                put(j, e, 6);
            }
            }
            i++;
        } else if (c < 0x80) {
            /* run of plain ASCII */
            size_t k = i;
            while (k < n && s[k] >= 0x20 && s[k] < 0x80 && s[k] != '"' && s[k] != '\\')
                k++;
            put(j, (const char *)s + i, k - i);
            i = k;
        } else {
            size_t len = utf8_seq(s + i, n - i);
            if (len) {
                put(j, (const char *)s + i, len);
                i += len;
            } else {
                put(j, "\\ufffd", 6);
                i++;
            }
        }
    }
    putc1(j, '"');
}

void json_strn(struct json *j, const char *s, size_t n)
{
    sep(j);
    json_escape(j, s, n);
}

void json_str(struct json *j, const char *s)
{
    if (!s) {
        json_null(j);
        return;
    }
    json_strn(j, s, strlen(s));
}

static void raw(struct json *j, const char *s)
{
    sep(j);
    put(j, s, strlen(s));
}

void json_u64(struct json *j, uint64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    raw(j, b);
}

void json_i64(struct json *j, int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRId64, v);
    raw(j, b);
}

void json_double(struct json *j, double v)
{
    if (!isfinite(v)) {
        raw(j, "null");
        return;
    }
    char b[40];
    snprintf(b, sizeof b, "%.12g", v);
    /* "%g" output is valid JSON except that it may lack a leading digit
     * (it never does) or use "inf"/"nan" (excluded above). */
    raw(j, b);
}

void json_bool(struct json *j, int v) { raw(j, v ? "true" : "false"); }
void json_null(struct json *j) { raw(j, "null"); }
