/* Heat-1D: explicit 1-D heat diffusion, a 3-point stencil on a flat heap array.
 *
 *     u'[i] = u[i] + R * (u[i-1] - 2 u[i] + u[i+1])
 *
 * on N points with fixed values at both ends. The arrays are plain
 * `double *` from malloc, subscripted directly. Build and run it as plain C
 * (the pragmas are ignored), or let tpace make it out-of-core:
 *
 *     tpace run examples/heat1d.c
 *
 * The step count is the first argument (default STEPS).
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef N
#define N 200000
#endif
#ifndef STEPS
#define STEPS 100
#endif
/* Diffusion number alpha * dt / dx^2; at most 0.5 for stability. */
#define R 0.25

int main(int argc, char **argv)
{
    int n, i;
    int steps = argc > 1 ? atoi(argv[1]) : STEPS;
    double *u = (double *)malloc(N * sizeof *u); /* cast: valid C and C++ (the CUDA target) */
    double *un = (double *)malloc(N * sizeof *un);
    if (u == NULL || un == NULL) {
        fprintf(stderr, "heat1d: out of memory\n");
        return 1;
    }

    /* An irregular start so that every point carries information; the two
     * ends are held at fixed temperatures. */
    for (i = 0; i < N; i++) {
        u[i] = (double)((i * 7919 + 13) % 1009) / 97.0;
        un[i] = 0.0;
    }
    u[0] = 10.0;
    u[N - 1] = -5.0;
    un[0] = u[0];
    un[N - 1] = u[N - 1];

#pragma tpace init

#pragma tpace pipeline targetinout(un, u) size([0:N]) halo([1:1]) async
    for (n = 0; n < steps; n++) {
#pragma tpace loop dim(1)
        for (i = 1; i < N - 1; i++) {
            un[i] = u[i] + R * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
#pragma tpace loop dim(1)
        for (i = 1; i < N - 1; i++) {
            u[i] = un[i];
        }
    }

    double s = 0.0;
    for (i = 0; i < N; i++)
        s += u[i] * (double)(i % 5 + 1);
    printf("heat1d %d points, %d steps: checksum %.15e\n", N, steps, s);
    free(u);
    free(un);
    return 0;
}
