/* model.c - the device timing model (see model.h). */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIB 1048576.0

static double rot_us(const struct dm_params *p) { return 60e6 / p->rpm; }

double dm_seek_us(const struct dm *m, double x)
{
    if (x <= 0)
        return 0;
    double x1 = 1.0 / m->p.cylinders;
    if (x < x1)
        x = x1;
    if (x > 1)
        x = 1;
    return m->seek_a + m->seek_b * sqrt(x) + m->seek_c * x;
}

/* Zones split a disk's bytes equally, outermost (fastest) first. */
double dm_rate(const struct dm *m, uint64_t disk_size, uint64_t off)
{
    const struct dm_params *p = &m->p;
    if (p->zones <= 1 || disk_size == 0)
        return p->rate_outer_mbps;
    int z = (int)((double)off / (double)disk_size * p->zones);
    if (z >= p->zones)
        z = p->zones - 1;
    return p->rate_outer_mbps - (p->rate_outer_mbps - p->rate_inner_mbps) * z / (p->zones - 1);
}

static double cylinder_of(const struct dm *m, const struct dm_disk *d, uint64_t off)
{
    return floor((double)off / (double)d->size * m->p.cylinders);
}

/* Time until the sector at `off` passes under the head, the head having
 * arrived at time t: the platter turns at rpm from angle 0 at t = 0, and a
 * track holds one turn's worth of bytes at its zone's rate. */
static double rotation_wait(const struct dm *m, const struct dm_disk *d, uint64_t off, double t)
{
    double turn = rot_us(&m->p);
    if (m->p.rot == DM_ROT_NONE)
        return 0;
    if (m->p.rot == DM_ROT_FULL)
        return turn;
    double track = dm_rate(m, d->size, off) * turn;
    double want = fmod((double)off, track) / track;
    double at = fmod(t, turn) / turn;
    double w = want - at;
    if (w < 0)
        w += 1;
    return w * turn;
}

/* Move the arm and transfer len bytes at off, starting at time t. A
 * transfer that continues the last one needs no seek and no rotation (the
 * drive's read-ahead and write-behind keep the stream going). */
static double media(struct dm *m, struct dm_disk *d, uint64_t off, uint64_t len, double t)
{
    if (off != d->last_end) {
        double to = cylinder_of(m, d, off);
        t += dm_seek_us(m, fabs(to - d->head_cyl) / m->p.cylinders);
        t += rotation_wait(m, d, off, t);
    }
    t += (double)len / dm_rate(m, d->size, off);
    d->head_cyl = cylinder_of(m, d, off + len - 1);
    d->last_end = off + len;
    return t;
}

/* ---- the write cache: dirty extents kept sorted and merged -------------- */

static int dirty_insert(struct dm_disk *d, uint64_t s, uint64_t e)
{
    size_t i = 0;
    while (i < d->ndirty && d->dirty[i].end < s)
        i++;
    size_t j = i; /* extents i..j-1 touch [s, e) and merge into it */
    while (j < d->ndirty && d->dirty[j].start <= e) {
        if (d->dirty[j].start < s)
            s = d->dirty[j].start;
        if (d->dirty[j].end > e)
            e = d->dirty[j].end;
        d->dirty_bytes -= d->dirty[j].end - d->dirty[j].start;
        j++;
    }
    if (j == i) { /* no overlap: make room at i */
        if (d->ndirty == d->cap) {
            size_t cap = d->cap ? d->cap * 2 : 64;
            struct dm_extent *n = realloc(d->dirty, cap * sizeof *n);
            if (!n)
                return -1;
            d->dirty = n;
            d->cap = cap;
        }
        memmove(d->dirty + i + 1, d->dirty + i, (d->ndirty - i) * sizeof *d->dirty);
        d->ndirty++;
    } else if (j > i + 1) {
        memmove(d->dirty + i + 1, d->dirty + j, (d->ndirty - j) * sizeof *d->dirty);
        d->ndirty -= j - i - 1;
    }
    d->dirty[i].start = s;
    d->dirty[i].end = e;
    d->dirty_bytes += e - s;
    return 0;
}

static int dirty_covers(const struct dm_disk *d, uint64_t s, uint64_t e)
{
    for (size_t i = 0; i < d->ndirty && d->dirty[i].start <= s; i++)
        if (d->dirty[i].end >= e)
            return 1;
    return 0;
}

/* Write dirty extents out in LBA order from time t until the cache holds
 * no more than keep_bytes. Returns the time the last write ended. The
 * drive writes back only when told (flush, FUA) or when its cache is full:
 * no write-back while idle, so a flush pays for everything since the last. */
static double writeout(struct dm *m, struct dm_disk *d, double t, uint64_t keep_bytes)
{
    size_t n = 0;
    while (n < d->ndirty && d->dirty_bytes > keep_bytes) {
        struct dm_extent x = d->dirty[n++];
        t = media(m, d, x.start, x.end - x.start, t);
        d->dirty_bytes -= x.end - x.start;
        m->st.extents_written++;
    }
    if (n) {
        memmove(d->dirty, d->dirty + n, (d->ndirty - n) * sizeof *d->dirty);
        d->ndirty -= n;
    }
    return t;
}

/* One arm: a request starts when the one before it has ended. */
static double disk_start(const struct dm_disk *d, double now)
{
    return d->busy_until > now ? d->busy_until : now;
}

/* While the host is away between the requests of a sequential read, the
 * drive keeps reading ahead into its buffer, up to READAHEAD_BYTES (assumed:
 * a buffer segment of drives of the era): the media runs at its rate
 * whatever the host's own delay between requests. */
#define READAHEAD_BYTES (2.0 * MIB)

static double disk_read(struct dm *m, struct dm_disk *d, uint64_t off, uint64_t len, double now)
{
    double t = disk_start(d, now);
    if (d->ndirty && dirty_covers(d, off, off + len)) {
        t += m->p.cache_hit_us;
        m->st.cache_read_hits++;
    } else if (off == d->last_end && now > d->busy_until) {
        double idle = now - d->busy_until, cap = READAHEAD_BYTES / dm_rate(m, d->size, off);
        double ahead = idle < cap ? idle : cap;
        t = media(m, d, off, len, t) - ahead;
        if (t < now)
            t = now; /* all of it already in the buffer */
    } else {
        t = media(m, d, off, len, t);
    }
    return d->busy_until = t;
}

static double disk_write(struct dm *m, struct dm_disk *d, uint64_t off, uint64_t len, int fua, double now)
{
    double t = disk_start(d, now);
    uint64_t cache = (uint64_t)(m->p.cache_mb * MIB);
    if (cache == 0 || dirty_insert(d, off, off + len) != 0) {
        t = media(m, d, off, len, t); /* write-through (or no memory for the cache) */
    } else {
        t += m->p.cache_hit_us;
        if (d->dirty_bytes > cache)
            t = writeout(m, d, t, cache / 2);
        if (fua)
            t = writeout(m, d, t, 0);
    }
    return d->busy_until = t;
}

static double disk_flush(struct dm *m, struct dm_disk *d, double now)
{
    double t = disk_start(d, now) + m->p.cache_hit_us;
    return d->busy_until = writeout(m, d, t, 0);
}

/* ---- striping ------------------------------------------------------------ */

/* The part of [off, off + len) that lands on each member: for a contiguous
 * request it is one contiguous range per member. lo[i] == hi[i] if none. */
static void stripe_split(const struct dm *m, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi)
{
    uint64_t chunk = (uint64_t)(m->p.chunk_kb * 1024);
    for (int i = 0; i < m->ndisks; i++)
        lo[i] = hi[i] = 0;
    for (uint64_t o = off, end = off + len; o < end;) {
        uint64_t stripe = o / chunk, next = (stripe + 1) * chunk;
        uint64_t piece = (next < end ? next : end) - o;
        int disk = (int)(stripe % (uint64_t)m->ndisks);
        uint64_t doff = stripe / (uint64_t)m->ndisks * chunk + o % chunk;
        if (lo[disk] == hi[disk])
            lo[disk] = doff;
        hi[disk] = doff + piece;
        o += piece;
    }
}

enum op { OP_READ, OP_WRITE, OP_WRITE_FUA, OP_FLUSH };

static double on_disks(struct dm *m, enum op op, uint64_t off, uint64_t len, double now)
{
    uint64_t lo[m->ndisks], hi[m->ndisks];
    if (op == OP_FLUSH || m->ndisks == 1) {
        for (int i = 0; i < m->ndisks; i++) {
            lo[i] = off;
            hi[i] = off + len;
        }
    } else {
        stripe_split(m, off, len, lo, hi);
    }
    double end = now;
    for (int i = 0; i < m->ndisks; i++) {
        double t;
        if (op == OP_FLUSH)
            t = disk_flush(m, &m->disk[i], now);
        else if (lo[i] == hi[i])
            continue;
        else if (op == OP_READ)
            t = disk_read(m, &m->disk[i], lo[i], hi[i] - lo[i], now);
        else
            t = disk_write(m, &m->disk[i], lo[i], hi[i] - lo[i], op == OP_WRITE_FUA, now);
        if (t > end)
            end = t;
    }
    return end;
}

/* ---- the SSD: a cost per request and per byte, no seek ------------------- */

static double ssd(struct dm *m, enum op op, uint64_t len, double now)
{
    struct dm_disk *d = &m->disk[0];
    double t = d->busy_until > now ? d->busy_until : now;
    if (op == OP_READ)
        t += m->p.read_latency_us + (double)len / m->p.read_mbps;
    else if (op == OP_FLUSH)
        t += m->p.flush_us;
    else
        t += m->p.write_latency_us + (double)len / m->p.write_mbps;
    return d->busy_until = t;
}

static double submit(struct dm *m, enum op op, uint64_t off, uint64_t len, double now)
{
    double end = m->p.kind == DM_SSD ? ssd(m, op, len, now) : on_disks(m, op, off, len, now);
    m->st.modelled_us += end - now;
    return end;
}

double dm_read(struct dm *m, uint64_t off, uint32_t len, double now_us)
{
    m->st.reads++;
    m->st.read_bytes += len;
    if (off == m->last_end)
        m->st.seq_reads++;
    m->last_end = off + len;
    double end = submit(m, OP_READ, off, len, now_us);
    m->st.read_us += end - now_us;
    return end;
}

double dm_write(struct dm *m, uint64_t off, uint32_t len, int fua, double now_us)
{
    m->st.writes++;
    m->st.write_bytes += len;
    m->last_end = off + len;
    if (fua)
        m->st.fua_writes++;
    return submit(m, fua ? OP_WRITE_FUA : OP_WRITE, off, len, now_us);
}

double dm_flush(struct dm *m, double now_us)
{
    m->st.flushes++;
    double end = submit(m, OP_FLUSH, 0, 0, now_us);
    m->st.flush_us += end - now_us;
    return end;
}

int dm_init(struct dm *m, const struct dm_params *p, uint64_t size)
{
    memset(m, 0, sizeof *m);
    if (dm_params_check(p))
        return -1;
    m->p = *p;
    m->size = size;
    m->last_end = UINT64_MAX;
    m->ndisks = p->kind == DM_RAID ? p->disks : 1;
    m->disk = calloc((size_t)m->ndisks, sizeof *m->disk);
    if (!m->disk)
        return -1;
    uint64_t member = size;
    if (p->kind == DM_RAID) {
        uint64_t stripe = (uint64_t)(p->chunk_kb * 1024) * (uint64_t)p->disks;
        member = (size + stripe - 1) / stripe * (uint64_t)(p->chunk_kb * 1024);
    }
    for (int i = 0; i < m->ndisks; i++) {
        m->disk[i].size = member ? member : 1;
        m->disk[i].last_end = UINT64_MAX; /* the first access seeks */
    }
    if (p->kind != DM_SSD && dm_seek_fit(p, &m->seek_a, &m->seek_b, &m->seek_c) != 0) {
        dm_free(m);
        return -1;
    }
    return 0;
}

void dm_free(struct dm *m)
{
    for (int i = 0; m->disk && i < m->ndisks; i++)
        free(m->disk[i].dirty);
    free(m->disk);
    m->disk = NULL;
}

/* ---- what the parameters give ------------------------------------------- */

double dm_expect_random_read_us(const struct dm *m, double span, uint32_t len)
{
    const struct dm_params *p = &m->p;
    if (p->kind == DM_SSD)
        return p->read_latency_us + len / p->read_mbps;
    /* seek: distance between two uniform points of the span has density
     * 2(1 - y) over y = distance / span; midpoint rule */
    const int n = 20000;
    double seek = 0, xfer = 0;
    for (int i = 0; i < n; i++) {
        double y = (i + 0.5) / n;
        seek += dm_seek_us(m, span * y) * 2 * (1 - y) / n;
        uint64_t off = (uint64_t)(y * span * (double)m->disk[0].size);
        xfer += len / dm_rate(m, m->disk[0].size, off) / n;
    }
    return seek + rot_us(p) / 2 + xfer;
}

double dm_expect_seq_read_mbps(const struct dm *m, uint64_t off, uint32_t len)
{
    const struct dm_params *p = &m->p;
    if (p->kind == DM_SSD)
        return len / (p->read_latency_us + len / p->read_mbps);
    if (m->ndisks == 1)
        return dm_rate(m, m->disk[0].size, off);
    uint64_t lo[m->ndisks], hi[m->ndisks];
    stripe_split(m, off, len, lo, hi);
    double slowest = 0;
    for (int i = 0; i < m->ndisks; i++) {
        double t = (double)(hi[i] - lo[i]) / dm_rate(m, m->disk[i].size, lo[i]);
        if (t > slowest)
            slowest = t;
    }
    return len / slowest;
}
