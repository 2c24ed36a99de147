/* model.h - timing model of a block device of the originals' era: a
 * spinning disk (seek by distance, rotation, zones, volatile write cache),
 * a stripe of such disks, or an early SSD. Pure: times are microseconds on
 * a clock the caller passes in, so tests drive it without sleeping; the
 * nbdkit filter (filter.c) passes the monotonic clock and sleeps. */
#ifndef DEVMODEL_MODEL_H
#define DEVMODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

enum dm_kind { DM_HDD, DM_RAID, DM_SSD };

/* How rotational latency is found: from the platter's angle at the model
 * clock (what the filter uses), or pinned to none / a full turn (bounds). */
enum dm_rot { DM_ROT_CLOCK, DM_ROT_NONE, DM_ROT_FULL };

struct dm_params {
    enum dm_kind kind;
    /* spinning disk (hdd, and each member of raid) */
    double rpm;
    double cylinders;
    double seek_track_ms, seek_avg_ms, seek_full_ms;
    double rate_outer_mbps, rate_inner_mbps; /* 1 MB = 1e6 bytes */
    int zones;
    double cache_mb;       /* volatile write cache; 0 = writes go to media */
    double cache_hit_us;   /* a request served from the cache */
    /* raid */
    int disks;
    double chunk_kb;       /* 1 KiB = 1024 bytes */
    /* ssd */
    double read_latency_us, read_mbps, write_latency_us, write_mbps, flush_us;
    /* The stack (nbdkit, FUSE, loop) has its own cost per request: stack_us
     * back to back (no model is allowed to be faster), and overhead_us plus
     * overhead_us_per_mib per MiB once a request has waited (wake-ups),
     * which the filter takes off each modelled time. */
    double stack_us, overhead_us, overhead_us_per_mib;
    enum dm_rot rot;
};

/* One extent [start, end) of dirty bytes in a disk's write cache. */
struct dm_extent {
    uint64_t start, end;
};

struct dm_disk {
    uint64_t size;          /* bytes this disk holds */
    double head_cyl;
    uint64_t last_end;      /* where the last media transfer ended */
    double busy_until;      /* the arm is one: requests queue behind it */
    struct dm_extent *dirty;
    size_t ndirty, cap;
    uint64_t dirty_bytes;
};

struct dm_stats {
    uint64_t reads, writes, flushes, fua_writes, cache_read_hits;
    uint64_t extents_written; /* extents written out of a cache to media */
    double modelled_us;       /* sum of the service times given */
    double flush_us;          /* the part of modelled_us that flushes took */
    /* what the requests were, whatever they cost: bytes, and the reads
     * that began where the request before them (of any kind) ended */
    uint64_t read_bytes, write_bytes, seq_reads;
    double read_us;           /* the part of modelled_us that reads took */
};

struct dm {
    struct dm_params p;
    uint64_t size;
    uint64_t last_end;             /* where the last read or write ended (for seq_reads) */
    double seek_a, seek_b, seek_c; /* seek(x) = a + b sqrt(x) + c x, x = d / full stroke */
    int ndisks;
    struct dm_disk *disk;
    struct dm_stats st;
};

/* Defaults: every field unset (NaN / 0) so that a missing one is caught. */
void dm_params_init(struct dm_params *p);
/* key=value as given to the filter ("dm-" prefix already removed).
 * 0 ok, -1 unknown key, -2 bad value. */
int dm_params_set(struct dm_params *p, const char *key, const char *value);
/* NULL when the parameters describe a device; else a one-line reason that
 * names the field. */
const char *dm_params_check(const struct dm_params *p);

/* The seek curve's coefficients (us); 0 ok, -1 if the points give none. */
int dm_seek_fit(const struct dm_params *p, double *a, double *b, double *c);

/* 0 ok, -1 out of memory or bad parameters (see dm_params_check). */
int dm_init(struct dm *m, const struct dm_params *p, uint64_t size);
void dm_free(struct dm *m);

/* Each returns the model-clock time at which the request completes; the
 * request arrived at now_us. */
double dm_read(struct dm *m, uint64_t off, uint32_t len, double now_us);
double dm_write(struct dm *m, uint64_t off, uint32_t len, int fua, double now_us);
double dm_flush(struct dm *m, double now_us);

/* Seek time (us) over a fraction x in [0, 1] of the full stroke. */
double dm_seek_us(const struct dm *m, double x);
/* Media transfer rate (bytes/us) at a disk offset. */
double dm_rate(const struct dm *m, uint64_t disk_size, uint64_t off);

/* What the parameters give, for bench and tests to compare against:
 * mean service time of random len-byte reads, uniform over the first
 * `span` fraction of the device, no cache hits. */
double dm_expect_random_read_us(const struct dm *m, double span, uint32_t len);
/* Sequential read rate (MB/s) of len-byte requests starting at off. */
double dm_expect_seq_read_mbps(const struct dm *m, uint64_t off, uint32_t len);

#endif
