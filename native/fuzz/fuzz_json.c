/* fuzz_json.c - libFuzzer target for the JSON string escaping that every
 * user-given string reaches (--dir, --file, --out, error paths): json_escape
 * through json_key and json_strn inside an object.
 *
 * The input is any bytes (NULs too: json_strn takes a length). The document
 * must be {"<escaped>":"<escaped>"}; each escaped string must be valid
 * UTF-8 with no raw control character, and decode back to the input with
 * every byte that does not start a well-formed UTF-8 sequence (Unicode
 * table 3-7) replaced by U+FFFD - a validator written here independently
 * of json.c's.
 */
#include "fuzz.h"
#include "json.h"

/* Length of the well-formed UTF-8 sequence at s (Unicode 15, table 3-7), or 0. */
static size_t wellformed(const unsigned char *s, size_t n)
{
    static const struct {
        unsigned char lo, hi;       /* first byte */
        unsigned char len;
        unsigned char lo2, hi2;     /* second byte */
    } rows[] = {
        {0x00, 0x7F, 1, 0, 0},       {0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF},
        {0xE1, 0xEC, 3, 0x80, 0xBF}, {0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF},
        {0xF0, 0xF0, 4, 0x90, 0xBF}, {0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        if (s[0] < rows[r].lo || s[0] > rows[r].hi)
            continue;
        size_t len = rows[r].len;
        if (len == 1)
            return 1;
        if (n < len || s[1] < rows[r].lo2 || s[1] > rows[r].hi2)
            return 0;
        for (size_t i = 2; i < len; i++)
            if (s[i] < 0x80 || s[i] > 0xBF)
                return 0;
        return len;
    }
    return 0;
}

/* The input as the document should carry it: ill-formed bytes as U+FFFD. */
static unsigned char *expected(const unsigned char *s, size_t n, size_t *outlen)
{
    unsigned char *e = malloc(3 * n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t len = wellformed(s + i, n - i);
        if (len) {
            memcpy(e + k, s + i, len);
            k += len;
            i += len;
        } else {
            memcpy(e + k, "\xEF\xBF\xBD", 3);
            k += 3;
            i++;
        }
    }
    *outlen = k;
    return e;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decode the JSON string at doc[*pos] (the opening quote) into out; advances
 * *pos past the closing quote. Fails the run on anything invalid. */
static size_t decode(const char *doc, size_t doclen, size_t *pos, unsigned char *out)
{
    const unsigned char *d = (const unsigned char *)doc;
    size_t i = *pos, k = 0;
    FUZZ_ASSERT(i < doclen && d[i] == '"', "no string at %zu of '%s'", i, doc);
    i++;
    for (;;) {
        FUZZ_ASSERT(i < doclen, "unterminated string in '%s'", doc);
        unsigned char c = d[i];
        if (c == '"')
            break;
        FUZZ_ASSERT(c >= 0x20, "raw control character 0x%02x in '%s'", c, doc);
        if (c == '\\') {
            FUZZ_ASSERT(i + 1 < doclen, "dangling escape in '%s'", doc);
            char e = doc[i + 1];
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *simple = e ? strchr(from, e) : NULL;
            if (simple) {
                out[k++] = (unsigned char)to[simple - from];
                i += 2;
                continue;
            }
            FUZZ_ASSERT(e == 'u' && i + 5 < doclen, "bad escape in '%s'", doc);
            int h[4];
            for (int q = 0; q < 4; q++)
                FUZZ_ASSERT((h[q] = hexval(doc[i + 2 + q])) >= 0, "bad \\u escape in '%s'", doc);
            unsigned cp = (unsigned)(h[0] << 12 | h[1] << 8 | h[2] << 4 | h[3]);
            FUZZ_ASSERT(cp < 0x80 || cp == 0xFFFD, "unexpected \\u%04x in '%s'", cp, doc);
            if (cp < 0x80) {
                out[k++] = (unsigned char)cp;
            } else {
                memcpy(out + k, "\xEF\xBF\xBD", 3);
                k += 3;
            }
            i += 6;
            continue;
        }
        size_t len = wellformed(d + i, doclen - i);
        FUZZ_ASSERT(len > 0, "ill-formed UTF-8 at %zu of the document", i);
        memcpy(out + k, d + i, len);
        k += len;
        i += len;
    }
    *pos = i + 1;
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* json_key takes a C string: the key is the input up to its first NUL */
    char *key = malloc(size + 1);
    memcpy(key, data, size);
    key[size] = '\0';
    size_t keylen = strlen(key);

    struct json j;
    json_init(&j);
    json_obj_begin(&j);
    json_key(&j, key);
    json_strn(&j, (const char *)data, size);
    json_obj_end(&j);
    FUZZ_ASSERT(!j.oom && j.buf && j.len == strlen(j.buf), "document length %zu", j.len);

    size_t pos = 0;
    FUZZ_ASSERT(j.len >= 2 && j.buf[0] == '{', "document does not open an object");
    pos = 1;
    size_t cap = 3 * size + 1, got_len, want_len;
    unsigned char *got = malloc(cap);
    unsigned char *want;

    got_len = decode(j.buf, j.len, &pos, got);
    want = expected((const unsigned char *)key, keylen, &want_len);
    FUZZ_ASSERT(got_len == want_len && memcmp(got, want, got_len) == 0, "key decodes to something else");
    free(want);

    FUZZ_ASSERT(pos < j.len && j.buf[pos] == ':', "no ':' after the key");
    pos++;
    got_len = decode(j.buf, j.len, &pos, got);
    want = expected(data, size, &want_len);
    FUZZ_ASSERT(got_len == want_len && memcmp(got, want, got_len) == 0, "value decodes to something else");
    free(want);
    FUZZ_ASSERT(pos + 1 == j.len && j.buf[pos] == '}', "trailing bytes after the value");

    free(got);
    json_free(&j);
    free(key);
    return 0;
}
