/* ==== tpace runtime, OpenACC part (embedded by the translator; same for every program) ====
 * Device buffers are explicit allocations (acc_malloc) used through `deviceptr`,
 * so they are separate memory from the host arrays even under a compiler's host
 * fallback: a missing or short transfer shows up as a wrong answer.
 *
 * Queues: chunk c uses queue c % slots for its upload, k steps of kernels and
 * download. Queue `slots` (the carry queue) hands chunk c's copy of the planes
 * chunk c+1 needs below its own (its lower ghost, still at the old time level)
 * from buffer to buffer, so that no chunk reads from the host a plane that an
 * earlier chunk has already written back.
 */
#include <openacc.h>

#define TPACE_MAX_STREAMS 64

typedef struct tpace_acc_array {
    const char *name;                /* for messages and the dump */
    void *host;                      /* the user's array, element (lo, lo, ...) first */
    size_t elem;                     /* bytes per element */
    int transfer;                    /* enum tpace_transfer */
    void *dev[TPACE_MAX_STREAMS];    /* one chunk buffer per queue */
    void *carry;                     /* lower ghost planes handed from chunk c to c + 1 */
} tpace_acc_array;

typedef struct tpace_acc {
    tpace_plan plan;
    tpace_acc_array *arrays;
    int narrays;
    double start;
} tpace_acc;

static inline int tpace_acc_moves_in(const tpace_acc_array *a, int last_block)
{
    return a->transfer == TPACE_UPDOWN || a->transfer == TPACE_UP ||
           (a->transfer == TPACE_LAST_BLOCK && last_block);
}

static inline int tpace_acc_moves_out(const tpace_acc_array *a, int last_block)
{
    return a->transfer == TPACE_UPDOWN || (a->transfer == TPACE_LAST_BLOCK && last_block);
}

static inline void *tpace_acc_alloc(tpace_acc *r, size_t bytes, const char *array, size_t total)
{
    void *p = bytes ? acc_malloc(bytes) : NULL;
    if (bytes && p == NULL) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "device memory ran out allocating %zu bytes for array `%s` (the plan needs %zu bytes: "
                 "TPACE_CHUNK=%ld, TPACE_K=%d, TPACE_STREAMS=%d); lower TPACE_CHUNK first, then TPACE_K or TPACE_STREAMS",
                 bytes, array, total, r->plan.b, r->plan.k, r->plan.streams);
        tpace_fail(&r->plan, msg);
    }
    return p;
}

/* Device bytes the plan needs: a chunk buffer per queue and a carry buffer per array. */
static inline size_t tpace_acc_plan_bytes(const tpace_acc *r)
{
    const tpace_plan *p = &r->plan;
    size_t total = 0;
    for (int a = 0; a < r->narrays; a++) {
        if (r->arrays[a].transfer == TPACE_UNUSED)
            continue;
        size_t plane_bytes = p->plane * r->arrays[a].elem;
        total += (size_t)p->slots * (size_t)tpace_buffer_planes(p) * plane_bytes;
        total += (size_t)(p->reach_lo * p->k) * plane_bytes;
    }
    return total;
}

static inline void tpace_acc_begin(tpace_acc *r, tpace_plan plan, tpace_acc_array *arrays, int narrays)
{
    r->plan = plan;
    r->arrays = arrays;
    r->narrays = narrays;
    const tpace_plan *p = &r->plan;
    size_t total = tpace_acc_plan_bytes(r);
    for (int a = 0; a < narrays; a++) {
        tpace_acc_array *arr = &arrays[a];
        memset(arr->dev, 0, sizeof arr->dev);
        arr->carry = NULL;
        if (arr->transfer == TPACE_UNUSED || p->steps == 0)
            continue;
        size_t plane_bytes = p->plane * arr->elem;
        for (int s = 0; s < p->slots; s++)
            arr->dev[s] = tpace_acc_alloc(r, (size_t)tpace_buffer_planes(p) * plane_bytes, arr->name, total);
        arr->carry = tpace_acc_alloc(r, (size_t)(p->reach_lo * p->k) * plane_bytes, arr->name, total);
    }
    r->start = tpace_now();
}

/* Copy `bytes` (a multiple of 4) between device buffers on queue q. */
static inline void tpace_acc_copy_on_device(void *dst, const void *src, size_t bytes, int q)
{
    unsigned int *d = (unsigned int *)dst;
    const unsigned int *s = (const unsigned int *)src;
    size_t words = bytes / sizeof(unsigned int);
#pragma acc parallel loop gang vector deviceptr(d, s) async(q)
    for (size_t i = 0; i < words; i++)
        d[i] = s[i];
}

/* Bring chunk c to the device for a block of kb steps; returns its queue. */
static inline int tpace_acc_chunk_in(tpace_acc *r, long c, int kb, int last_block)
{
    const tpace_plan *p = &r->plan;
    const int q = (int)(c % p->slots), carry_q = p->slots;
    const long base = tpace_base(p, c, kb), own_lo = tpace_own_lo(p, c);
    const long win_lo = tpace_win_lo(p, c, kb), win_hi = tpace_win_hi(p, c, kb);
    /* Planes below the chunk come from the carry buffer, except for the first chunk. */
    const long host_lo = c == 0 ? win_lo : own_lo;
    const long carry_lo = TPACE_MAX(tpace_own_hi(p, c) - p->reach_lo * kb, p->lo);
    const long carry_hi = tpace_own_hi(p, c);
    const int has_next = c + 1 < p->nchunks;
    for (int a = 0; a < r->narrays; a++) {
        tpace_acc_array *arr = &r->arrays[a];
        if (!tpace_acc_moves_in(arr, last_block))
            continue;
        size_t plane_bytes = p->plane * arr->elem;
        char *dev = (char *)arr->dev[q];
        char *host = (char *)arr->host;
        acc_memcpy_to_device_async(dev + (size_t)(host_lo - base) * plane_bytes,
                                   host + (size_t)(host_lo - p->lo) * plane_bytes,
                                   (size_t)(win_hi - host_lo) * plane_bytes, q);
        if (p->reach_lo == 0)
            continue;
        /* The carry queue waits for this upload, then fills the planes below the
         * chunk from the previous chunk and keeps this chunk's top planes for the next. */
        acc_wait_async(q, carry_q);
        if (c > 0 && win_lo < own_lo)
            tpace_acc_copy_on_device(dev + (size_t)(win_lo - base) * plane_bytes, arr->carry,
                                     (size_t)(own_lo - win_lo) * plane_bytes, carry_q);
        if (has_next && carry_lo < carry_hi)
            tpace_acc_copy_on_device(arr->carry, dev + (size_t)(carry_lo - base) * plane_bytes,
                                     (size_t)(carry_hi - carry_lo) * plane_bytes, carry_q);
    }
    /* The kernels overwrite the buffer: they wait until the carry copies are done. */
    if (p->reach_lo > 0)
        acc_wait_async(carry_q, q);
    return q;
}

/* Send chunk c's own planes back to the host after its kernels. */
static inline void tpace_acc_chunk_out(tpace_acc *r, long c, int kb, int last_block)
{
    const tpace_plan *p = &r->plan;
    const int q = (int)(c % p->slots);
    const long base = tpace_base(p, c, kb), own_lo = tpace_own_lo(p, c), own_hi = tpace_own_hi(p, c);
    for (int a = 0; a < r->narrays; a++) {
        tpace_acc_array *arr = &r->arrays[a];
        if (!tpace_acc_moves_out(arr, last_block))
            continue;
        size_t plane_bytes = p->plane * arr->elem;
        acc_memcpy_from_device_async((char *)arr->host + (size_t)(own_lo - p->lo) * plane_bytes,
                                     (char *)arr->dev[q] + (size_t)(own_lo - base) * plane_bytes,
                                     (size_t)(own_hi - own_lo) * plane_bytes, q);
    }
}

/* The next block reads planes this block wrote back: drain every queue. */
static inline void tpace_acc_block_end(tpace_acc *r)
{
    (void)r;
    acc_wait_all();
}

static inline void tpace_acc_end(tpace_acc *r)
{
    acc_wait_all();
    r->plan.seconds = tpace_now() - r->start;
    for (int a = 0; a < r->narrays; a++) {
        for (int s = 0; s < TPACE_MAX_STREAMS; s++)
            if (r->arrays[a].dev[s])
                acc_free(r->arrays[a].dev[s]);
        if (r->arrays[a].carry)
            acc_free(r->arrays[a].carry);
    }
    tpace_report(&r->plan);
}
/* ==== end of tpace runtime, OpenACC part ==== */
