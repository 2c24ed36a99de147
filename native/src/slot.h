/* slot.h - a thread's running counts, published for the interval sampler.
 *
 * One writer per slot (its I/O thread) and one reader (the phase's main
 * thread, once per interval). The counts must be read as one snapshot: an
 * operation counted in `ops` but not yet in its class would make an interval
 * whose class counts do not add up to its total. A sequence count (a
 * seqlock) gives that without locks on the hot path: the writer makes it odd
 * while it stores, and the reader retries when it saw it odd or changed.
 * Fences and orderings as in H.-J. Boehm, "Can seqlocks get along with
 * programming language memory models?" (MSPC 2012), section 5.
 */
#ifndef BOATLOAD_SLOT_H
#define BOATLOAD_SLOT_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#define SLOT_MAX_CLASSES 2

struct slot_counts {
    uint64_t ops, bytes;
    uint64_t cls[SLOT_MAX_CLASSES];
};

/* Its own cache line: the writers never share one. */
struct ops_slot {
    _Alignas(64) _Atomic uint64_t seq; /* odd while the writer stores */
    _Atomic uint64_t ops;
    _Atomic uint64_t bytes;
    _Atomic uint64_t cls_ops[SLOT_MAX_CLASSES];
};

/* Publish c (its first ncls class counts) into the writer's own slot. */
static inline void slot_write(struct ops_slot *s, const struct slot_counts *c, unsigned ncls)
{
    uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->ops, c->ops, memory_order_relaxed);
    atomic_store_explicit(&s->bytes, c->bytes, memory_order_relaxed);
    for (unsigned k = 0; k < ncls && k < SLOT_MAX_CLASSES; k++)
        atomic_store_explicit(&s->cls_ops[k], c->cls[k], memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

/* Read one consistent snapshot of s into c. A writer preempted mid-store
 * holds the count odd until it runs again: yield rather than spin then. */
static inline void slot_read(const struct ops_slot *s, struct slot_counts *c)
{
    for (unsigned tries = 1;; tries++) {
        uint64_t q0 = atomic_load_explicit(&s->seq, memory_order_acquire);
        c->ops = atomic_load_explicit(&s->ops, memory_order_relaxed);
        c->bytes = atomic_load_explicit(&s->bytes, memory_order_relaxed);
        for (unsigned k = 0; k < SLOT_MAX_CLASSES; k++)
            c->cls[k] = atomic_load_explicit(&s->cls_ops[k], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        uint64_t q1 = atomic_load_explicit(&s->seq, memory_order_relaxed);
        if (q0 == q1 && !(q0 & 1))
            return;
        if (tries % 64 == 0)
            sched_yield();
    }
}

#endif
