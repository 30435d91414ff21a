/* FDTD-2D: the finite-difference time-domain method for Maxwell's equations
 * in 2-D (TE mode), as PolyBench's fdtd-2d: electric fields ex, ey and the
 * magnetic field hz on a staggered (Yee) grid of NX x NY cells.
 *
 * A step is four sweeps over boxes that differ by one cell:
 *   ey[0][j]  = fict[t]                                  j in [0, NY)      (source row)
 *   ey[i][j] -= 0.5 (hz[i][j] - hz[i-1][j])              i in [1, NX), j in [0, NY)
 *   ex[i][j] -= 0.5 (hz[i][j] - hz[i][j-1])              i in [0, NX), j in [1, NY)
 *   hz[i][j] -= 0.7 (ex[i][j+1] - ex[i][j]
 *                    + ey[i+1][j] - ey[i][j])            i in [0, NX-1), j in [0, NY-1)
 * The first is a 1-D sweep of a 2-D grid whose value is read from the
 * per-step source array fict at the time index. Every sweep updates its array
 * in place: it reads the written array only at offset 0.
 *
 * Flops per grid point and step: ey 3, ex 3, hz 5 = 11 (the source row has
 * none).
 *
 * Double, deliberately: it is PolyBench's default DATA_TYPE, and with the
 * same sizes, step count and initialisation the arrays here are PolyBench's
 * fdtd-2d arrays.
 *
 * The step count is the first argument (default STEPS).
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef NX
#define NX 500
#endif
#ifndef NY
#define NY 600
#endif
#ifndef STEPS
#define STEPS 50
#endif

int main(int argc, char **argv)
{
    int t, i, j;
    int steps = argc > 1 ? atoi(argv[1]) : STEPS;
    double (*ex)[NY] = (double (*)[NY])malloc(sizeof(double[NX][NY]));
    double (*ey)[NY] = (double (*)[NY])malloc(sizeof(double[NX][NY]));
    double (*hz)[NY] = (double (*)[NY])malloc(sizeof(double[NX][NY]));
    /* One source value per step, however many steps are asked for. */
    double *fict = (double *)malloc((steps > 0 ? steps : 1) * sizeof *fict);
    if (ex == NULL || ey == NULL || hz == NULL || fict == NULL) {
        fprintf(stderr, "fdtd2d: out of memory\n");
        return 1;
    }

    /* PolyBench's init_array. */
    for (t = 0; t < steps; t++)
        fict[t] = (double)t;
    for (i = 0; i < NX; i++)
        for (j = 0; j < NY; j++) {
            ex[i][j] = ((double)i * (j + 1)) / NX;
            ey[i][j] = ((double)i * (j + 2)) / NY;
            hz[i][j] = ((double)i * (j + 3)) / NX;
        }

#pragma tpace init

#pragma tpace pipeline targetinout(ex, ey, hz) size([0:NX][0:NY]) halo([1:1][1:1]) async
    for (t = 0; t < steps; t++) {
#pragma tpace loop dim(1)
        for (j = 0; j < NY; j++) {
            ey[0][j] = fict[t];
        }
#pragma tpace loop dim(2)
        for (i = 1; i < NX; i++) {
#pragma tpace loop dim(1)
            for (j = 0; j < NY; j++) {
                ey[i][j] = ey[i][j] - 0.5 * (hz[i][j] - hz[i - 1][j]);
            }
        }
#pragma tpace loop dim(2)
        for (i = 0; i < NX; i++) {
#pragma tpace loop dim(1)
            for (j = 1; j < NY; j++) {
                ex[i][j] = ex[i][j] - 0.5 * (hz[i][j] - hz[i][j - 1]);
            }
        }
#pragma tpace loop dim(2)
        for (i = 0; i < NX - 1; i++) {
#pragma tpace loop dim(1)
            for (j = 0; j < NY - 1; j++) {
                hz[i][j] = hz[i][j] - 0.7 * (ex[i][j + 1] - ex[i][j]
                                             + ey[i + 1][j] - ey[i][j]);
            }
        }
    }

    double s = 0.0;
    for (i = 0; i < NX; i++)
        for (j = 0; j < NY; j++)
            s += (ex[i][j] + 2.0 * ey[i][j] + 3.0 * hz[i][j]) * (double)((i + 2 * j) % 7 + 1);
    printf("fdtd2d %dx%d, %d steps: checksum %.15e\n", NX, NY, steps, s);
    free(ex);
    free(ey);
    free(hz);
    free(fict);
    return 0;
}
