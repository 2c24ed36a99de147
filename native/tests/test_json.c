/* test_json.c - JSON string escaping and document structure. */
#include <math.h>
#include <string.h>

#include "json.h"
#include "test.h"

static int escapes_to(const char *in, size_t n, const char *want)
{
    struct json j;
    json_init(&j);
    json_strn(&j, in, n);
    int ok = j.buf && strcmp(j.buf, want) == 0;
    if (!ok)
        fprintf(stderr, "  escape: got %s want %s\n", j.buf ? j.buf : "(null)", want);
    json_free(&j);
    return ok;
}

#define ESC(lit, want) escapes_to(lit, sizeof(lit) - 1, want)

void test_json_escape(void)
{
    CHECK(ESC("plain", "\"plain\""));
    CHECK(ESC("", "\"\""));
    CHECK(ESC("a\"b", "\"a\\\"b\""));
    CHECK(ESC("back\\slash", "\"back\\\\slash\""));
    CHECK(ESC("/", "\"/\""));
    CHECK(ESC("\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\""));
    CHECK(ESC("\x01\x1f", "\"\\u0001\\u001f\""));
    CHECK(ESC("nul\0in", "\"nul\\u0000in\""));
    CHECK(ESC("\x7f", "\"\x7f\""));
    CHECK(ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\""));
    CHECK(ESC("bad\xff", "\"bad\\ufffd\""));
    CHECK(ESC("\xc0\xaf", "\"\\ufffd\\ufffd\""));          /* overlong */
    CHECK(ESC("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"")); /* surrogate */
    CHECK(ESC("\xe2\x82", "\"\\ufffd\\ufffd\""));          /* truncated */
    CHECK(ESC("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"")); /* > U+10FFFF */
}

void test_json_structure(void)
{
    struct json j;
    json_init(&j);
    json_obj_begin(&j);
    json_key(&j, "a");
    json_u64(&j, 18446744073709551615ull);
    json_key(&j, "b");
    json_arr_begin(&j);
    json_i64(&j, -5);
    json_double(&j, 0.5);
    json_double(&j, NAN);
    json_double(&j, INFINITY);
    json_bool(&j, 1);
    json_null(&j);
    json_obj_begin(&j);
    json_obj_end(&j);
    json_arr_begin(&j);
    json_arr_end(&j);
    json_arr_end(&j);
    json_key(&j, "k\"ey");
    json_str(&j, NULL);
    json_key(&j, "s");
    json_str(&j, "v");
    json_obj_end(&j);
    const char *want =
        "{\"a\":18446744073709551615,\"b\":[-5,0.5,null,null,true,null,{},[]],\"k\\\"ey\":null,\"s\":\"v\"}";
    CHECKF(j.buf && strcmp(j.buf, want) == 0, "got %s", j.buf);
    CHECK(!j.oom && j.len == strlen(want));
    json_free(&j);

    /* large documents grow the buffer */
    json_init(&j);
    json_arr_begin(&j);
    for (int i = 0; i < 100000; i++)
        json_u64(&j, (uint64_t)i);
    json_arr_end(&j);
    CHECK(!j.oom && j.buf[0] == '[' && j.buf[j.len - 1] == ']' && strstr(j.buf, ",99999]"));
    json_free(&j);
}
