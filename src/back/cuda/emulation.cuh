/* ==== tpace CUDA emulation (embedded by the translator; same for every program) ====
 * Built by a compiler that is not nvcc (no __CUDACC__), a generated .cu file runs
 * on the CPU against this small emulation of the runtime API: separate "device"
 * memory, and streams whose work is deferred and run in a shuffled order that
 * respects only the events and synchronisations the program asks for, so that a
 * missing wait shows up as a wrong answer. tpace's tests use it; it is not fast.
 */
#ifndef __CUDACC__
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

/* ---- CPU emulation of the part of the CUDA runtime API tpace uses ---- */
#define __global__
#define __device__
#define __host__
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorInvalidValue = 1 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
#define cudaHostRegisterDefault 0
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
static dim3 blockIdx, threadIdx, blockDim, gridDim; /* the emulation runs on one thread */

namespace tpace_emu {
struct op {
    std::function<void()> run; /* the work, or empty for an event wait */
    long waits_for;            /* sequence number of the record this op waits for (-1: none) */
    long seq;                  /* this op's sequence number */
};
struct stream_t {
    std::deque<op> ops;
};
static std::vector<stream_t *> streams;
static std::vector<char> done; /* done[seq] */
static long next_seq = 0;
static unsigned long long rng = 0x9e3779b97f4a7c15ULL;
static inline unsigned long long random_next()
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static inline void enqueue(stream_t *s, std::function<void()> f, long waits_for)
{
    op o;
    o.run = f;
    o.waits_for = waits_for;
    o.seq = next_seq++;
    done.push_back(0);
    s->ops.push_back(o);
}
/* Run queued work until `s` (or every stream, when s is NULL) is empty, taking the
 * heads of the streams in a shuffled order that only the waits constrain. */
static inline void drain(stream_t *s)
{
    for (;;) {
        std::vector<stream_t *> ready;
        bool pending = false;
        for (stream_t *t : streams) {
            if (t->ops.empty())
                continue;
            pending = true;
            const op &h = t->ops.front();
            if (h.waits_for < 0 || done[(size_t)h.waits_for])
                ready.push_back(t);
        }
        if ((s != NULL && s->ops.empty()) || !pending)
            return;
        if (ready.empty()) {
            fprintf(stderr, "tpace emulation: the streams wait for each other (deadlock)\n");
            exit(3);
        }
        stream_t *t = ready[(size_t)(random_next() % ready.size())];
        op o = t->ops.front();
        t->ops.pop_front();
        if (o.run)
            o.run();
        done[(size_t)o.seq] = 1;
    }
}
struct event_t {
    long recorded; /* sequence number of the last record, -1 if never recorded */
};
} // namespace tpace_emu

typedef tpace_emu::stream_t *cudaStream_t;
typedef tpace_emu::event_t *cudaEvent_t;

static inline const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : e == cudaErrorMemoryAllocation ? "out of memory" : "invalid value";
}
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
static inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = malloc(bytes);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaFree(void *p)
{
    tpace_emu::drain(NULL);
    free(p);
    return cudaSuccess;
}
/* TPACE_EMU_DEVICE_MEM plays the device's free memory (unset: unknown). */
static inline cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    const char *t = getenv("TPACE_EMU_DEVICE_MEM");
    *free_bytes = *total = t ? (size_t)strtod(t, NULL) : 0;
    return cudaSuccess;
}
static inline cudaError_t cudaHostRegister(void *, size_t, unsigned) { return cudaSuccess; }
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount, cudaDevAttrL2CacheSize, cudaDevAttrMaxSharedMemoryPerBlockOptin };
/* Four "multiprocessors" (launches stay small, and threads still loop over rows),
 * 1 MiB of "L2" and 48 KiB of "shared memory": figures of the emulation, not a device. */
static inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int)
{
    *v = a == cudaDevAttrMultiProcessorCount ? 4 : a == cudaDevAttrL2CacheSize ? 1 << 20 : 48 << 10;
    return cudaSuccess;
}
static inline cudaError_t cudaHostUnregister(void *) { return cudaSuccess; }
static inline cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    *s = new tpace_emu::stream_t();
    tpace_emu::streams.push_back(*s);
    const char *seed = getenv("TPACE_EMU_SEED");
    if (seed)
        tpace_emu::rng = 0x9e3779b97f4a7c15ULL ^ (unsigned long long)strtoull(seed, NULL, 10);
    return cudaSuccess;
}
static inline cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    tpace_emu::drain(s);
    for (size_t i = 0; i < tpace_emu::streams.size(); i++)
        if (tpace_emu::streams[i] == s)
            tpace_emu::streams.erase(tpace_emu::streams.begin() + (long)i);
    delete s;
    return cudaSuccess;
}
static inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned)
{
    *e = new tpace_emu::event_t();
    (*e)->recorded = -1;
    return cudaSuccess;
}
#define cudaEventDisableTiming 0
static inline cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    tpace_emu::enqueue(s, std::function<void()>(), -1);
    e->recorded = tpace_emu::next_seq - 1;
    return cudaSuccess;
}
static inline cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned)
{
    tpace_emu::enqueue(s, std::function<void()>(), e->recorded);
    return cudaSuccess;
}
static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind, cudaStream_t s)
{
    tpace_emu::enqueue(s, [=]() { memcpy(dst, src, bytes); }, -1);
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void)
{
    tpace_emu::drain(NULL);
    return cudaSuccess;
}
/* A kernel launch: every thread of every block, one after another, later. */
template <typename F>
static inline void tpace_emu_launch(dim3 grid, dim3 block, cudaStream_t s, F kernel)
{
    tpace_emu::enqueue(s, [=]() {
        gridDim = grid;
        blockDim = block;
        for (unsigned bz = 0; bz < grid.z; bz++)
            for (unsigned by = 0; by < grid.y; by++)
                for (unsigned bx = 0; bx < grid.x; bx++)
                    for (unsigned tz = 0; tz < block.z; tz++)
                        for (unsigned ty = 0; ty < block.y; ty++)
                            for (unsigned tx = 0; tx < block.x; tx++) {
                                blockIdx = dim3(bx, by, bz);
                                threadIdx = dim3(tx, ty, tz);
                                kernel();
                            }
    }, -1);
}
#define TPACE_LAUNCH(kernel, grid, block, stream, ...) \
    tpace_emu_launch(grid, block, stream, [=]() { kernel(__VA_ARGS__); })
#else
#define TPACE_LAUNCH(kernel, grid, block, stream, ...) kernel<<<grid, block, 0, stream>>>(__VA_ARGS__)
#endif

/* ==== end of tpace CUDA emulation ==== */
