/* ==== tpace runtime, CUDA part (shipped by the translator; the same for every program) ====
 * The device hooks of the common executor on CUDA streams: queue q is stream q,
 * marks are events, every CUDA call is checked. The user's arrays are registered
 * (page-locked) for the pipeline so that copies run at pinned-memory speed and
 * overlap kernels; a chunk along the outermost axis is contiguous, so nothing is
 * packed on the host.
 * Without nvcc the emulation before this part stands in for CUDA. This part and the
 * kernels are C++ (nvcc's); the host program, in its own C file, calls the hooks
 * and the launchers through their extern "C" declarations.
 */
/* ---- Error checks: every call, in plain words ---- */
static inline void tpace_cuda_check(cudaError_t e, const char *call, const char *where)
{
    if (e != cudaSuccess) {
        char msg[512];
        snprintf(msg, sizeof msg, "CUDA call %s failed: %s", call, cudaGetErrorString(e));
        tpace_stop(where, msg);
    }
}
#define TPACE_CUDA(r, call) tpace_cuda_check((call), #call, (r)->plan.s.where)

/* A kernel launch is checked for a bad configuration at once; its execution
 * errors surface at the next synchronisation, which is checked too. */
static inline void tpace_cuda_check_launch(const tpace_rt *r, const char *kernel)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        char msg[512];
        snprintf(msg, sizeof msg, "launching %s failed: %s", kernel, cudaGetErrorString(e));
        tpace_stop(r->plan.s.where, msg);
    }
}

/* Streams (one per slot plus the mm carry stream), one event per mark, and
 * whether each array's host memory could be registered. */
typedef struct tpace_cuda {
    cudaStream_t stream[TPACE_MAX_SLOTS + 1];
    cudaEvent_t mark[TPACE_MARKS];
    cudaEvent_t scratch[TPACE_MAX_SLOTS + 1];
    int registered[TPACE_MAX_SLOTS];
    void *locked[TPACE_MAX_SLOTS]; /* what was page-locked, per array */
    long max_blocks; /* blocks per launch: four waves of eight 256-thread blocks per multiprocessor */
    cudaEvent_t *stamps; /* TPACE_TRACE: timing events, in the order recorded */
    long nstamps, stamp_cap;
    cudaEvent_t *flags; /* tpace_dev_flag's events, in the order recorded */
    long nflags, flag_cap;
} tpace_cuda;

static inline tpace_cuda *tpace_cuda_of(tpace_rt *r) { return (tpace_cuda *)r->target; }

/* The stream a chunk's kernels run on. */
static inline cudaStream_t tpace_stream(tpace_rt *r, int q) { return tpace_cuda_of(r)->stream[q]; }

TPACE_HOOK void *tpace_dev_alloc(tpace_rt *r, size_t bytes)
{
    (void)r;
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the error: the executor reports it in words */
        return NULL;
    }
    return p;
}

TPACE_HOOK void tpace_dev_free(tpace_rt *r, void *p)
{
    TPACE_CUDA(r, cudaFree(p));
}

TPACE_HOOK void tpace_dev_upload(tpace_rt *r, void *dev, const void *host, size_t bytes, int q)
{
    TPACE_CUDA(r, cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, tpace_stream(r, q)));
}

TPACE_HOOK void tpace_dev_download(tpace_rt *r, void *host, const void *dev, size_t bytes, int q)
{
    TPACE_CUDA(r, cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, tpace_stream(r, q)));
}

TPACE_HOOK void tpace_dev_copy(tpace_rt *r, void *dst, const void *src, size_t bytes, int q)
{
    TPACE_CUDA(r, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, tpace_stream(r, q)));
}

TPACE_HOOK void tpace_dev_wait(tpace_rt *r, int from_q, int to_q)
{
    tpace_cuda *c = tpace_cuda_of(r);
    TPACE_CUDA(r, cudaEventRecord(c->scratch[from_q], c->stream[from_q]));
    TPACE_CUDA(r, cudaStreamWaitEvent(c->stream[to_q], c->scratch[from_q], 0));
}

TPACE_HOOK void tpace_dev_mark(tpace_rt *r, int q, int id)
{
    tpace_cuda *c = tpace_cuda_of(r);
    TPACE_CUDA(r, cudaEventRecord(c->mark[id], c->stream[q]));
}

TPACE_HOOK void tpace_dev_wait_mark(tpace_rt *r, int id, int q)
{
    tpace_cuda *c = tpace_cuda_of(r);
    TPACE_CUDA(r, cudaStreamWaitEvent(c->stream[q], c->mark[id], 0));
}

TPACE_HOOK void tpace_dev_sync(tpace_rt *r)
{
    TPACE_CUDA(r, cudaDeviceSynchronize());
}

/* TPACE_TRACE: a timing event recorded on stream q. */
TPACE_HOOK int tpace_dev_stamp(tpace_rt *r, int q)
{
    tpace_cuda *c = tpace_cuda_of(r);
    c->stamps = (cudaEvent_t *)tpace_trace_grow(&r->plan, c->stamps, &c->stamp_cap, c->nstamps, sizeof *c->stamps, 1024);
    TPACE_CUDA(r, cudaEventCreateWithFlags(&c->stamps[c->nstamps], cudaEventDefault));
    TPACE_CUDA(r, cudaEventRecord(c->stamps[c->nstamps], c->stream[q]));
    return (int)c->nstamps++;
}

TPACE_HOOK double tpace_dev_stamp_ms(tpace_rt *r, int from, int to)
{
    tpace_cuda *c = tpace_cuda_of(r);
    float ms = 0.0f;
    TPACE_CUDA(r, cudaEventElapsedTime(&ms, c->stamps[from], c->stamps[to]));
    return ms;
}

/* The host waits until a stamp's event is done (the streams go on). */
TPACE_HOOK void tpace_dev_stamp_wait(tpace_rt *r, int stamp)
{
    if (stamp >= 0)
        TPACE_CUDA(r, cudaEventSynchronize(tpace_cuda_of(r)->stamps[stamp]));
}

/* The device's name, as CUDA gives it ("NVIDIA H100 80GB HBM3"; the CPU emulation's from
 * TPACE_EMULATE_DEVICE_NAME). */
TPACE_HOOK void tpace_dev_name(tpace_rt *r, char *name, size_t size)
{
    cudaDeviceProp prop;
    TPACE_CUDA(r, cudaGetDeviceProperties(&prop, r->device));
    snprintf(name, size, "%s", prop.name);
}

/* A GPU's timers are worth checking the model against; the CPU emulation's are not (it runs
 * kernels a thousand times slower than any GPU profile says: TPACE_REPLAN=1 asks for it). */
TPACE_HOOK int tpace_dev_replans(tpace_rt *r)
{
    (void)r;
#ifdef __CUDACC__
    return 1;
#else
    return 0;
#endif
}

/* The most shared memory one block may use on the device: what a kernel may opt in to
 * (cudaFuncAttributeMaxDynamicSharedMemorySize). The runtime fuses no more steps than that
 * holds (tpace_fuse_wanted). */
TPACE_HOOK long tpace_dev_shared_limit(tpace_rt *r)
{
    int bytes = 0;
    TPACE_CUDA(r, cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, r->device));
    return bytes;
}

/* Free device memory, less a little for the context and the kernels' own needs. */
TPACE_HOOK size_t tpace_dev_free_memory(tpace_rt *r)
{
    size_t free_bytes = 0, total = 0;
    TPACE_CUDA(r, cudaMemGetInfo(&free_bytes, &total));
    return free_bytes / 100 * 97;
}

TPACE_HOOK void tpace_dev_begin(tpace_rt *r)
{
    /* One state per executor (several devices run one executor each). */
    tpace_cuda *c = (tpace_cuda *)calloc(1, sizeof(tpace_cuda));
    if (c == NULL)
        tpace_stop(r->plan.s.where, "host memory ran out starting the device");
    tpace_cuda &state = *c;
    r->target = c;
    const tpace_plan *p = &r->plan;
    int sms = 0;
    TPACE_CUDA(r, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, r->device));
    state.max_blocks = 32L * TPACE_MAX(sms, 1);
    r->units = sms;
    /* The slots' streams and the mm carry stream, or as many as any plan a re-plan takes. */
    for (int q = 0; q < p->queues; q++) {
        TPACE_CUDA(r, cudaStreamCreate(&state.stream[q]));
        TPACE_CUDA(r, cudaEventCreateWithFlags(&state.scratch[q], cudaEventDisableTiming));
        if (q + 1 < p->queues) /* a slot's three marks */
            for (int id = q; id < TPACE_MARKS; id += TPACE_MAX_SLOTS)
                TPACE_CUDA(r, cudaEventCreateWithFlags(&state.mark[id], cudaEventDisableTiming));
    }
    /* Page-lock the user's arrays for the pipeline: pageable copies are about six
     * times slower and do not overlap kernels. If the system refuses, run anyway.
     * With several devices each locks its own slab (ghost planes come from copies). */
    for (int a = 0; a < r->narrays && a < TPACE_MAX_SLOTS; a++) {
        tpace_array *arr = &r->arrays[a];
        if (!tpace_crosses_bus(arr) || p->s.steps == 0)
            continue;
        /* The slab, or the planes the scale-out part asks for (ghost planes read in place too). */
        const long lo = arr->pin_hi > arr->pin_lo ? arr->pin_lo : r->own_lo;
        const long hi = arr->pin_hi > arr->pin_lo ? arr->pin_hi : r->own_hi;
        size_t bytes = (size_t)(hi - lo) * p->s.plane * arr->elem;
        void *slab = (char *)arr->host + (size_t)(lo - p->s.lo) * p->s.plane * arr->elem;
        /* Portable: the other devices of this process upload their ghost planes from it in place. */
        if (cudaHostRegister(slab, bytes, cudaHostRegisterPortable) == cudaSuccess) {
            state.registered[a] = 1;
            state.locked[a] = slab;
        } else {
            (void)cudaGetLastError();
            fprintf(stderr, "tpace: %s: note: could not page-lock `%s`; its copies use pageable memory\n",
                    p->s.where, arr->name);
        }
    }
}

TPACE_HOOK void tpace_dev_end(tpace_rt *r)
{
    tpace_cuda *c = tpace_cuda_of(r);
    TPACE_CUDA(r, cudaDeviceSynchronize());
    for (int a = 0; a < r->narrays && a < TPACE_MAX_SLOTS; a++)
        if (c->registered[a])
            TPACE_CUDA(r, cudaHostUnregister(c->locked[a]));
    for (long i = 0; i < c->nstamps; i++)
        TPACE_CUDA(r, cudaEventDestroy(c->stamps[i]));
    free(c->stamps);
    c->stamps = NULL;
    c->nstamps = c->stamp_cap = 0;
    for (long i = 0; i < c->nflags; i++)
        TPACE_CUDA(r, cudaEventDestroy(c->flags[i]));
    free(c->flags);
    for (int q = 0; q < r->plan.queues; q++) {
        TPACE_CUDA(r, cudaStreamDestroy(c->stream[q]));
        TPACE_CUDA(r, cudaEventDestroy(c->scratch[q]));
        if (q + 1 < r->plan.queues)
            for (int id = q; id < TPACE_MARKS; id += TPACE_MAX_SLOTS)
                TPACE_CUDA(r, cudaEventDestroy(c->mark[id]));
    }
    free(c);
    r->target = NULL;
}

/* Devices: the CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies). */
TPACE_HOOK int tpace_dev_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        n = 0;
    }
    return n > 0 ? n : 1;
}

/* Calls that follow (allocations, streams, launches) go to the executor's device. */
TPACE_HOOK void tpace_dev_activate(tpace_rt *r)
{
    TPACE_CUDA(r, cudaSetDevice(r->device));
}

/* Each device's executor runs on a host thread of its own (CUDA's current device is per
 * thread), so that every device's copies and kernels run at once. */
TPACE_HOOK int tpace_dev_threads(void)
{
    return 1;
}

/* Whether r's device can copy straight into device `other`'s memory (NVLink or PCIe peer
 * to peer; cudaDeviceCanAccessPeer). Within one device a copy needs nothing. */
TPACE_HOOK int tpace_dev_peer_able(tpace_rt *r, int other)
{
    if (other == r->device)
        return 1;
    int can = 0;
    TPACE_CUDA(r, cudaDeviceCanAccessPeer(&can, r->device, other));
    return can;
}

/* Let r's device (the current one) reach device `other`'s memory. */
TPACE_HOOK void tpace_dev_peer_enable(tpace_rt *r, int other)
{
    if (other == r->device)
        return;
    const cudaError_t e = cudaDeviceEnablePeerAccess(other, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError(); /* enabled before (an earlier pipeline): fine */
        return;
    }
    TPACE_CUDA(r, e);
}

/* Bytes from r's device memory into device dst_device's, on r's queue q. */
TPACE_HOOK void tpace_dev_peer_copy(tpace_rt *r, void *dst, int dst_device, const void *src, size_t bytes, int q)
{
    TPACE_CUDA(r, cudaMemcpyPeerAsync(dst, dst_device, src, r->device, bytes, tpace_stream(r, q)));
}

/* Page-lock host memory the executor copies from (the host copies of its ghost planes), so
 * that those copies run asynchronously like the others; if the system refuses, they run
 * from pageable memory. Portable: every device's copies count it as pinned. */
TPACE_HOOK void tpace_dev_pin(tpace_rt *r, void *host, size_t bytes)
{
    (void)r;
    if (cudaHostRegister(host, bytes, cudaHostRegisterPortable) != cudaSuccess)
        (void)cudaGetLastError(); /* pageable then: slower, still right */
}

TPACE_HOOK void tpace_dev_unpin(tpace_rt *r, void *host)
{
    if (cudaHostUnregister(host) != cudaSuccess)
        (void)cudaGetLastError(); /* it was never pinned (tpace_dev_pin's refusal) */
    (void)r;
}

/* A flag: an event recorded on stream q, which the host waits for (a chunk's last
 * download, whose planes then go on to another rank). */
TPACE_HOOK int tpace_dev_flag(tpace_rt *r, int q)
{
    tpace_cuda *c = tpace_cuda_of(r);
    if (c->nflags == c->flag_cap) {
        const long want = c->flag_cap ? 2 * c->flag_cap : 64;
        cudaEvent_t *more = (cudaEvent_t *)realloc(c->flags, (size_t)want * sizeof *more);
        if (more == NULL)
            tpace_stop(r->plan.s.where, "host memory ran out recording the chunks' last downloads");
        c->flags = more;
        c->flag_cap = want;
    }
    TPACE_CUDA(r, cudaEventCreateWithFlags(&c->flags[c->nflags], cudaEventDisableTiming));
    TPACE_CUDA(r, cudaEventRecord(c->flags[c->nflags], c->stream[q]));
    return (int)c->nflags++;
}

TPACE_HOOK void tpace_dev_flag_wait(tpace_rt *r, int id)
{
    TPACE_CUDA(r, cudaEventSynchronize(tpace_cuda_of(r)->flags[id]));
}

/* Kernels add each step's reduction results into device slots (tpace_block_reduce). */
TPACE_HOOK int tpace_dev_reduces_on_device(void)
{
    return 1;
}

/* ---- Reductions in kernels: each thread accumulates its points, each block combines
 * its threads' values and adds them into the step's slot with one atomic. ---- */
template <int tpace_op, typename tpace_t> __host__ __device__ static inline tpace_t tpace_combine(tpace_t a, tpace_t b)
{
    return tpace_op == TPACE_RED_SUM ? a + b : tpace_op == TPACE_RED_MAX ? TPACE_MAX(a, b) : TPACE_MIN(a, b);
}

#ifdef __CUDACC__
/* Combine v into *slot atomically: atomicAdd for sums, a compare-and-swap loop on the
 * value's bits for max and min (CUDA has no floating-point atomicMax). */
template <int tpace_op> __device__ static inline void tpace_atomic(float *slot, float v)
{
    if (tpace_op == TPACE_RED_SUM) {
        atomicAdd(slot, v);
        return;
    }
    unsigned int *word = (unsigned int *)slot;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        const float next = tpace_combine<tpace_op>(__uint_as_float(assumed), v);
        if (__float_as_uint(next) == assumed)
            return;
        old = atomicCAS(word, assumed, __float_as_uint(next));
    } while (old != assumed);
}
template <int tpace_op> __device__ static inline void tpace_atomic(double *slot, double v)
{
    if (tpace_op == TPACE_RED_SUM) {
        atomicAdd(slot, v);
        return;
    }
    unsigned long long *word = (unsigned long long *)slot;
    unsigned long long old = *word, assumed;
    do {
        assumed = old;
        const double next = tpace_combine<tpace_op>(__longlong_as_double((long long)assumed), v);
        if ((unsigned long long)__double_as_longlong(next) == assumed)
            return;
        old = atomicCAS(word, assumed, (unsigned long long)__double_as_longlong(next));
    } while (old != assumed);
}

/* Combine every thread's v into *slot: warp shuffles, one value per warp through shared
 * memory, then one atomic per block. Every thread of the block must call it (the
 * kernels have no early return), and blocks hold whole warps (tpace_launch_shape's
 * blocks are 256 threads). */
template <int tpace_op, typename tpace_t> __device__ static inline void tpace_block_reduce(tpace_t v, tpace_t identity, tpace_t *slot)
{
    __shared__ tpace_t warp_value[32];
    const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned warps = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    for (int off = 16; off > 0; off /= 2)
        v = tpace_combine<tpace_op>(v, __shfl_down_sync(0xffffffffu, v, off));
    __syncthreads(); /* an earlier call's warp_value is read */
    if (tid % 32 == 0)
        warp_value[tid / 32] = v;
    __syncthreads();
    if (tid < 32) {
        v = tid < warps ? warp_value[tid] : identity;
        for (int off = 16; off > 0; off /= 2)
            v = tpace_combine<tpace_op>(v, __shfl_down_sync(0xffffffffu, v, off));
        if (tid == 0)
            tpace_atomic<tpace_op>(slot, v);
    }
}
#else
/* The CPU emulation runs a block's threads one after another, each to its end, so a
 * thread can add its value straight into the slot: same sum, another order. */
template <int tpace_op, typename tpace_t> static inline void tpace_block_reduce(tpace_t v, tpace_t identity, tpace_t *slot)
{
    (void)identity;
    *slot = tpace_combine<tpace_op>(*slot, v);
}
#endif

/* Loops that stride over what the launch grid does not cover are not unrolled: they
 * mostly run once, and unrolling a loop of unknown trip count costs a 64-bit division
 * per thread. */
#ifdef __CUDACC__
#define TPACE_NO_UNROLL _Pragma("unroll 1")
#define TPACE_UNROLL _Pragma("unroll") /* fused kernels: loops over steps and rows of a ring, so registers hold them */
/* 3-D fused kernels: the steady rows' loop, unrolled by the length of the rings (TP_RING, the
 * kernel's constant), so that they turn by renaming registers rather than moving them. */
#define TPACE_UNROLL_RING _Pragma("unroll TP_RING")
/* 3-D one-step kernels: the march loop, unrolled TP_UNROLL times (the kernel's constant). */
#define TPACE_UNROLL_MARCH _Pragma("unroll TP_UNROLL")
#else
#define TPACE_UNROLL_MARCH
#define TPACE_UNROLL_RING
#define TPACE_NO_UNROLL
#define TPACE_UNROLL
#endif

/* The column at or below `from` a multiple of `align` columns into rows from `lo` (`from`
 * may be below `lo`): where 3-D kernels start their first thread or tile, so that a warp's
 * loads and stores cover whole cache lines or sectors rather than straddling two (each
 * kernel and its launcher's grid both start there). */
#define TPACE_ALIGN_DOWN(from, lo, align) ((from) - (((from) - (lo)) % (align) + (align)) % (align))
/* 3-D one-step kernels: a block's first thread starts at a column this many elements (a
 * multiple of) into the buffer's rows. Measured on an H100 (bench/RESULTS.md, 2026-11-26,
 * part march, heat-3D 1152x1536x1728 float, ncu, one launch): 26.8 ms starting at the
 * box's first column (1), 12.4 ms aligned, hand-written march 12.1 ms. */
#ifndef TPACE_MARCH_ALIGN
#define TPACE_MARCH_ALIGN 32
#endif
/* The column a marching kernel's first thread starts at, for a box from `from` in rows from `lo`. */
#define TPACE_MARCH_START(from, lo) TPACE_ALIGN_DOWN(from, lo, TPACE_MARCH_ALIGN)
/* 3-D fused tiles along axis 2 (threads holding `cols` neighbouring columns each, 16 bytes;
 * `width` columns a tile; reads reaching `reach` columns over the steps of a launch): a
 * block's own columns start `reach` columns into its tile, the next block's
 * TPACE_TILE_STRIDE columns further (what is left of the tile past the reach on both
 * sides, rounded down to whole threads' columns), and the first tile at TPACE_TILE_START
 * for a box from `from` in rows from `lo`: a multiple of two threads' columns (32 bytes, a
 * sector) into the rows. Every tile then starts on whole threads' columns, so a thread's
 * columns start on 16 bytes where the rows do (one access moves them: tpace_cols_load), and
 * a warp's row of a tile starts on a sector where the stride is whole sectors (heat-3D in
 * float: 28 columns at two steps, 24 at three and four). Not rounding the reach up keeps
 * as many columns as before at two and four steps; the threads at a block's sides whose
 * columns are partly its own store those column by column. src/plan/fusion.rs
 * (Fusion::kept_columns) counts the same columns. TPACE_TILE_UNALIGNED (to measure what
 * aligning saves): the tiles as before, the first the reach before the box, the stride
 * the tile less twice the reach. */
#ifdef TPACE_TILE_UNALIGNED
#define TPACE_TILE_UNIT(cols) 1
#define TPACE_TILE_FIRST(cols) 1
#else
#define TPACE_TILE_UNIT(cols) (cols)
#define TPACE_TILE_FIRST(cols) (2 * (cols))
#endif
#define TPACE_TILE_STRIDE(width, reach, cols) (((width) - 2 * (reach)) / TPACE_TILE_UNIT(cols) * TPACE_TILE_UNIT(cols))
#define TPACE_TILE_START(from, lo, reach, cols) TPACE_ALIGN_DOWN((from) - (reach), lo, TPACE_TILE_FIRST(cols))
/* 3-D one-step kernels march along the outermost axis; each array's own column may load
 * TPACE_MARCH_AHEAD planes ahead of the one computed, and the march loop may be unrolled
 * TPACE_MARCH_UNROLL times, both by the 32-bit words of the columns loaded ahead (one a
 * float array, two a double one). Measured on an H100 (part march, in-core, one step a
 * launch, aligned): heat-3D float 206 Glup/s with none ahead and no unrolling, 198 at one
 * ahead, 192 at two, 192 at eight unrolled 4 times (64 registers: half the threads a
 * multiprocessor); double 101 at two ahead, 94 at one, 92 at none, 97 at four unrolled 4
 * times; Himeno (13 arrays) 25.8 at two ahead, 23.8 at none or one. */
#ifdef TPACE_MARCH_AHEAD_PLANES /* one figure for every kernel, to measure others (bench/gpu.sh part march) */
#define TPACE_MARCH_AHEAD(words) (TPACE_MARCH_AHEAD_PLANES)
#else
#define TPACE_MARCH_AHEAD(words) ((words) <= 1 ? 0 : 2)
#endif
#ifdef TPACE_MARCH_UNROLL_TIMES
#define TPACE_MARCH_UNROLL(words) (TPACE_MARCH_UNROLL_TIMES)
#else
#define TPACE_MARCH_UNROLL(words) 1
#endif

/* 3-D fused kernels: 1 runs the steady rows of a block whose whole tile is in the sweep's box
 * in a copy of the row loop without the per-column box selects (ptxas 13.5, sm_90, heat-3D
 * float: 675 SASS instructions for three rows of four steps against 731; at two steps 430
 * against 458, but 12 bytes spilled under the three blocks' 85 registers; the 19-point star
 * spills 64 bytes at four steps). Off until measured (bench/gpu.sh part tiles3d builds it). */
#ifndef TPACE_TILE_FAST
#define TPACE_TILE_FAST 0
#endif

/* 3-D fused kernels load each input row this many rows ahead of the row they compute
 * (a row's loads then wait behind the rows computed meanwhile, not in front of them). */
#define TPACE_FUSED_AHEAD 2

/* A fused tile's thread holds N neighbouring columns of a row: 16 bytes of them, which one
 * 16-byte access moves where they start on 16 bytes, instead of N accesses (a warp's four
 * loads of a row of four floats each touched every cache line of the row).
 * tpace_cols_wide: whether they do for every thread of a block (the same answer for all, so
 * the choice below does not split a warp): the buffers and their rows of `n` elements start
 * on 16 bytes and the block's tile `first` columns into the rows, whole threads' columns
 * (`cols`); each thread's columns are then all on the grid or none. */
#ifndef TPACE_TILE_WIDE /* 0: every column its own access (to measure what one access saves) */
#define TPACE_TILE_WIDE 1
#endif
template <typename tpace_t>
__device__ static inline bool tpace_cols_wide(const tpace_t *in, const tpace_t *out, long n, long first, int cols)
{
    return TPACE_TILE_WIDE && ((size_t)in | (size_t)out) % 16 == 0 && (size_t)n * sizeof(tpace_t) % 16 == 0 && first % cols == 0;
}
/* to[c] = from[c] where bit c of `mask` is set, else 0; where `wide` (tpace_cols_wide: then
 * `mask` has every bit or none) in one access. */
template <int tpace_n, typename tpace_t>
__device__ static inline void tpace_cols_load(tpace_t (&to)[tpace_n], const tpace_t *from, unsigned mask, bool wide)
{
    static_assert(sizeof(tpace_t) * tpace_n == 16, "a thread's columns are 16 bytes");
    if (wide) {
        if (mask != 0) {
#ifdef __CUDA_ARCH__
            const int4 w = *(const int4 *)from;
            memcpy(to, &w, sizeof w);
#else
            memcpy(to, from, sizeof to);
#endif
        } else {
            TPACE_UNROLL
            for (int c = 0; c < tpace_n; c++)
                to[c] = (tpace_t)0;
        }
    } else {
        TPACE_UNROLL
        for (int c = 0; c < tpace_n; c++)
            to[c] = (mask >> c) & 1u ? from[c] : (tpace_t)0;
    }
}
/* to[c] = from[c] where bit c of `mask` is set; where `wide` and every bit is set, in one access. */
template <int tpace_n, typename tpace_t>
__device__ static inline void tpace_cols_store(tpace_t *to, const tpace_t (&from)[tpace_n], unsigned mask, bool wide)
{
    static_assert(sizeof(tpace_t) * tpace_n == 16, "a thread's columns are 16 bytes");
    if (wide && mask == (1u << tpace_n) - 1) {
#ifdef __CUDA_ARCH__
        /* In PTX: nvcc split a store through an int4 pointer into four (and __stwb's is a
         * strong one, STG.E.128.STRONG.SM). Nothing in the kernel reads the output back: no
         * memory clobber. */
        unsigned w[4];
        memcpy(w, from, sizeof w);
        asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" : : "l"(to), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]));
#else
        memcpy(to, from, sizeof from);
#endif
    } else {
        TPACE_UNROLL
        for (int c = 0; c < tpace_n; c++)
            if ((mask >> c) & 1u)
                to[c] = from[c];
    }
}

/* Fused kernels: TPACE_KEEP(x) (a long) and TPACE_KEEP32(x) (an int or unsigned)
 * hide x from nvcc's optimiser behind an empty asm, so that x, computed once before
 * the row loop, stays in a register. nvcc otherwise recomputes such per-thread values
 * (64-bit column offsets, column masks, clamped lanes) from the kernel's arguments at
 * every use inside the loop, to ease register pressure, and then spills more than
 * it saves (heat-3D's tile kernel, two steps: 1840 SASS instructions and 120 bytes of
 * spilled registers without, 1358 and 8 with). The asm emits no instruction. */
#ifdef __CUDACC__
#define TPACE_KEEP(x) asm("" : "+l"(x))
#define TPACE_KEEP32(x) asm("" : "+r"(x))
#else
#define TPACE_KEEP(x) ((void)0)
#define TPACE_KEEP32(x) ((void)0)
#endif

/* Launch bounds of a fused kernel of `threads` threads a block that wants `blocks`
 * blocks on a multiprocessor. Where nvcc has __maxnreg__ (12.4 on), the registers a
 * thread are capped with it instead of with __launch_bounds__ (nvcc takes one or the
 * other): under __launch_bounds__'s minimum block count nvcc's front end recomputes
 * loop-invariant index arithmetic inside the row loops even where the kernel fits the
 * registers anyway (heat-3D, two steps: 207 SASS instructions in the steady rows' loop
 * and 399 in the first run's, against 184 and 301). 65536 registers a multiprocessor,
 * at most 255 a thread (ptxas ignores a larger __maxnreg__, with a warning). */
#if defined(__CUDACC__) && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define TPACE_FUSED_BOUNDS(threads, blocks) __maxnreg__(TPACE_MIN(65536 / ((threads) * (blocks)), 255))
#else
#define TPACE_FUSED_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)
#endif

/* Launch bounds of a 2-D fused kernel of `threads` threads a block, `blocks` of them a
 * multiprocessor (the translation's count for the registers its rings need). Here the
 * minimum block count is the better cap: ptxas fits Jacobi-2D's four steps in 32
 * registers without spilling under __launch_bounds__(256, 8), and spills 636 bytes
 * under __maxnreg__(32). */
#define TPACE_ROW_BOUNDS(threads, blocks) __launch_bounds__(threads, blocks)

/* Launch shape for a sweep: x over the innermost dimension (coalesced; the grid
 * covers it whole), y over the next, z over the third. Along the outermost
 * dimension (the cut axis) each block walks a contiguous segment of *seg rows,
 * blockDim rows at a time, so that the rows its neighbours read are still in
 * cache; there are only as many blocks as fill the device a few times over. */
static inline void tpace_launch_shape(tpace_rt *r, int rank, const long *lo, const long *hi, dim3 *grid,
                                      dim3 *block, long *seg)
{
    const long bx = rank == 1 ? 256 : 32, by = rank == 1 ? 1 : 8;
    long ext[3] = {1, 1, 1};
    for (int d = 0; d < rank; d++)
        ext[rank - 1 - d] = TPACE_MAX(hi[d] - lo[d], 1L);
    long n[3] = {(ext[0] + bx - 1) / bx, TPACE_MIN((ext[1] + by - 1) / by, 65535L), TPACE_MIN(ext[2], 65535L)};
    /* Measured on the H100 (bench/RESULTS.md): 2-D sweeps run fastest with one row
     * per thread and as many blocks as rows need; 3-D sweeps with segments. */
    if (rank > 2) {
        long inner = 1;
        for (int d = 0; d < rank - 1; d++)
            inner *= n[d];
        n[rank - 1] = TPACE_MAX(1L, TPACE_MIN(n[rank - 1], tpace_cuda_of(r)->max_blocks / inner));
    }
    *block = dim3((unsigned)bx, (unsigned)by, 1);
    *grid = dim3((unsigned)TPACE_MIN(n[0], 2147483647L), (unsigned)n[1], (unsigned)n[2]);
    const long step = rank == 2 ? by : 1; /* block rows along the outermost dimension */
    const long per_block = (ext[rank - 1] + n[rank - 1] - 1) / n[rank - 1];
    *seg = (per_block + step - 1) / step * step;
}
/* ==== end of tpace runtime, CUDA part ==== */
