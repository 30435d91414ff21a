/* Why the first upload after a re-plan runs at half the link's rate (bench/RESULTS.md, eighth
 * session: 25.5 GB/s against 52.9): host-to-device copies of 1 GiB from page-locked memory into
 * device buffers allocated in different ways, each timed with events. Prints one line per case.
 *   nvcc -O2 -arch=sm_90 upload_after_alloc.cu -o upload && ./upload */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));     \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

static const size_t GIB = (size_t)1 << 30;

/* GB/s of one upload of `bytes` from `host` into `dev`. */
static double upload(void *dev, const void *host, size_t bytes, cudaStream_t s)
{
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaEventRecord(a, s));
    CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return (double)bytes / (ms * 1e-3) / 1e9;
}

int main(void)
{
    void *host;
    CHECK(cudaHostAlloc(&host, GIB, cudaHostAllocDefault));
    for (size_t i = 0; i < GIB; i += 4096)
        ((char *)host)[i] = (char)i;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    void *a, *b, *c, *d;
    /* A: a fresh buffer, first upload, then again. */
    CHECK(cudaMalloc(&a, GIB));
    double a1 = upload(a, host, GIB, s), a2 = upload(a, host, GIB, s);
    printf("fresh buffer: first upload %.1f GB/s, second %.1f\n", a1, a2);
    /* B: freed and allocated again (the re-plan's way), at once. */
    CHECK(cudaFree(a));
    CHECK(cudaMalloc(&b, GIB));
    double b1 = upload(b, host, GIB, s), b2 = upload(b, host, GIB, s);
    printf("freed then allocated: first %.1f GB/s, second %.1f\n", b1, b2);
    /* C: a fresh buffer set to zero on the device first. */
    CHECK(cudaMalloc(&c, GIB));
    CHECK(cudaMemsetAsync(c, 0, GIB, s));
    CHECK(cudaStreamSynchronize(s));
    double c1 = upload(c, host, GIB, s);
    printf("fresh buffer, memset first: first %.1f GB/s\n", c1);
    /* D: a bigger allocation after freeing everything (4.5 GB: Jacobi-2D's re-planned buffers). */
    CHECK(cudaFree(b));
    CHECK(cudaFree(c));
    CHECK(cudaMalloc(&d, 9 * GIB / 2));
    double d1 = upload(d, host, GIB, s), d2 = upload((char *)d + 2 * GIB, host, GIB, s),
           d3 = upload(d, host, GIB, s);
    printf("4.5 GiB allocated after frees: first GiB %.1f GB/s, third GiB %.1f, first again %.1f\n", d1, d2, d3);
    /* E: host memory registered (as tpace does with the user's arrays) instead of allocated. */
    void *reg = malloc(GIB);
    for (size_t i = 0; i < GIB; i += 4096)
        ((char *)reg)[i] = (char)i;
    CHECK(cudaHostRegister(reg, GIB, cudaHostRegisterDefault));
    double e1 = upload(d, reg, GIB, s), e2 = upload(d, reg, GIB, s);
    printf("registered host memory: first %.1f GB/s, second %.1f\n", e1, e2);
    CHECK(cudaFree(d));
    void *f;
    CHECK(cudaMalloc(&f, GIB));
    double f1 = upload(f, reg, GIB, s);
    printf("registered host memory into a buffer allocated after a free: %.1f GB/s\n", f1);
    return 0;
}
