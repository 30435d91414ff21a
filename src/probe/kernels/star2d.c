/* tpace probe, shape class 2d-r2: a 9-point star of radius 2 (a wider halo), written
 * into a temporary and copied back (which tpace runs as a swap), on REAL arrays of
 * X x Y. `tpace probe` fills in REAL, X and Y, translates it to CUDA and times its
 * kernels. The step count is the first argument. */
#include <stdio.h>
#include <stdlib.h>

#define X @X@
#define Y @Y@

int main(int argc, char **argv)
{
    int n, x, y;
    int steps = argc > 1 ? atoi(argv[1]) : 4;
    const REAL c0 = (REAL)0.5, c1 = (REAL)0.1, c2 = (REAL)0.025;
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

#pragma tpace pipeline targetinout(work, a) size([0:X][0:Y]) halo([2:2][2:2]) async
    for (n = 0; n < steps; n++) {
#pragma tpace loop dim(2)
        for (x = 2; x < X - 2; x++) {
#pragma tpace loop dim(1)
            for (y = 2; y < Y - 2; y++) {
                work[x][y] = c0 * a[x][y]
                           + c1 * (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1])
                           + c2 * (a[x - 2][y] + a[x + 2][y] + a[x][y - 2] + a[x][y + 2]);
            }
        }
#pragma tpace loop dim(2)
        for (x = 2; x < X - 2; x++) {
#pragma tpace loop dim(1)
            for (y = 2; y < Y - 2; y++) {
                a[x][y] = work[x][y];
            }
        }
    }

    double s = 0.0;
    /* Every 16th row: the checksum only shows that the run computed (the probe's time is the GPU's). */
    for (x = 0; x < X; x += 16)
        for (y = 0; y < Y; y++)
            s += a[x][y] * (double)((x + 2 * y) % 7 + 1);
    printf("probe 2d-r2 %dx%d, %d steps: checksum %.9e\n", X, Y, steps, s);
    free(a);
    free(work);
    return 0;
}
