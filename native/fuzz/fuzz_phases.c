/* fuzz_phases.c - libFuzzer target for meta's --phases list
 * (meta_parse_phases): "create:seq,open:rand,..." with the operations
 * create|open|stat|read|delete, each with an optional order :seq,
 * :sequential, :rand or :random, joined by ',', at most 16.
 *
 * The input is the option value (no NUL bytes). The parser must accept
 * exactly what a reference written from those rules accepts, with the
 * same operations and orders; an accepted list spelled canonically parses
 * to the same list; a rejection leaves a message, also in small buffers.
 */
#include "cli.h"
#include "fuzz.h"
#include "meta.h"

static int ref_op(const char *s, size_t n)
{
    static const char *const ops[] = {"create", "open", "stat", "read", "delete"};
    for (int k = 0; k < 5; k++)
        if (strlen(ops[k]) == n && memcmp(s, ops[k], n) == 0)
            return k;
    return -1;
}

static int ref_order(const char *s, size_t n)
{
    if ((n == 3 && memcmp(s, "seq", 3) == 0) || (n == 10 && memcmp(s, "sequential", 10) == 0))
        return 0;
    if ((n == 4 && memcmp(s, "rand", 4) == 0) || (n == 6 && memcmp(s, "random", 6) == 0))
        return 1;
    return -1;
}

/* 1 when s is a valid list, with its phases. */
static int ref_parse(const char *s, struct meta_phases *out)
{
    memset(out, 0, sizeof *out);
    size_t len = strlen(s), start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ',')
            continue;
        /* the item s[start..i) */
        const char *item = s + start;
        size_t n = i - start, colon = n;
        for (size_t k = 0; k < n; k++)
            if (item[k] == ':') {
                colon = k;
                break;
            }
        int op = ref_op(item, colon);
        int order = colon == n ? 0 : ref_order(item + colon + 1, n - colon - 1);
        if (op < 0 || order < 0 || out->n == META_MAX_PHASES)
            return 0;
        out->p[out->n++] = (struct meta_phase){.op = op, .random = order};
        start = i + 1;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = fuzz_cstr(data, size);
    if (!in)
        return 0;
    struct meta_phases got, want;
    char err[CLI_ERR_MAX];
    int ok = ref_parse(in, &want);
    int rc = meta_parse_phases(in, &got, err, sizeof err);
    FUZZ_ASSERT((rc == 0) == ok, "meta_parse_phases('%s') = %d, reference %s", in, rc, ok ? "accepts" : "rejects");
    if (rc != 0) {
        fuzz_check_message("meta_parse_phases", in, err, sizeof err);
        size_t small[] = {12, 1};
        for (size_t k = 0; k < 2; k++) {
            char *e = malloc(small[k]);
            struct meta_phases tmp;
            FUZZ_ASSERT(meta_parse_phases(in, &tmp, e, small[k]) != 0, "'%s' accepted the second time", in);
            FUZZ_ASSERT(memchr(e, 0, small[k]) != NULL, "'%s': message not terminated in %zu bytes", in, small[k]);
            free(e);
        }
        free(in);
        return 0;
    }
    FUZZ_ASSERT(got.n == want.n && got.n >= 1 && got.n <= META_MAX_PHASES, "'%s': %u phases, expected %u", in,
                got.n, want.n);
    char canon[META_MAX_PHASES * 16 + 1] = "";
    size_t len = 0;
    for (unsigned k = 0; k < got.n; k++) {
        FUZZ_ASSERT(got.p[k].op == want.p[k].op && got.p[k].random == want.p[k].random,
                    "'%s' phase %u: op %d random %d", in, k, got.p[k].op, got.p[k].random);
        len += (size_t)snprintf(canon + len, sizeof canon - len, "%s%s:%s", k ? "," : "",
                                meta_op_names[got.p[k].op], got.p[k].random ? "rand" : "seq");
    }
    for (unsigned k = got.n; k < META_MAX_PHASES; k++)
        FUZZ_ASSERT(got.p[k].op == 0 && got.p[k].random == 0, "'%s': phase %u beyond the list is set", in, k);
    struct meta_phases again;
    FUZZ_ASSERT(meta_parse_phases(canon, &again, err, sizeof err) == 0 && memcmp(&again, &got, sizeof got) == 0,
                "'%s': canonical '%s' differs", in, canon);
    free(in);
    return 0;
}
