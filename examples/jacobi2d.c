/* Jacobi-2D: the tpace paper's Fig. 2 as a whole program.
 *
 * Five-point Jacobi relaxation on an X x Y grid with fixed boundary values.
 * Build and run it as plain C (the pragmas are ignored), or let tpace turn it
 * into an out-of-core accelerator program:
 *
 *     tpace run examples/jacobi2d.c
 *
 * The step count is the first argument (default STEPS).
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef X
#define X 1000
#endif
#ifndef Y
#define Y 600
#endif
#ifndef STEPS
#define STEPS 50
#endif

static float a[X][Y];
static float work[X][Y];

static void init(void)
{
    for (int x = 0; x < X; x++)
        for (int y = 0; y < Y; y++) {
            /* An irregular start so that every cell carries information. */
            a[x][y] = (float)((x * 37 + y * 11) % 101) / 7.0f;
            work[x][y] = 0.0f;
        }
}

static double checksum(void)
{
    double s = 0.0;
    for (int x = 0; x < X; x++)
        for (int y = 0; y < Y; y++)
            s += a[x][y] * (double)((x + 2 * y) % 7 + 1);
    return s;
}

int main(int argc, char **argv)
{
    int n, x, y;
    int steps = argc > 1 ? atoi(argv[1]) : STEPS;

    init();

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

    printf("jacobi2d %dx%d, %d steps: checksum %.9e\n", X, Y, steps, checksum());
    return 0;
}
