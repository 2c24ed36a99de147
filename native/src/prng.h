/* prng.h - small fast pseudo-random generators and a keyed permutation.
 *
 *  - splitmix64: seeding / key derivation, and a 64-bit mixing function.
 *  - xoshiro256**: general-purpose generator for workloads (offsets, sizes).
 *  - perm: a keyed pseudo-random permutation of [0, n) that needs O(1)
 *    memory (4-round Feistel network on the next even power of two, with
 *    cycle walking). Used for "--order random": the same key always gives
 *    the same order, and the permutation of a billion indices costs nothing
 *    to set up. Expected < 4 Feistel evaluations per index.
 */
#ifndef BOATLOAD_PRNG_H
#define BOATLOAD_PRNG_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t splitmix64(uint64_t *state)
{
    return mix64(*state += 0x9E3779B97F4A7C15ull);
}

struct xoshiro256 {
    uint64_t s[4];
};

void xoshiro256_seed(struct xoshiro256 *g, uint64_t seed);

static inline uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t xoshiro256_next(struct xoshiro256 *g)
{
    uint64_t *s = g->s;
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* Uniform double in [0, 1). */
static inline double xoshiro256_double(struct xoshiro256 *g)
{
    return (double)(xoshiro256_next(g) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n) (n >= 1) by multiply-high: bias < n / 2^64. */
static inline uint64_t xoshiro256_below(struct xoshiro256 *g, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)xoshiro256_next(g) * n) >> 64);
}

/* Fill buf with pseudo-random bytes from seed; with nonzero, no byte is 0
 * (data that no file system can store as a hole or compress to nothing). */
void prng_fill(void *buf, size_t len, uint64_t seed, int nonzero);

#define PERM_ROUNDS 4

struct perm {
    uint64_t n;
    unsigned half;      /* bits per Feistel half */
    uint64_t mask;      /* (1 << half) - 1 */
    uint64_t key[PERM_ROUNDS];
};

void perm_init(struct perm *p, uint64_t n, uint64_t key);

/* The image of i (i < n) under the permutation. */
static inline uint64_t perm_apply(const struct perm *p, uint64_t i)
{
    if (p->n <= 1)
        return 0;
    do {
        uint64_t l = i >> p->half, r = i & p->mask;
        for (int k = 0; k < PERM_ROUNDS; k++) {
            uint64_t t = l ^ (mix64(r ^ p->key[k]) & p->mask);
            l = r;
            r = t;
        }
        i = (l << p->half) | r;
    } while (i >= p->n);
    return i;
}

#endif
