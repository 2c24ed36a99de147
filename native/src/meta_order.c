/* meta_order.c - the meta workload's visit order (see meta.h): what
 * meta.c (the plan) and meta_phases.c (the file phases) share, in a file of
 * its own so that neither of them calls the other back. */
#include "meta.h"

void meta_order_init(struct meta_order *o, uint64_t files, int random, uint64_t seed, unsigned phase_index)
{
    o->random = random;
    perm_init(&o->perm, files, mix64(mix64(seed ^ 0x6d657461ull) + phase_index + 1));
}

void meta_order_init_share(struct meta_order *o, uint64_t begin, uint64_t end, int random, uint64_t seed,
                           unsigned phase_index)
{
    o->random = random;
    perm_init(&o->perm, end - begin, mix64(mix64(seed ^ 0x6d657461ull) + phase_index + 1) ^ mix64(begin + 1));
}
