/* tpace probe, shape class 3d-r1: heat-3D as examples/heat3d.c computes it (a 7-point
 * sweep into b and a copy back, which tpace runs as a swap), on REAL arrays of
 * NX x NY x NZ. `tpace probe` fills in REAL, NX, NY and NZ, translates it to CUDA and
 * times its kernels. The step count is the first argument. */
#include <stdio.h>
#include <stdlib.h>

#define NX @NX@
#define NY @NY@
#define NZ @NZ@

int main(int argc, char **argv)
{
    int t, i, j, k;
    int steps = argc > 1 ? atoi(argv[1]) : 4;
    const REAL c0 = (REAL)0.4, c1 = (REAL)0.1;
    REAL (*a)[NY][NZ] = (REAL (*)[NY][NZ])malloc(sizeof(REAL[NX][NY][NZ]));
    REAL (*b)[NY][NZ] = (REAL (*)[NY][NZ])malloc(sizeof(REAL[NX][NY][NZ]));
    if (a == NULL || b == NULL) {
        fprintf(stderr, "probe: out of memory\n");
        return 1;
    }
    for (i = 0; i < NX; i++)
        for (j = 0; j < NY; j++)
            for (k = 0; k < NZ; k++) {
                a[i][j][k] = (REAL)((i * 31 + j * 17 + k * 7) % 113) / 11;
                b[i][j][k] = a[i][j][k];
            }

#pragma tpace init

#pragma tpace pipeline targetinout(b, a) size([0:NX][0:NY][0:NZ]) halo([1:1][1:1][1:1]) async
    for (t = 0; t < steps; t++) {
#pragma tpace loop dim(3)
        for (i = 1; i < NX - 1; i++) {
#pragma tpace loop dim(2)
            for (j = 1; j < NY - 1; j++) {
#pragma tpace loop dim(1)
                for (k = 1; k < NZ - 1; k++) {
                    b[i][j][k] = c0 * a[i][j][k]
                               + c1 * (a[i - 1][j][k] + a[i + 1][j][k]
                                       + a[i][j - 1][k] + a[i][j + 1][k]
                                       + a[i][j][k - 1] + a[i][j][k + 1]);
                }
            }
        }
#pragma tpace loop dim(3)
        for (i = 1; i < NX - 1; i++) {
#pragma tpace loop dim(2)
            for (j = 1; j < NY - 1; j++) {
#pragma tpace loop dim(1)
                for (k = 1; k < NZ - 1; k++) {
                    a[i][j][k] = b[i][j][k];
                }
            }
        }
    }

    double s = 0.0;
    /* Every 16th plane: the checksum only shows that the run computed (the probe's time is the GPU's). */
    for (i = 0; i < NX; i += 16)
        for (j = 0; j < NY; j++)
            for (k = 0; k < NZ; k++)
                s += a[i][j][k] * (double)((i + 2 * j + 3 * k) % 7 + 1);
    printf("probe 3d-r1 %dx%dx%d, %d steps: checksum %.9e\n", NX, NY, NZ, steps, s);
    free(a);
    free(b);
    return 0;
}
