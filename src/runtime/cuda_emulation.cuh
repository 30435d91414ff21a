/* ==== tpace CUDA emulation (shipped by the translator; the same for every program) ====
 * Built by a compiler that is not nvcc (no __CUDACC__), a generated .cu file runs
 * on the CPU against this small emulation of the runtime API: separate "device"
 * memory, and streams whose work is deferred and run in a shuffled order that
 * respects only the events and synchronisations the program asks for, so that a
 * missing wait shows up as a wrong answer. Each emulated device (TPACE_EMU_DEVICES)
 * has its own streams and runs their work on the host thread that synchronises it,
 * so devices driven from several host threads compute at the same time, as GPUs do;
 * the current device is per host thread, as in CUDA. Peer access between devices is
 * emulated too (TPACE_EMU_PEER=0: no device reaches another's memory). tpace's tests
 * use it; it is not fast.
 */
#ifndef __CUDACC__
#include <cstdint>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <ucontext.h>
#include <vector>

/* ---- CPU emulation of the part of the CUDA runtime API tpace uses ---- */
#define __global__
#define __device__
#define __host__
/* Blocks run one at a time on each host thread, so a function-static array (one per
 * thread) is the running block's shared memory; launch bounds only steer nvcc's
 * register allocation. */
#define __shared__ static thread_local
#define __launch_bounds__(...)
typedef int cudaError_t;
enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidDevice = 101,
    cudaErrorPeerAccessAlreadyEnabled = 704,
    cudaErrorPeerAccessNotEnabled = 705
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
#define cudaHostRegisterDefault 0
#define cudaHostRegisterPortable 1
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
static thread_local dim3 blockIdx, threadIdx, blockDim, gridDim; /* of the block this host thread runs */

namespace tpace_emu {
struct op {
    std::function<void()> run; /* the work, or empty for an event wait */
    long waits_for;            /* sequence number of the record this op waits for (-1: none) */
    long seq;                  /* this op's sequence number */
};
struct stream_t {
    int device; /* the device it belongs to */
    std::deque<op> ops;
};
/* Most devices the emulation plays. */
static const int max_devices = 64;
/* One emulated device: its streams and their work's bookkeeping. Only the host thread
 * that holds `lock` touches it (several host threads may drive one device). */
struct device_t {
    std::recursive_mutex lock;
    std::vector<stream_t *> streams;
    std::vector<char> done; /* done[seq] */
    long next_seq = 0;
    unsigned long long rng = 0x9e3779b97f4a7c15ULL;
    std::map<const void *, int> opted; /* per kernel, the dynamic shared memory it opted in to */
    bool peer[max_devices] = {};       /* cudaDeviceEnablePeerAccess: this device reaches peer[d]'s memory */
};
static device_t devices[max_devices];
static thread_local int current = 0; /* cudaSetDevice's, per host thread */
static thread_local cudaError_t last_error = 0; /* what cudaGetLastError reports: a launch that CUDA would refuse */
static inline device_t &dev(int d) { return devices[d]; }
typedef std::lock_guard<std::recursive_mutex> hold;
static inline unsigned long long random_next(device_t &d)
{
    d.rng ^= d.rng << 13;
    d.rng ^= d.rng >> 7;
    d.rng ^= d.rng << 17;
    return d.rng;
}
static inline void enqueue(stream_t *s, std::function<void()> f, long waits_for)
{
    device_t &d = dev(s->device);
    hold h(d.lock);
    op o;
    o.run = f;
    o.waits_for = waits_for;
    o.seq = d.next_seq++;
    d.done.push_back(0);
    s->ops.push_back(o);
}
/* Run device d's queued work until `s` (or every stream of d, when s is NULL) is
 * empty, or until op `until` has run (when it is not negative), taking the heads of
 * its streams in a shuffled order that only the waits constrain. */
static inline void drain(int device, stream_t *s, long until = -1)
{
    device_t &d = dev(device);
    hold h(d.lock);
    for (;;) {
        if (until >= 0 && d.done[(size_t)until])
            return;
        std::vector<stream_t *> ready;
        bool pending = false;
        for (stream_t *t : d.streams) {
            if (t->ops.empty())
                continue;
            pending = true;
            const op &head = t->ops.front();
            if (head.waits_for < 0 || d.done[(size_t)head.waits_for])
                ready.push_back(t);
        }
        if ((s != NULL && s->ops.empty()) || !pending)
            return;
        if (ready.empty()) {
            fprintf(stderr, "tpace emulation: the streams wait for each other (deadlock)\n");
            exit(3);
        }
        stream_t *t = ready[(size_t)(random_next(d) % ready.size())];
        op o = t->ops.front();
        t->ops.pop_front();
        if (o.run)
            o.run();
        d.done[(size_t)o.seq] = 1;
    }
}
/* Seconds on the host's clock: the emulation's "device timer". */
static inline double clock_seconds()
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
struct event_t {
    int device;    /* the device of the stream it was last recorded on */
    long recorded; /* sequence number of the last record, -1 if never recorded */
    double at;     /* host time when the last record ran (the emulation's "device timer") */
};
/* Device allocations: which device each belongs to and its size (peer copies check
 * that their pointers lie in the devices they name). */
static std::mutex allocs_lock;
static std::map<const char *, std::pair<int, size_t>> allocs;
/* Whether [p, p + bytes) lies inside one allocation of `device`. */
static inline bool owned_by(const void *p, size_t bytes, int device)
{
    std::lock_guard<std::mutex> h(allocs_lock);
    const char *c = (const char *)p;
    auto it = allocs.upper_bound(c);
    if (it == allocs.begin())
        return false;
    --it;
    return it->second.first == device && c + bytes <= it->first + it->second.second;
}
} // namespace tpace_emu

typedef tpace_emu::stream_t *cudaStream_t;
typedef tpace_emu::event_t *cudaEvent_t;

static inline const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess                           ? "no error"
           : e == cudaErrorMemoryAllocation           ? "out of memory"
           : e == cudaErrorInvalidDevice              ? "invalid device ordinal"
           : e == cudaErrorPeerAccessAlreadyEnabled   ? "peer access is already enabled"
           : e == cudaErrorPeerAccessNotEnabled       ? "peer access has not been enabled"
                                                      : "invalid value";
}
/* TPACE_EMU_DEVICES plays the number of devices (unset: one). Each device's memory is
 * the host's, like any emulated device memory; its streams are its own. */
static inline cudaError_t cudaGetDeviceCount(int *n)
{
    const char *t = getenv("TPACE_EMU_DEVICES");
    *n = t && *t ? atoi(t) : 1;
    *n = *n < 1 ? 1 : *n > tpace_emu::max_devices ? tpace_emu::max_devices : *n;
    return cudaSuccess;
}
static inline cudaError_t cudaSetDevice(int d)
{
    int n = 0;
    cudaGetDeviceCount(&n);
    if (d < 0 || d >= n)
        return cudaErrorInvalidDevice;
    tpace_emu::current = d;
    return cudaSuccess;
}
static inline cudaError_t cudaGetLastError(void)
{
    const cudaError_t e = tpace_emu::last_error;
    tpace_emu::last_error = cudaSuccess;
    return e;
}
static inline cudaError_t cudaGetDevice(int *device)
{
    *device = tpace_emu::current;
    return cudaSuccess;
}
static inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = malloc(bytes);
    if (*p == NULL)
        return cudaErrorMemoryAllocation;
    std::lock_guard<std::mutex> h(tpace_emu::allocs_lock);
    tpace_emu::allocs[(const char *)*p] = std::make_pair(tpace_emu::current, bytes);
    return cudaSuccess;
}
/* As CUDA's: waits for the current device's work first. */
static inline cudaError_t cudaFree(void *p)
{
    tpace_emu::drain(tpace_emu::current, NULL);
    {
        std::lock_guard<std::mutex> h(tpace_emu::allocs_lock);
        tpace_emu::allocs.erase((const char *)p);
    }
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
/* The device's name: TPACE_EMULATE_DEVICE_NAME, so that a test can play any device (which
 * machine profile a program plans with follows the name), else "tpace CPU emulation". */
struct cudaDeviceProp {
    char name[256];
};
static inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    int n = 0;
    cudaGetDeviceCount(&n);
    if (device < 0 || device >= n)
        return cudaErrorInvalidDevice;
    const char *t = getenv("TPACE_EMULATE_DEVICE_NAME");
    snprintf(prop->name, sizeof prop->name, "%s", t && *t ? t : "tpace CPU emulation");
    return cudaSuccess;
}
namespace tpace_emu {
/* Shared memory a block may use: TPACE_EMU_SHARED bytes, else 227 KiB as on sm_90 (H100), so
 * that kernels of more than 48 KiB run here too; without opting in a kernel gets 48 KiB. */
static const int shared_unasked = 48 << 10;
static inline int shared_limit(void)
{
    const char *t = getenv("TPACE_EMU_SHARED");
    return t ? (int)strtol(t, NULL, 10) : 227 << 10;
}
} // namespace tpace_emu
/* Four "multiprocessors" (launches stay small, and threads still loop over rows),
 * 1 MiB of "L2" and the shared memory above: figures of the emulation, not a device. */
static inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int)
{
    *v = a == cudaDevAttrMultiProcessorCount ? 4 : a == cudaDevAttrL2CacheSize ? 1 << 20 : tpace_emu::shared_limit();
    return cudaSuccess;
}
namespace tpace_emu {
/* Per kernel, the dynamic shared memory it opted in to on the current device
 * (cudaFuncSetAttribute, which sets it for the current device only); 0: none. */
template <typename tpace_f> static inline int opted_shared(tpace_f *kernel)
{
    device_t &d = dev(current);
    hold h(d.lock);
    auto it = d.opted.find((const void *)kernel);
    return it == d.opted.end() ? 0 : it->second;
}
} // namespace tpace_emu
/* As CUDA: a kernel may opt in to at most the device's limit. */
template <typename tpace_f> static inline cudaError_t cudaFuncSetAttribute(tpace_f *kernel, cudaFuncAttribute attr, int value)
{
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > tpace_emu::shared_limit())
        return cudaErrorInvalidValue;
    tpace_emu::device_t &d = tpace_emu::dev(tpace_emu::current);
    tpace_emu::hold h(d.lock);
    d.opted[(const void *)kernel] = value;
    return cudaSuccess;
}
static inline cudaError_t cudaHostUnregister(void *) { return cudaSuccess; }
static inline cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    tpace_emu::device_t &d = tpace_emu::dev(tpace_emu::current);
    tpace_emu::hold h(d.lock);
    *s = new tpace_emu::stream_t();
    (*s)->device = tpace_emu::current;
    d.streams.push_back(*s);
    const char *seed = getenv("TPACE_EMU_SEED");
    if (seed)
        d.rng = 0x9e3779b97f4a7c15ULL ^ (unsigned long long)strtoull(seed, NULL, 10);
    return cudaSuccess;
}
static inline cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    tpace_emu::device_t &d = tpace_emu::dev(s->device);
    tpace_emu::hold h(d.lock);
    tpace_emu::drain(s->device, s);
    for (size_t i = 0; i < d.streams.size(); i++)
        if (d.streams[i] == s)
            d.streams.erase(d.streams.begin() + (long)i);
    delete s;
    return cudaSuccess;
}
static inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned)
{
    *e = new tpace_emu::event_t();
    (*e)->device = tpace_emu::current;
    (*e)->recorded = -1;
    return cudaSuccess;
}
#define cudaEventDisableTiming 0
#define cudaEventDefault 0
static inline cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    tpace_emu::device_t &d = tpace_emu::dev(s->device);
    tpace_emu::hold h(d.lock);
    e->device = s->device;
    tpace_emu::enqueue(s, [e]() { e->at = tpace_emu::clock_seconds(); }, -1);
    e->recorded = d.next_seq - 1;
    return cudaSuccess;
}
/* As CUDA: both events recorded, done, and of one device. */
static inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t from, cudaEvent_t to)
{
    if (from->device != to->device || from->recorded < 0 || to->recorded < 0)
        return cudaErrorInvalidValue;
    tpace_emu::device_t &d = tpace_emu::dev(from->device);
    tpace_emu::hold h(d.lock);
    if (!d.done[(size_t)from->recorded] || !d.done[(size_t)to->recorded])
        return cudaErrorInvalidValue; /* CUDA: not ready */
    *ms = (float)((to->at - from->at) * 1e3);
    return cudaSuccess;
}
/* A stream waits for an event of its own device (tpace waits on no other device's). */
static inline cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned)
{
    if (e->recorded >= 0 && e->device != s->device) {
        fprintf(stderr, "tpace emulation: a stream waits for an event of another device, which the emulation "
                        "does not play\n");
        exit(3);
    }
    tpace_emu::enqueue(s, std::function<void()>(), e->recorded);
    return cudaSuccess;
}
static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind, cudaStream_t s)
{
    tpace_emu::enqueue(s, [=]() { memcpy(dst, src, bytes); }, -1);
    return cudaSuccess;
}
/* As CUDA: the host waits until the event's last record has run (the device's work runs
 * on this thread until then). */
static inline cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    if (e->recorded >= 0)
        tpace_emu::drain(e->device, NULL, e->recorded);
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void)
{
    tpace_emu::drain(tpace_emu::current, NULL);
    return cudaSuccess;
}
/* ---- Peer access: TPACE_EMU_PEER=0 plays devices that do not reach each other's memory
 * (cudaDeviceCanAccessPeer says 0); otherwise every two devices do, once the one that
 * copies has enabled it (cudaDeviceEnablePeerAccess). A peer copy between devices that
 * have not enabled it fails here (CUDA would stage it through host memory), and so does one
 * whose pointers are not allocations of the devices it names. ---- */
static inline cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer)
{
    int n = 0;
    cudaGetDeviceCount(&n);
    if (device < 0 || device >= n || peer < 0 || peer >= n)
        return cudaErrorInvalidDevice;
    const char *t = getenv("TPACE_EMU_PEER");
    *can = device != peer && !(t && strcmp(t, "0") == 0);
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags)
{
    int can = 0;
    const cudaError_t e = cudaDeviceCanAccessPeer(&can, tpace_emu::current, peer);
    if (e != cudaSuccess || !can || flags != 0)
        return e != cudaSuccess ? e : cudaErrorInvalidDevice;
    tpace_emu::device_t &d = tpace_emu::dev(tpace_emu::current);
    tpace_emu::hold h(d.lock);
    if (d.peer[peer])
        return cudaErrorPeerAccessAlreadyEnabled;
    d.peer[peer] = true;
    return cudaSuccess;
}
static inline cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device,
                                              size_t bytes, cudaStream_t s)
{
    if (s->device != src_device && s->device != dst_device)
        return cudaErrorInvalidValue;
    const int other = s->device == src_device ? dst_device : src_device;
    if (other != s->device && !tpace_emu::dev(s->device).peer[other])
        return cudaErrorPeerAccessNotEnabled;
    if (!tpace_emu::owned_by(dst, bytes, dst_device) || !tpace_emu::owned_by(src, bytes, src_device))
        return cudaErrorInvalidValue;
    tpace_emu::enqueue(s, [=]() { memcpy(dst, src, bytes); }, -1);
    return cudaSuccess;
}
/* A kernel launch: every thread of every block, one after another, later. */
template <typename tpace_f>
static inline void tpace_emu_launch(dim3 grid, dim3 block, cudaStream_t s, tpace_f kernel)
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
/* The arguments are evaluated at the launch, as CUDA does, and the kernel runs later. */
#define TPACE_LAUNCH(kernel, grid, block, stream, ...) \
    tpace_emu_launch(grid, block, stream, \
                     [tpace_emu_args = std::make_tuple(__VA_ARGS__)]() { \
                         std::apply([](const auto &...tpace_emu_a) { kernel(tpace_emu_a...); }, tpace_emu_args); \
                     })

/* A launch whose kernel calls __syncthreads(): each block's threads run as
 * coroutines, in phases that end at a barrier, and in a fresh shuffled order in
 * every phase, so that reading shared memory another thread writes without a
 * barrier in between gives a wrong answer under some TPACE_EMU_SEED. Such a
 * kernel's dynamic shared memory is one buffer of the size its launch gives,
 * filled with all-ones bytes (NaN as float or double) before every block, so
 * that reading what no thread of the block wrote gives a wrong answer too. */
namespace tpace_emu {
static thread_local std::vector<unsigned char> shared_mem; /* the running block's dynamic shared memory */
/* The start of it for a kernel that uses `bytes` of it; more than its launch gave stops the program. */
static inline unsigned char *dynamic_shared(size_t bytes)
{
    if (bytes > shared_mem.size()) {
        fprintf(stderr, "tpace emulation: a kernel uses %zu bytes of dynamic shared memory, its launch gave %zu\n",
                bytes, shared_mem.size());
        exit(3);
    }
    return shared_mem.data();
}
struct fiber {
    void *sp;      /* x86-64: the stack pointer it resumes at */
#if !(defined(__x86_64__) && defined(__ELF__) && !defined(TPACE_EMU_UCONTEXT))
    ucontext_t ctx;
#endif
    dim3 tid;
    bool finished;
    unsigned shuffles; /* warp shuffles it made so far (tpace_emu::shuffle) */
};
static const size_t fiber_stack = 256 << 10;
static thread_local fiber *sync_current = NULL;                    /* the thread running; NULL outside TPACE_LAUNCH_SYNC */
static thread_local const std::function<void()> *sync_body = NULL; /* the kernel call of the running launch */
#if defined(__x86_64__) && defined(__ELF__) && !defined(TPACE_EMU_UCONTEXT)
/* Switching threads at every barrier of every row is the emulation's hot spot:
 * swapcontext makes a system call each time (for the signal mask), this switch
 * only saves the callee-saved registers on the old stack and pops them from the
 * new one. A fresh stack "returns" into sync_entry. (TPACE_EMU_UCONTEXT: the portable
 * swapcontext path instead, as on other machines.) */
static thread_local void *sync_main_sp = NULL; /* the block's scheduler, while a thread runs */
extern "C" void tpace_emu_switch(void **save_sp, void *to_sp);
__asm__(".text\n"
        ".p2align 4\n"
        ".type tpace_emu_switch, @function\n"
        "tpace_emu_switch:\n"
        "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n    pushq %r13\n    pushq %r14\n    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n    popq %r14\n    popq %r13\n    popq %r12\n    popq %rbx\n    popq %rbp\n"
        "    ret\n"
        ".size tpace_emu_switch, .-tpace_emu_switch\n");
static void sync_entry(void)
{
    (*sync_body)();
    sync_current->finished = true;
    tpace_emu_switch(&sync_current->sp, sync_main_sp); /* never resumed */
    abort();
}
static inline void start_fiber(fiber *f, char *stack)
{
    f->finished = false;
    f->shuffles = 0;
    /* Six saved registers, then the "return address" sync_entry, then a slot that
     * stands for sync_entry's own return address: 16-byte aligned as at a call. */
    uintptr_t top = ((uintptr_t)(stack + fiber_stack)) & ~(uintptr_t)15;
    void **sp = (void **)(top - 64);
    memset(sp, 0, 64);
    sp[6] = (void *)&sync_entry;
    f->sp = sp;
}
static inline void resume_fiber(fiber *f) { tpace_emu_switch(&sync_main_sp, f->sp); }
static inline void yield_fiber(void) { tpace_emu_switch(&sync_current->sp, sync_main_sp); }
#else
static thread_local ucontext_t sync_main; /* the block's scheduler, while a thread runs */
/* makecontext passes only ints, so the closure comes through sync_body; on
 * return, uc_link resumes the scheduler. */
static inline void sync_entry(void)
{
    (*sync_body)();
    sync_current->finished = true;
}
/* The compiler takes getcontext() for a setjmp (it "returns twice"), so it is
 * kept out of run_sync, whose locals would otherwise be "clobbered". */
__attribute__((noinline)) static void start_fiber(fiber *f, char *stack)
{
    f->finished = false;
    f->shuffles = 0;
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = stack;
    f->ctx.uc_stack.ss_size = fiber_stack;
    f->ctx.uc_link = &sync_main;
    makecontext(&f->ctx, sync_entry, 0);
}
static inline void resume_fiber(fiber *f) { swapcontext(&sync_main, &f->ctx); }
static inline void yield_fiber(void) { swapcontext(&sync_current->ctx, &sync_main); }
#endif
static inline void run_sync(dim3 grid, dim3 block, size_t shared, const std::function<void()> &body)
{
    shared_mem.resize(shared);
    const size_t n = (size_t)block.x * block.y * block.z;
    /* The stacks, once per launch: untouched pages cost no memory. */
    char *stacks = (char *)malloc(n * fiber_stack);
    if (n && !stacks) {
        fprintf(stderr, "tpace emulation: no memory for the stacks of %zu threads\n", n);
        exit(3);
    }
    std::vector<fiber> f(n);
    std::vector<size_t> order;
    sync_body = &body;
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
                order.clear();
                if (!shared_mem.empty())
                    memset(shared_mem.data(), 0xff, shared_mem.size());
                for (size_t i = 0; i < n; i++) {
                    f[i].tid = dim3((unsigned)(i % block.x), (unsigned)(i / block.x % block.y),
                                    (unsigned)(i / ((size_t)block.x * block.y)));
                    start_fiber(&f[i], stacks + i * fiber_stack);
                    order.push_back(i);
                }
                /* One phase per pass: every waiting thread runs to its next barrier or its end. */
                while (!order.empty()) {
                    for (size_t i = order.size(); i > 1; i--) {
                        size_t j = (size_t)(random_next(dev(current)) % i);
                        size_t t = order[i - 1];
                        order[i - 1] = order[j];
                        order[j] = t;
                    }
                    size_t waiting = 0;
                    for (size_t k = 0; k < order.size(); k++) {
                        fiber *th = &f[order[k]];
                        gridDim = grid;
                        blockDim = block;
                        blockIdx = dim3(bx, by, bz);
                        threadIdx = th->tid;
                        sync_current = th;
                        resume_fiber(th);
                        sync_current = NULL;
                        if (!th->finished)
                            order[waiting++] = order[k];
                    }
                    if (waiting != 0 && waiting != order.size()) {
                        fprintf(stderr, "tpace emulation: __syncthreads() reached by some threads of a block "
                                        "but not all (kernel would hang on a GPU)\n");
                        exit(3);
                    }
                    order.resize(waiting);
                }
            }
    sync_body = NULL;
    free(stacks);
}
} // namespace tpace_emu

/* A barrier: back to the block's scheduler, which resumes this thread once
 * every thread of the block is here. */
static inline void __syncthreads(void)
{
    if (!tpace_emu::sync_current) {
        fprintf(stderr, "tpace emulation: __syncthreads() outside a TPACE_LAUNCH_SYNC launch (a kernel "
                        "with barriers must be launched with TPACE_LAUNCH_SYNC)\n");
        exit(3);
    }
    tpace_emu::yield_fiber();
}
/* Warp shuffles, in kernels launched with TPACE_LAUNCH_SYNC whose every thread makes the same
 * shuffles (tpace's fused kernels: block-uniform control flow). Each thread puts its value
 * in the block's exchange slots and waits, like a barrier, until every thread has; then it
 * reads its source lane's. Shuffles alternate between two sets of slots: a thread can
 * only write a set again after the next shuffle's wait, when every thread has read it. */
namespace tpace_emu {
template <typename tpace_t> static inline tpace_t shuffle(tpace_t v, int delta, int width)
{
    static thread_local std::vector<tpace_t> slots[2]; /* per host thread: devices run on threads of their own */
    fiber *me = sync_current;
    if (me == NULL) {
        fprintf(stderr, "tpace emulation: a warp shuffle outside a TPACE_LAUNCH_SYNC launch\n");
        exit(3);
    }
    const size_t n = (size_t)blockDim.x * blockDim.y * blockDim.z;
    const size_t tid = threadIdx.x + (size_t)blockDim.x * (threadIdx.y + (size_t)blockDim.y * threadIdx.z);
    std::vector<tpace_t> &set = slots[me->shuffles++ & 1u];
    set.resize(n);
    set[tid] = v;
    yield_fiber();
    /* The source lane, within the lane's segment of `width` lanes of its warp (else its own). */
    const long lane = (long)(tid % 32), first = lane - lane % width, src = lane + delta;
    return src >= first && src < first + width && tid - (size_t)lane + (size_t)src < n ? set[tid - (size_t)lane + (size_t)src] : v;
}
} // namespace tpace_emu
template <typename tpace_t> static inline tpace_t __shfl_up_sync(unsigned mask, tpace_t var, unsigned delta, int width = 32)
{
    (void)mask;
    return tpace_emu::shuffle(var, -(int)delta, width);
}
template <typename tpace_t> static inline tpace_t __shfl_down_sync(unsigned mask, tpace_t var, unsigned delta, int width = 32)
{
    (void)mask;
    return tpace_emu::shuffle(var, (int)delta, width);
}
/* The launch of `entry` with `shared` bytes of dynamic shared memory a block: refused, as CUDA
 * refuses it (cudaGetLastError says so), beyond 48 KiB unless the kernel opted in to that much.
 * `kernel` must name one function (a template kernel with its arguments), as for
 * cudaFuncSetAttribute. */
template <typename tpace_e, typename tpace_f>
static inline void tpace_emu_launch_sync(tpace_e *entry, dim3 grid, dim3 block, size_t shared, cudaStream_t s, tpace_f kernel)
{
    const int opted = tpace_emu::opted_shared(entry);
    const int allowed = opted > tpace_emu::shared_unasked ? opted : tpace_emu::shared_unasked;
    if (shared > (size_t)allowed || shared > (size_t)tpace_emu::shared_limit()) {
        tpace_emu::last_error = cudaErrorInvalidValue;
        return;
    }
    tpace_emu::enqueue(s, [=]() { tpace_emu::run_sync(grid, block, shared, std::function<void()>(kernel)); }, -1);
}
#define TPACE_LAUNCH_SYNC(kernel, grid, block, shared, stream, ...) \
    tpace_emu_launch_sync(&kernel, grid, block, shared, stream, \
                          [tpace_emu_args = std::make_tuple(__VA_ARGS__)]() { \
                              std::apply([](const auto &...tpace_emu_a) { kernel(tpace_emu_a...); }, tpace_emu_args); \
                          })
/* A kernel's dynamic shared memory, `bytes` of it, as `name` (unsigned char *). */
#define TPACE_DYNAMIC_SHARED(name, bytes) unsigned char *const name = tpace_emu::dynamic_shared(bytes)
#else
#define TPACE_LAUNCH(kernel, grid, block, stream, ...) kernel<<<grid, block, 0, stream>>>(__VA_ARGS__)
#define TPACE_LAUNCH_SYNC(kernel, grid, block, shared, stream, ...) kernel<<<grid, block, shared, stream>>>(__VA_ARGS__)
/* A kernel's dynamic shared memory, `bytes` of it (the launch gives the size), as `name`. */
#define TPACE_DYNAMIC_SHARED(name, bytes) extern __shared__ __align__(16) unsigned char name[]
#endif

/* ==== end of tpace CUDA emulation ==== */
