/* tpace probe --mpi: what one exchange of ghost planes costs between two MPI ranks
 * (run with mpirun -np 2, on the two nodes or devices you mean to use). Both ranks
 * send and receive at once, as neighbours do at the start of every block; the rate
 * is the bytes one rank receives over the time, best of REPS after a warm-up, and the
 * latency that of an 8-byte exchange. Rank 0 prints `key=value` lines. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define REPS 5

static void check(int err, const char *call)
{
    if (err != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, text, &len);
        fprintf(stderr, "tpace probe: %s failed: %s\n", call, text);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Best seconds of an exchange of `bytes` with the other rank. */
static double exchange(char *out, char *in, size_t bytes, int peer)
{
    double best = 1e30;
    for (int r = 0; r <= REPS; r++) {
        check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        const double t0 = MPI_Wtime();
        check(MPI_Sendrecv(out, (int)bytes, MPI_BYTE, peer, 3, in, (int)bytes, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
        const double t = MPI_Wtime() - t0;
        if (r > 0 && t < best)
            best = t;
    }
    return best;
}

int main(int argc, char **argv)
{
    check(MPI_Init(&argc, &argv), "MPI_Init");
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    int rank = 0, size = 0;
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "tpace probe: the exchange probe runs on exactly 2 ranks (mpirun -np 2), not %d\n", size);
        MPI_Finalize();
        return 2;
    }
    size_t bytes = argc > 1 ? (size_t)strtod(argv[1], NULL) : (size_t)64 << 20;
    if (bytes > (size_t)1 << 30)
        bytes = (size_t)1 << 30;
    char *out = malloc(bytes), *in = malloc(bytes);
    if (out == NULL || in == NULL) {
        fprintf(stderr, "tpace probe: cannot allocate %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = 0; i < bytes; i++)
        out[i] = (char)i;
    const int peer = 1 - rank;
    const double latency = exchange(out, in, 8, peer);
    const double big = exchange(out, in, bytes, peer);
    if (rank == 0) {
        printf("exchange_bytes=%zu\n", bytes);
        printf("exchange_gbs=%.3f\n", (double)bytes / big / 1e9);
        printf("exchange_latency_us=%.3f\n", latency * 1e6);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
