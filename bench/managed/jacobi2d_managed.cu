/* Jacobi-2D with CUDA managed memory: what a user might write instead of tpace.
 *
 * The same program as examples/jacobi2d.c (same grid, initial values, arithmetic,
 * step count argument and printed checksum), with both arrays allocated by
 * cudaMallocManaged, so that the driver moves pages between host and device on
 * demand and a grid larger than the GPU's memory still runs (oversubscription).
 * The copy sweep `a = work` is a swap of the two arrays, as any CUDA programmer
 * (and tpace) would do: `work` starts as a copy of `a`, border included, so that
 * either array can be read as the source of a step.
 *
 * Build (bit for bit with the sequential program: no multiply-adds to contract
 * here, but --fmad=false as for tpace's output):
 *     nvcc -O3 -arch=sm_90 --fmad=false -DX=49152 -DY=61440 jacobi2d_managed.cu -o jm
 * Run:
 *     jm STEPS [plain|prefetch]
 *   plain     no hints: pages migrate on first touch, to the GPU in the first step
 *             and back to the host when the host reads the result;
 *   prefetch  cudaMemPrefetchAsync of both arrays to the GPU before the first step
 *             and of the result back to the host after the last.
 * On standard error one line, `managed: mode=... seconds=... glups=...`:
 * seconds runs from the first prefetch or kernel to the result being back in host
 * memory (as tpace's seconds run from the first upload to the last download);
 * loop_seconds is the steps alone and back_seconds the way back. Glup/s counts
 * X x Y points a step, as tpace's report does. With MANAGED_PROGRESS=1 it also
 * prints a line after every step (the bench kills a run that takes too long and
 * rates the steps it finished). TPACE_DUMP=FILE appends the result `a` to FILE in
 * tpace's dump format (`tpace compare` against the sequential program's `a`).
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef X
#define X 1000
#endif
#ifndef Y
#define Y 600
#endif
#ifndef STEPS
#define STEPS 50
#endif
/* Most blocks along y (CUDA's limit); smaller in checks, to run the row loop. */
#ifndef GRID_Y_MAX
#define GRID_Y_MAX 65535
#endif

/* Stop with the call, the file line and CUDA's words for the error. */
#define CHECK(call)                                                                                                   \
    do {                                                                                                              \
        cudaError_t e_ = (call);                                                                                      \
        if (e_ != cudaSuccess) {                                                                                      \
            fprintf(stderr, "jacobi2d_managed: %s failed at line %d: %s\n", #call, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                                                  \
        }                                                                                                             \
    } while (0)

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One step: dst's interior from src, the sequential program's expression as it is
 * (float sums, then a double division, rounded back to float). Threads run along y
 * (contiguous); blocks cover y with blockIdx.x and stride over rows x with
 * blockIdx.y, since gridDim.y stops at 65535. */
__global__ void jacobi_step(float *__restrict__ dst, const float *__restrict__ src)
{
    const long y = 1 + (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (y >= Y - 1)
        return;
    for (long x = 1 + blockIdx.y; x < X - 1; x += gridDim.y) {
        const size_t i = (size_t)x * Y + (size_t)y;
        dst[i] = (src[i - Y] + src[i + Y] + src[i - 1] + src[i + 1]) / 4.0;
    }
}

/* Where a prefetch goes: the GPU, or the host. */
static void prefetch(const void *p, size_t bytes, int device, int to_host)
{
#if CUDART_VERSION >= 13000
    cudaMemLocation where;
    memset(&where, 0, sizeof where);
    where.type = to_host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    where.id = to_host ? 0 : device;
    CHECK(cudaMemPrefetchAsync(p, bytes, where, 0, 0));
#else
    CHECK(cudaMemPrefetchAsync(p, bytes, to_host ? cudaCpuDeviceId : device, 0));
#endif
}

/* The sequential program's checksum, term for term. */
static double checksum(const float *a)
{
    double s = 0.0;
    for (long x = 0; x < X; x++)
        for (long y = 0; y < Y; y++)
            s += a[(size_t)x * Y + (size_t)y] * (double)((x + 2 * y) % 7 + 1);
    return s;
}

/* Append `a` to $TPACE_DUMP as tpace_dump does: "a 4 2 0 X 0 Y\n" and the raw floats. */
static void dump(const float *a)
{
    const char *path = getenv("TPACE_DUMP");
    if (path == NULL || *path == '\0')
        return;
    FILE *f = fopen(path, "ab");
    if (f == NULL) {
        fprintf(stderr, "jacobi2d_managed: cannot open TPACE_DUMP file %s\n", path);
        exit(2);
    }
    fprintf(f, "a %zu 2 0 %ld 0 %ld\n", sizeof(float), (long)X, (long)Y);
    const size_t count = (size_t)X * (size_t)Y;
    if (fwrite(a, sizeof(float), count, f) != count || fclose(f) != 0) {
        fprintf(stderr, "jacobi2d_managed: cannot write TPACE_DUMP file %s\n", path);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    const int steps = argc > 1 ? atoi(argv[1]) : STEPS;
    const char *mode = argc > 2 ? argv[2] : "plain";
    const int prefetching = strcmp(mode, "prefetch") == 0;
    if (steps < 0 || (!prefetching && strcmp(mode, "plain") != 0)) {
        fprintf(stderr, "usage: %s STEPS [plain|prefetch]\n", argv[0]);
        return 2;
    }
    const int progress = getenv("MANAGED_PROGRESS") != NULL && atoi(getenv("MANAGED_PROGRESS")) != 0;
    int device = 0, concurrent = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device));
    if (!concurrent)
        fprintf(stderr, "jacobi2d_managed: this GPU cannot page managed memory on demand: a grid larger than its memory will fail\n");

    const size_t count = (size_t)X * (size_t)Y, bytes = count * sizeof(float);
    float *a = NULL, *work = NULL;
    CHECK(cudaMallocManaged((void **)&a, bytes, cudaMemAttachGlobal));
    CHECK(cudaMallocManaged((void **)&work, bytes, cudaMemAttachGlobal));

    /* The sequential program's initial values, written by the host (pages start there). */
    for (long x = 0; x < X; x++)
        for (long y = 0; y < Y; y++)
            a[(size_t)x * Y + (size_t)y] = (float)((x * 37 + y * 11) % 101) / 7.0f;
    memcpy(work, a, bytes);

    const dim3 block(256);
    const long rows = X - 2 < 1 ? 1 : X - 2;
    const dim3 grid((unsigned)((Y - 2 + 255) / 256 > 0 ? (Y - 2 + 255) / 256 : 1),
                    (unsigned)(rows < GRID_Y_MAX ? rows : GRID_Y_MAX));
    float *src = a, *dst = work;

    const double t0 = now();
    if (prefetching) {
        prefetch(a, bytes, device, 0);
        prefetch(work, bytes, device, 0);
    }
    for (int n = 0; n < steps; n++) {
        if (X > 2 && Y > 2)
            jacobi_step<<<grid, block>>>(dst, src);
        CHECK(cudaGetLastError());
        float *t = src;
        src = dst;
        dst = t;
        if (progress) {
            CHECK(cudaDeviceSynchronize());
            fprintf(stderr, "managed: progress step=%d of=%d points=%.0f seconds=%.6f\n", n + 1, steps,
                    (double)X * (double)Y * (double)(n + 1), now() - t0);
        }
    }
    CHECK(cudaDeviceSynchronize());
    const double t1 = now();
    /* The result is `src` now. Bring it back: a prefetch, or the host touching one
     * float of every 4 KiB page, which faults the pages over as a reader would. */
    if (prefetching) {
        prefetch(src, bytes, device, 1);
        CHECK(cudaDeviceSynchronize());
    } else {
        volatile float sink = 0.0f;
        for (size_t i = 0; i < count; i += 4096 / sizeof(float))
            sink = sink + src[i];
        (void)sink;
    }
    const double t2 = now();

    const double points = (double)X * (double)Y * (double)steps;
    fprintf(stderr,
            "managed: mode=%s steps=%d X=%ld Y=%ld bytes=%zu seconds=%.6f loop_seconds=%.6f back_seconds=%.6f glups=%.3f\n",
            mode, steps, (long)X, (long)Y, 2 * bytes, t2 - t0, t1 - t0, t2 - t1, t2 > t0 ? points / (t2 - t0) * 1e-9 : 0.0);
    printf("jacobi2d %dx%d, %d steps: checksum %.9e\n", X, Y, steps, checksum(src));
    dump(src);
    CHECK(cudaFree(a));
    CHECK(cudaFree(work));
    return 0;
}
