/* Just enough of the CUDA runtime for jacobi2d_managed.cu to run on the CPU, built
 * as C++ by g++ (no GPU here): managed memory is host memory, prefetches do
 * nothing, a kernel launch runs every block and thread in turn. For the checks
 * that need no GPU (tests/bench_managed.rs, bench/dry-run.sh); the launch
 * `kernel<<<grid, block>>>(args)` is rewritten to `TPACE_SHIM_LAUNCH(kernel, grid,
 * block, args)` before compiling, since C++ has no such syntax. */
#ifndef TPACE_MANAGED_CPU_SHIM
#define TPACE_MANAGED_CPU_SHIM
#include <cstdlib>

#define __global__
#define __restrict__ __restrict
#define CUDART_VERSION 13000
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum cudaDeviceAttr { cudaDevAttrConcurrentManagedAccess = 89 };
enum cudaMemLocationType { cudaMemLocationTypeDevice = 1, cudaMemLocationTypeHost = 2 };
struct cudaMemLocation {
    cudaMemLocationType type;
    int id;
};
#define cudaMemAttachGlobal 1
typedef void *cudaStream_t;
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
static dim3 blockIdx, threadIdx, blockDim, gridDim;

static inline const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaErrorMemoryAllocation ? "out of memory" : "error";
}
static inline cudaError_t cudaGetDevice(int *d)
{
    *d = 0;
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr, int)
{
    *v = 1;
    return cudaSuccess;
}
static inline cudaError_t cudaMallocManaged(void **p, size_t bytes, unsigned)
{
    *p = std::malloc(bytes);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaFree(void *p)
{
    std::free(p);
    return cudaSuccess;
}
static inline cudaError_t cudaMemPrefetchAsync(const void *, size_t, cudaMemLocation, unsigned, cudaStream_t)
{
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}
static inline cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

/* Every block, every thread, one after another. */
#define TPACE_SHIM_LAUNCH(kernel, grid, block, ...)                                                   \
    do {                                                                                               \
        gridDim = (grid);                                                                              \
        blockDim = (block);                                                                            \
        for (blockIdx.y = 0; blockIdx.y < gridDim.y; blockIdx.y++)                                     \
            for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++)                                 \
                for (threadIdx.x = 0; threadIdx.x < blockDim.x; threadIdx.x++)                         \
                    kernel(__VA_ARGS__);                                                               \
    } while (0)
#endif
