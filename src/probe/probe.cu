/* tpace probe: measures the figures of a machine profile on the current CUDA
 * device and prints them as `key=value` lines for `tpace probe` to read.
 * Copies are timed with the host clock around a device synchronisation, after
 * one untimed warm-up; each figure is the best of REPS runs. Built without nvcc
 * it runs on tpace's CPU emulation (the figures are then the CPU's). */
#define REPS 5

static void probe_check(cudaError_t e, const char *call)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "tpace probe: %s failed: %s\n", call, cudaGetErrorString(e));
        exit(2);
    }
}
#define CHECK(call) probe_check((call), #call)

__global__ void probe_empty(int *p)
{
    if (p != NULL && threadIdx.x == 1u << 30)
        p[0] = 1;
}

/* Best time of REPS runs of `copy(stream)` after a warm-up. */
template <typename F>
static double best_seconds(F copy)
{
    double best = 1e30;
    for (int r = 0; r <= REPS; r++) {
        double t0 = tpace_now();
        copy();
        CHECK(cudaDeviceSynchronize());
        double t = tpace_now() - t0;
        if (r > 0 && t < best)
            best = t;
    }
    return best;
}

int main(int argc, char **argv)
{
    const size_t bytes = argc > 1 ? (size_t)strtod(argv[1], NULL) : (size_t)1 << 30;
    cudaStream_t up, down;
    CHECK(cudaStreamCreate(&up));
    CHECK(cudaStreamCreate(&down));
    char *dev_a = NULL, *dev_b = NULL;
    CHECK(cudaMalloc((void **)&dev_a, bytes));
    CHECK(cudaMalloc((void **)&dev_b, bytes));
    char *host_a = (char *)malloc(bytes), *host_b = (char *)malloc(bytes);
    if (host_a == NULL || host_b == NULL) {
        fprintf(stderr, "tpace probe: cannot allocate %zu bytes of host memory\n", bytes);
        return 2;
    }
    memset(host_a, 1, bytes);
    memset(host_b, 2, bytes);
    CHECK(cudaMemcpyAsync(dev_a, host_a, bytes, cudaMemcpyHostToDevice, up));

    /* Pageable first, then the same buffers page-locked. */
    double pageable = best_seconds([&] { cudaMemcpyAsync(dev_b, host_b, bytes, cudaMemcpyHostToDevice, up); });
    CHECK(cudaHostRegister(host_a, bytes, cudaHostRegisterDefault));
    CHECK(cudaHostRegister(host_b, bytes, cudaHostRegisterDefault));
    double h2d = best_seconds([&] { cudaMemcpyAsync(dev_a, host_a, bytes, cudaMemcpyHostToDevice, up); });
    double d2h = best_seconds([&] { cudaMemcpyAsync(host_b, dev_b, bytes, cudaMemcpyDeviceToHost, down); });
    double both = best_seconds([&] {
        cudaMemcpyAsync(dev_a, host_a, bytes, cudaMemcpyHostToDevice, up);
        cudaMemcpyAsync(host_b, dev_b, bytes, cudaMemcpyDeviceToHost, down);
    });
    double d2d = best_seconds([&] { cudaMemcpyAsync(dev_b, dev_a, bytes, cudaMemcpyDeviceToDevice, up); });

    /* Launch overhead: many empty kernels in one stream. */
    const int launches = 2000;
    double launch = best_seconds([&] {
        for (int i = 0; i < launches; i++)
            TPACE_LAUNCH(probe_empty, dim3(1), dim3(32), up, (int *)NULL);
    }) / launches;
    CHECK(cudaGetLastError());

    size_t free_bytes = 0, total = 0;
    CHECK(cudaMemGetInfo(&free_bytes, &total));
    int sms = 0, l2 = 0, shared = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    CHECK(cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));

    printf("bytes=%zu\n", bytes);
    printf("memory_gbs=%.1f\n", 2.0 * (double)bytes / d2d / 1e9); /* read + written */
    printf("h2d_gbs=%.2f\n", (double)bytes / h2d / 1e9);
    printf("d2h_gbs=%.2f\n", (double)bytes / d2h / 1e9);
    printf("duplex_gbs=%.2f\n", 2.0 * (double)bytes / both / 1e9);
    printf("h2d_pageable_gbs=%.2f\n", (double)bytes / pageable / 1e9);
    printf("launch_overhead_us=%.2f\n", launch * 1e6);
    printf("memory_gb=%.2f\n", (double)total / 1e9);
    printf("compute_units=%d\n", sms);
    printf("l2_bytes=%d\n", l2);
    printf("shared_bytes=%d\n", shared);

    CHECK(cudaHostUnregister(host_a));
    CHECK(cudaHostUnregister(host_b));
    CHECK(cudaFree(dev_a));
    CHECK(cudaFree(dev_b));
    CHECK(cudaStreamDestroy(up));
    CHECK(cudaStreamDestroy(down));
    free(host_a);
    free(host_b);
    (void)tpace_dump; /* part of the embedded runtime, unused here */
    return 0;
}
