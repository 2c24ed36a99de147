/* test_slot.c - the interval sampler reads a thread's counts as one snapshot
 * while the thread goes on publishing them (slot.h). */
#include <pthread.h>
#include <stdatomic.h>

#include "../src/slot.h"
#include "../src/timing.h"
#include "test.h"

#define SLOT_TEST_NS 300000000ull /* at least 0.3 s of publishing */
/* On a loaded machine the publisher may get little CPU in 0.3 s (13 changes seen once, beside a
 * parallel build): the reader goes on until it has seen the count move this often, or the limit. */
#define SLOT_CHANGES_WANTED 2000u
#define SLOT_LIMIT_NS 30000000000ull /* 30 s */

struct hammer {
    struct ops_slot slot;
    _Atomic int stop;
};

/* Publish counts that always agree: ops = reads + writes, 4 KiB each. */
static void *publisher(void *p)
{
    struct hammer *h = p;
    for (uint64_t i = 1; !atomic_load_explicit(&h->stop, memory_order_relaxed); i++) {
        struct slot_counts c = {.ops = i, .bytes = i * 4096};
        c.cls[1] = i / 3;
        c.cls[0] = i - c.cls[1];
        slot_write(&h->slot, &c, SLOT_MAX_CLASSES);
    }
    return NULL;
}

void test_slot_snapshot_is_consistent(void)
{
    static struct hammer h;
    pthread_t tid;
    CHECK(pthread_create(&tid, NULL, publisher, &h) == 0);
    uint64_t reads = 0, torn = 0, backwards = 0, last = 0, changes = 0;
    uint64_t t0 = now_ns();
    for (uint64_t el = 0; el < SLOT_TEST_NS || (changes < SLOT_CHANGES_WANTED && el < SLOT_LIMIT_NS);
         el = now_ns() - t0) {
        struct slot_counts c;
        slot_read(&h.slot, &c);
        reads++;
        if (c.cls[0] + c.cls[1] != c.ops || c.bytes != c.ops * 4096 || c.cls[1] != c.ops / 3)
            torn++;
        if (c.ops < last)
            backwards++;
        changes += c.ops != last;
        last = c.ops;
    }
    atomic_store(&h.stop, 1);
    pthread_join(tid, NULL);
    fprintf(stderr, "  %llu reads, %llu saw a new count, last %llu\n", (unsigned long long)reads,
            (unsigned long long)changes, (unsigned long long)last);
    CHECKF(torn == 0, "%llu of %llu snapshots torn", (unsigned long long)torn,
           (unsigned long long)reads);
    CHECK(backwards == 0);
    /* The reader really raced the writer: it saw the count move many times. */
    CHECKF(changes > 1000, "only %llu changes seen", (unsigned long long)changes);
}
