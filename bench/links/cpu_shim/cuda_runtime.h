/* The CUDA runtime calls bench/links/host_links.cu makes, played on the CPU for
 * bench/dry-run.sh (no GPU): every "device" is host memory, every copy a memcpy on the
 * calling thread, every stream synchronous. LINKS_SHIM_GPUS devices (default 2). The
 * figures it prints then are the host's memcpy rates, not a GPU's. */
#ifndef TPACE_LINKS_CPU_SHIM
#define TPACE_LINKS_CPU_SHIM
#include <stdlib.h>
#include <string.h>

typedef int cudaError_t;
typedef int cudaStream_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorInvalidDevice = 101 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
#define cudaHostAllocPortable 1
#define cudaStreamNonBlocking 1

static inline const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : e == cudaErrorMemoryAllocation ? "out of memory" : "invalid device";
}
static inline cudaError_t cudaGetDeviceCount(int *n)
{
    const char *v = getenv("LINKS_SHIM_GPUS");
    *n = v != NULL && atoi(v) > 0 ? atoi(v) : 2;
    return cudaSuccess;
}
static inline cudaError_t cudaSetDevice(int d)
{
    int n = 0;
    cudaGetDeviceCount(&n);
    return d >= 0 && d < n ? cudaSuccess : cudaErrorInvalidDevice;
}
static inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = malloc(bytes);
    return *p != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned)
{
    return cudaMalloc(p, bytes);
}
static inline cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}
static inline cudaError_t cudaFreeHost(void *p)
{
    return cudaFree(p);
}
static inline cudaError_t cudaMemset(void *p, int v, size_t bytes)
{
    memset(p, v, bytes);
    return cudaSuccess;
}
static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind, cudaStream_t)
{
    memcpy(dst, src, bytes);
    return cudaSuccess;
}
static inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned)
{
    *s = 0;
    return cudaSuccess;
}
static inline cudaError_t cudaStreamSynchronize(cudaStream_t)
{
    return cudaSuccess;
}
static inline cudaError_t cudaStreamDestroy(cudaStream_t)
{
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}
#endif
