/* Heat-2D of the stencil-directives paper (Table 5: float, 2048 x 2048, 6 flops
 * a point): B = C0 A + C1 (four neighbours), then A = B, as its Fig. 5 writes the
 * 3-D case, here with tpace's directives. bench/gpu.sh (part opencl) tunes its
 * OpenCL translation. The step count is the first argument.
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef NY
#define NY 2048
#endif
#ifndef NX
#define NX 2048
#endif
#ifndef STEPS
#define STEPS 100
#endif
#define C_0 0.5f
#define C_1 0.125f

int main(int argc, char **argv)
{
    int t, i, j;
    const int steps = argc > 1 ? atoi(argv[1]) : STEPS;
    float (*A)[NX] = (float (*)[NX])malloc(sizeof(float[NY][NX]));
    float (*B)[NX] = (float (*)[NX])malloc(sizeof(float[NY][NX]));
    if (A == NULL || B == NULL) {
        fprintf(stderr, "heat2d: out of memory\n");
        return 1;
    }
    for (i = 0; i < NY; i++)
        for (j = 0; j < NX; j++) {
            A[i][j] = (float)((i * 31 + j * 17) % 113) / 11.0f;
            B[i][j] = A[i][j];
        }
#pragma tpace pipeline targetinout(B, A) size([0:NY][0:NX]) halo([1:1][1:1]) async
    for (t = 0; t < steps; t++) {
#pragma tpace loop dim(2)
        for (i = 1; i < NY - 1; i++)
#pragma tpace loop dim(1)
            for (j = 1; j < NX - 1; j++)
                B[i][j] = C_0 * A[i][j] + C_1 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
#pragma tpace loop dim(2)
        for (i = 1; i < NY - 1; i++)
#pragma tpace loop dim(1)
            for (j = 1; j < NX - 1; j++)
                A[i][j] = B[i][j];
    }
    double s = 0.0;
    for (i = 0; i < NY; i++)
        for (j = 0; j < NX; j++)
            s += A[i][j] * (double)((i + 2 * j) % 7 + 1);
    printf("heat2d %dx%d, %d steps: checksum %.9e\n", NY, NX, steps, s);
    free(A);
    free(B);
    return 0;
}
