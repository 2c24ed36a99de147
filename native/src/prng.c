/* prng.c - seeding of xoshiro256** and set-up of keyed permutations. */
#include "prng.h"

#include <string.h>

void xoshiro256_seed(struct xoshiro256 *g, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < 4; i++)
        g->s[i] = splitmix64(&st);
}

void perm_init(struct perm *p, uint64_t n, uint64_t key)
{
    p->n = n;
    unsigned bits = n > 1 ? 64u - (unsigned)__builtin_clzll(n - 1) : 1u;
    p->half = (bits + 1) / 2;
    p->mask = p->half >= 64 ? UINT64_MAX : (1ull << p->half) - 1;
    uint64_t st = key;
    for (int k = 0; k < PERM_ROUNDS; k++)
        p->key[k] = splitmix64(&st);
}

void prng_fill(void *buf, size_t len, uint64_t seed, int nonzero)
{
    struct xoshiro256 g;
    xoshiro256_seed(&g, seed);
    unsigned char *p = buf;
    while (len > 0) {
        uint64_t v = xoshiro256_next(&g);
        size_t n = len < sizeof v ? len : sizeof v;
        memcpy(p, &v, n);
        if (nonzero)
            for (size_t i = 0; i < n; i++)
                if (p[i] == 0)
                    p[i] = 0xa5;
        p += n;
        len -= n;
    }
}
