/* How fast one process can write into another's memory on this host (issue 25: the
 * results of rank 1 to rank 0), against a copy inside one process, by thread count:
 * process_vm_writev (what tpace's node-local copies use) from a forked child into its
 * parent, and memcpy within the parent. Each figure is the best of 3 copies of BYTES.
 * Usage: cma_rate [GB] (default 4). Prints one line per way and thread count. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    char *dst;       /* where this thread writes (the parent's address for CMA) */
    const char *src; /* what it copies */
    size_t bytes;
    pid_t pid;       /* 0: memcpy within this process */
    int failed;
} part;

static void *copy_main(void *arg)
{
    part *p = (part *)arg;
    const size_t piece = (size_t)64 << 20;
    for (size_t at = 0; at < p->bytes; at += piece) {
        const size_t n = p->bytes - at < piece ? p->bytes - at : piece;
        if (p->pid == 0) {
            memcpy(p->dst + at, p->src + at, n);
            continue;
        }
        struct iovec from = {(void *)(p->src + at), n}, to = {p->dst + at, n};
        if (process_vm_writev(p->pid, &from, 1, &to, 1, 0) != (ssize_t)n)
            p->failed = 1;
    }
    return NULL;
}

/* Best seconds of 3 copies of `bytes` on `threads` threads. */
static double timed(char *dst, const char *src, size_t bytes, int threads, pid_t pid, int *failed)
{
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        pthread_t t[64];
        part p[64];
        const size_t each = (bytes / (size_t)threads + 4095) & ~(size_t)4095;
        const double t0 = now();
        for (int i = 0; i < threads; i++) {
            const size_t at = (size_t)i * each < bytes ? (size_t)i * each : bytes;
            p[i] = (part){dst + at, src + at, (bytes - at < each ? bytes - at : each), pid, 0};
            pthread_create(&t[i], NULL, copy_main, &p[i]);
        }
        for (int i = 0; i < threads; i++) {
            pthread_join(t[i], NULL);
            *failed |= p[i].failed;
        }
        const double s = now() - t0;
        best = s < best ? s : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    const double gb = argc > 1 ? atof(argv[1]) : 4.0;
    const size_t bytes = (size_t)(gb * 1e9) & ~(size_t)4095;
    char *target = malloc(bytes), *source = malloc(bytes);
    if (target == NULL || source == NULL)
        return 1;
    memset(target, 1, bytes);
    memset(source, 2, bytes);
    const int counts[] = {1, 2, 4, 8, 16};
    for (int c = 0; c < 5; c++) {
        int failed = 0;
        const double s = timed(target, source, bytes, counts[c], 0, &failed);
        printf("cma_rate: memcpy in one process, %2d threads: %6.1f GB/s\n", counts[c], bytes / s / 1e9);
    }
    fflush(stdout);
    const pid_t parent = getpid();
    const pid_t child = fork();
    if (child == 0) { /* the child writes its copy of `source` into the parent's `target` */
        for (int c = 0; c < 5; c++) {
            int failed = 0;
            const double s = timed(target, source, bytes, counts[c], parent, &failed);
            printf("cma_rate: process_vm_writev into another process, %2d threads: %6.1f GB/s%s\n", counts[c],
                   bytes / s / 1e9, failed ? " (refused)" : "");
        }
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return 0;
}
