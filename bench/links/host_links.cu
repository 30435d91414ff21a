/* How much the host's memory feeds several GPUs at once (issue 25): every GPU of the node
 * copies from and to page-locked host memory at the same time, one host thread a GPU,
 * host-to-device alone, device-to-host alone, and both ways at once (what an out-of-core
 * pipeline does), for 1, 2, ... N GPUs. Each figure is the sum over the GPUs of bytes over
 * the slowest GPU's seconds, the best of 3 rounds of REPS copies of GB gigabytes a way.
 * The bound it shows: a grid's bytes in and out over the both-ways figure is the least
 * time any number of these GPUs can take for a pipeline that moves the grid once.
 * Build: nvcc -O2 -arch=sm_90 host_links.cu -o host_links. Without nvcc (bench/dry-run.sh), g++
 * builds it against tpace's CPU emulation of CUDA (TPACE_EMU_DEVICES devices, memcpy for copies).
 * Usage: host_links [GB] [REPS] (defaults 1 and 4). Prints one line per GPU count and way. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __CUDACC__
#include <cuda_runtime.h>
#else
#include "../../src/runtime/cuda_emulation.cuh"
#endif

#define MAX_GPUS 16

/* Stop on any CUDA error, naming the call. */
#define CHECK(call)                                                                                     \
    do {                                                                                                \
        cudaError_t err_ = (call);                                                                      \
        if (err_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "host_links: %s failed: %s (line %d)\n", #call, cudaGetErrorString(err_), __LINE__); \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One GPU's buffers and streams, and what its thread is told and measures. */
typedef struct {
    int device;
    size_t bytes;
    int reps;
    char *host_up, *host_down; /* page-locked */
    char *dev_up, *dev_down;
    cudaStream_t up, down;
    int ways;       /* 1: up, 2: down, 3: both */
    double seconds; /* this round's */
} gpu;

static pthread_barrier_t start_line;

static void *round_main(void *arg)
{
    gpu *g = (gpu *)arg;
    CHECK(cudaSetDevice(g->device));
    pthread_barrier_wait(&start_line);
    const double t0 = now();
    for (int i = 0; i < g->reps; i++) {
        if (g->ways & 1)
            CHECK(cudaMemcpyAsync(g->dev_up, g->host_up, g->bytes, cudaMemcpyHostToDevice, g->up));
        if (g->ways & 2)
            CHECK(cudaMemcpyAsync(g->host_down, g->dev_down, g->bytes, cudaMemcpyDeviceToHost, g->down));
    }
    CHECK(cudaDeviceSynchronize());
    g->seconds = now() - t0;
    return NULL;
}

int main(int argc, char **argv)
{
    const double gb = argc > 1 ? atof(argv[1]) : 1.0;
    const int reps = argc > 2 ? atoi(argv[2]) : 4;
    if (gb <= 0 || reps < 1) {
        fprintf(stderr, "usage: host_links [GB > 0] [REPS >= 1]\n");
        return 2;
    }
    int n = 0;
    CHECK(cudaGetDeviceCount(&n));
    n = n > MAX_GPUS ? MAX_GPUS : n;
    static gpu g[MAX_GPUS];
    const size_t bytes = (size_t)(gb * 1e9);
    for (int d = 0; d < n; d++) {
        g[d].device = d;
        g[d].bytes = bytes;
        g[d].reps = reps;
        CHECK(cudaSetDevice(d));
        /* Page-locked as tpace's runtime locks the user's arrays: malloc, touched, registered. */
        g[d].host_up = (char *)malloc(bytes);
        g[d].host_down = (char *)malloc(bytes);
        if (g[d].host_up == NULL || g[d].host_down == NULL) {
            fprintf(stderr, "host_links: host memory ran out; lower GB\n");
            return 1;
        }
        memset(g[d].host_up, 1, bytes);
        memset(g[d].host_down, 0, bytes);
        CHECK(cudaHostRegister(g[d].host_up, bytes, cudaHostRegisterPortable));
        CHECK(cudaHostRegister(g[d].host_down, bytes, cudaHostRegisterPortable));
        CHECK(cudaMalloc((void **)&g[d].dev_up, bytes));
        CHECK(cudaMalloc((void **)&g[d].dev_down, bytes));
        CHECK(cudaStreamCreate(&g[d].up));
        CHECK(cudaStreamCreate(&g[d].down));
        CHECK(cudaMemcpyAsync(g[d].dev_down, g[d].host_up, bytes, cudaMemcpyHostToDevice, g[d].down));
        CHECK(cudaDeviceSynchronize());
    }
    printf("host_links: %d GPU(s), %.2f GB a copy, %d copies a way, best of 3 rounds\n", n, gb, reps);
    static const char *way_name[4] = {"", "host-to-device", "device-to-host", "both ways"};
    for (int used = 1; used <= n; used++) {
        for (int ways = 1; ways <= 3; ways++) {
            double best = 0.0;
            for (int round = 0; round < 3; round++) {
                pthread_t thread[MAX_GPUS];
                if (pthread_barrier_init(&start_line, NULL, (unsigned)used) != 0) {
                    fprintf(stderr, "host_links: pthread_barrier_init failed\n");
                    return 1;
                }
                for (int d = 0; d < used; d++) {
                    g[d].ways = ways;
                    if (pthread_create(&thread[d], NULL, round_main, &g[d]) != 0) {
                        fprintf(stderr, "host_links: pthread_create failed\n");
                        return 1;
                    }
                }
                double slowest = 0.0;
                for (int d = 0; d < used; d++) {
                    pthread_join(thread[d], NULL);
                    slowest = g[d].seconds > slowest ? g[d].seconds : slowest;
                }
                pthread_barrier_destroy(&start_line);
                const double moved = (double)used * (double)reps * (double)bytes * (ways == 3 ? 2.0 : 1.0);
                const double rate = moved / slowest / 1e9;
                best = rate > best ? rate : best;
            }
            printf("gpus=%d way=%-14s %8.1f GB/s in all, %7.1f GB/s a GPU\n", used, way_name[ways], best,
                   best / used);
            fflush(stdout);
        }
    }
    for (int d = 0; d < n; d++) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaHostUnregister(g[d].host_up));
        CHECK(cudaHostUnregister(g[d].host_down));
        free(g[d].host_up);
        free(g[d].host_down);
        CHECK(cudaFree(g[d].dev_up));
        CHECK(cudaFree(g[d].dev_down));
        CHECK(cudaStreamDestroy(g[d].up));
        CHECK(cudaStreamDestroy(g[d].down));
    }
    return 0;
}
