/* tpace probe, shape class 2d-r1: Jacobi-2D as examples/jacobi2d.c computes it (a
 * 5-point sweep into a temporary and a copy back, which tpace runs as a swap), on
 * REAL arrays of X x Y. `tpace probe` fills in REAL, X and Y, translates it to CUDA
 * and times its kernels. The step count is the first argument. */
#include <stdio.h>
#include <stdlib.h>

#define X @X@
#define Y @Y@

int main(int argc, char **argv)
{
    int n, x, y;
    int steps = argc > 1 ? atoi(argv[1]) : 4;
    REAL (*a)[Y] = (REAL (*)[Y])malloc(sizeof(REAL[X][Y]));
    REAL (*work)[Y] = (REAL (*)[Y])malloc(sizeof(REAL[X][Y]));
    if (a == NULL || work == NULL) {
        fprintf(stderr, "probe: out of memory\n");
        return 1;
    }
    for (x = 0; x < X; x++)
        for (y = 0; y < Y; y++) {
            a[x][y] = (REAL)((x * 37 + y * 11) % 101) / 7;
            work[x][y] = 0;
        }

#pragma tpace init

#pragma tpace pipeline targetinout(work, a) size([0:X][0:Y]) halo([1:1][1:1]) async
    for (n = 0; n < steps; n++) {
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++) {
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++) {
                work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0;
            }
        }
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++) {
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++) {
                a[x][y] = work[x][y];
            }
        }
    }

    double s = 0.0;
    /* Every 16th row: the checksum only shows that the run computed (the probe's time is the GPU's). */
    for (x = 0; x < X; x += 16)
        for (y = 0; y < Y; y++)
            s += a[x][y] * (double)((x + 2 * y) % 7 + 1);
    printf("probe 2d-r1 %dx%d, %d steps: checksum %.9e\n", X, Y, steps, s);
    free(a);
    free(work);
    return 0;
}
