/* ==== tpace runtime, OpenACC part (shipped by the translator; the same for every program) ====
 * The device hooks of the common executor. Device buffers are explicit
 * allocations (acc_malloc) used through `deviceptr`, so they are separate memory
 * from the host arrays even under a compiler's host fallback: a missing or short
 * transfer shows up as a wrong answer. Queue q is OpenACC async queue q.
 */
#include <openacc.h>

#if defined(__GNUC__) && !defined(__clang__) && !defined(__NVCOMPILER) && !defined(__PGI) && !defined(TPACE_FAST_MATH)
/* gcc's nvptx back end writes multiplies and adds without PTX's .rn modifier, which
 * lets the driver's PTX compiler contract them into FMAs at its default -O3: results
 * then differ from the sequential program in the last bit (measured on the H100 with
 * gcc 12, 2026-11-25), whatever -ffp-contract says. libgomp compiles the kernels when
 * the program first uses the GPU, with GOMP_NVPTX_JIT's level: -O0 keeps every
 * operation as written. A value the user set is kept (e.g. GOMP_NVPTX_JIT=-O4 for
 * speed); -DTPACE_FAST_MATH (tpace run --fast-math) leaves it alone. */
#include <stdlib.h>
__attribute__((constructor)) static void tpace_acc_exact_jit(void)
{
    (void)setenv("GOMP_NVPTX_JIT", "-O0", 0);
}
#endif

TPACE_HOOK void *tpace_dev_alloc(tpace_rt *r, size_t bytes)
{
    (void)r;
    return acc_malloc(bytes);
}

TPACE_HOOK void tpace_dev_free(tpace_rt *r, void *p)
{
    (void)r;
    acc_free(p);
}

TPACE_HOOK void tpace_dev_upload(tpace_rt *r, void *dev, const void *host, size_t bytes, int q)
{
    (void)r;
    acc_memcpy_to_device_async(dev, (void *)host, bytes, q);
}

TPACE_HOOK void tpace_dev_download(tpace_rt *r, void *host, const void *dev, size_t bytes, int q)
{
    (void)r;
    acc_memcpy_from_device_async(host, (void *)dev, bytes, q);
}

/* A device-to-device copy as a kernel on queue q (bytes is a multiple of 4:
 * whole planes of float or double). */
TPACE_HOOK void tpace_dev_copy(tpace_rt *r, void *dst, const void *src, size_t bytes, int q)
{
    (void)r;
    unsigned int *d = (unsigned int *)dst;
    const unsigned int *s = (const unsigned int *)src;
    const size_t words = bytes / sizeof(unsigned int);
#pragma acc parallel loop gang vector deviceptr(d, s) async(q)
    for (size_t i = 0; i < words; i++)
        d[i] = s[i];
    (void)q; /* a compiler without OpenACC ignores the async clause */
}

TPACE_HOOK void tpace_dev_wait(tpace_rt *r, int from_q, int to_q)
{
    (void)r;
    acc_wait_async(from_q, to_q);
}

/* OpenACC has no events: a mark names the queue, and waiting for it waits for
 * everything on that queue, which includes the marked work. */
TPACE_HOOK void tpace_dev_mark(tpace_rt *r, int q, int id)
{
    r->mark_queue[id] = q;
}

TPACE_HOOK void tpace_dev_wait_mark(tpace_rt *r, int id, int q)
{
    acc_wait_async(r->mark_queue[id], q);
}

TPACE_HOOK void tpace_dev_sync(tpace_rt *r)
{
    (void)r;
    acc_wait_all();
}

/* OpenACC has no device timers: TPACE_TRACE is ignored (with a note). */
TPACE_HOOK int tpace_dev_stamp(tpace_rt *r, int q)
{
    (void)r;
    (void)q;
    return -1;
}

TPACE_HOOK double tpace_dev_stamp_ms(tpace_rt *r, int from, int to)
{
    (void)r;
    (void)from;
    (void)to;
    return 0.0;
}

/* Nothing to wait for: OpenACC has no timers (tpace_dev_stamp). */
TPACE_HOOK void tpace_dev_stamp_wait(tpace_rt *r, int stamp)
{
    (void)r;
    (void)stamp;
}

/* The device's name (OpenACC 2.6's acc_property_name), or "host" under a host fallback. */
TPACE_HOOK void tpace_dev_name(tpace_rt *r, char *name, size_t size)
{
    const char *said = NULL;
    if (acc_get_num_devices(acc_device_not_host) > 0)
        said = acc_get_property_string(r->device, acc_device_not_host, acc_property_name);
    snprintf(name, size, "%s", said != NULL && *said ? said : "host (OpenACC host fallback)");
}

/* Without timers the run cannot measure itself against the model. */
TPACE_HOOK int tpace_dev_replans(tpace_rt *r)
{
    (void)r;
    return 0;
}

/* OpenACC 2.6's acc_get_property gives the free memory where the implementation
 * knows it; without a device (host fallback) the budget is unknown. */
TPACE_HOOK size_t tpace_dev_free_memory(tpace_rt *r)
{
    (void)r;
    if (acc_get_num_devices(acc_device_not_host) == 0)
        return 0;
    return acc_get_property(0, acc_device_not_host, acc_property_free_memory);
}

TPACE_HOOK void tpace_dev_begin(tpace_rt *r)
{
    (void)r;
}

/* Devices: the accelerators OpenACC sees, or the host (one) under a host fallback. */
TPACE_HOOK int tpace_dev_count(void)
{
    const int n = acc_get_num_devices(acc_device_not_host);
    return n > 0 ? n : 1;
}

TPACE_HOOK void tpace_dev_activate(tpace_rt *r)
{
    if (acc_get_num_devices(acc_device_not_host) > 0)
        acc_set_device_num(r->device, acc_device_not_host);
}

TPACE_HOOK void tpace_dev_end(tpace_rt *r)
{
    (void)r;
}

/* Each device's executor runs on a host thread of its own (acc_set_device_num is per
 * thread), so that every device's copies and kernels run at once. */
TPACE_HOOK int tpace_dev_threads(void)
{
    return 1;
}

/* OpenACC has no copies between devices: ghost planes go through host memory. */
TPACE_HOOK int tpace_dev_peer_able(tpace_rt *r, int other)
{
    (void)r;
    (void)other;
    return 0;
}

TPACE_HOOK void tpace_dev_peer_enable(tpace_rt *r, int other)
{
    (void)other;
    tpace_fail(&r->plan, "internal error: OpenACC has no copies between devices (please report it)");
}

TPACE_HOOK void tpace_dev_peer_copy(tpace_rt *r, void *dst, int dst_device, const void *src, size_t bytes, int q)
{
    (void)dst;
    (void)dst_device;
    (void)src;
    (void)bytes;
    (void)q;
    tpace_fail(&r->plan, "internal error: OpenACC has no copies between devices (please report it)");
}

/* Host memory stays as it is (OpenACC has no call that page-locks it). */
TPACE_HOOK void tpace_dev_pin(tpace_rt *r, void *host, size_t bytes)
{
    (void)r;
    (void)host;
    (void)bytes;
}

TPACE_HOOK void tpace_dev_unpin(tpace_rt *r, void *host)
{
    (void)r;
    (void)host;
}

/* OpenACC has no events: a flag names the queue, and waiting for it waits for everything
 * issued on that queue so far (which includes the flagged work, and may include more). */
TPACE_HOOK int tpace_dev_flag(tpace_rt *r, int q)
{
    (void)r;
    return q;
}

TPACE_HOOK void tpace_dev_flag_wait(tpace_rt *r, int id)
{
    (void)r;
    acc_wait(id);
}

/* An OpenACC reduction clause gives its result on the host once the kernel is done,
 * so the generated code adds it into the host's per-step slot (tpace_reduced). */
TPACE_HOOK int tpace_dev_reduces_on_device(void)
{
    return 0;
}
/* ==== end of tpace runtime, OpenACC part ==== */
