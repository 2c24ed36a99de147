/* json.h - minimal streaming JSON writer into a growable buffer.
 *
 * Commas and key/value separators are inserted automatically. Strings are
 * escaped per RFC 8259 (", \, control characters); invalid UTF-8 byte
 * sequences (file names can hold any bytes) are replaced by U+FFFD so the
 * document is always valid UTF-8. Non-finite doubles are written as null.
 * Out of memory sets j->oom and further output is dropped.
 */
#ifndef BOATLOAD_JSON_H
#define BOATLOAD_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 32

struct json {
    char *buf;
    size_t len;
    size_t cap;
    int depth;
    int oom;
    int after_key;
    unsigned char first[JSON_MAX_DEPTH];
};

void json_init(struct json *j);
void json_free(struct json *j);

void json_obj_begin(struct json *j);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j);
void json_arr_end(struct json *j);
void json_key(struct json *j, const char *key);

void json_str(struct json *j, const char *s);            /* NULL -> null */
void json_strn(struct json *j, const char *s, size_t n);
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
void json_double(struct json *j, double v);
void json_bool(struct json *j, int v);
void json_null(struct json *j);

/* Append the escaped form of s[0..n) including the quotes, without any
 * separator handling (used by json_strn; exposed for tests). */
void json_escape(struct json *j, const char *s, size_t n);

#endif
