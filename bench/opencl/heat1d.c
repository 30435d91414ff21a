/* Heat-1D of the stencil-directives paper (Table 5: float, 4194304 points,
 * 4 flops a point): B = C0 A + C1 (left + right), then A = B, as its Fig. 5
 * writes the 3-D case, here with tpace's directives. bench/gpu.sh (part opencl)
 * tunes its OpenCL translation. The step count is the first argument.
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef NX
#define NX 4194304
#endif
#ifndef STEPS
#define STEPS 100
#endif
#define C_0 0.5f
#define C_1 0.25f

int main(int argc, char **argv)
{
    int t, i;
    const int steps = argc > 1 ? atoi(argv[1]) : STEPS;
    float *A = (float *)malloc(sizeof(float) * NX);
    float *B = (float *)malloc(sizeof(float) * NX);
    if (A == NULL || B == NULL) {
        fprintf(stderr, "heat1d: out of memory\n");
        return 1;
    }
    for (i = 0; i < NX; i++) {
        A[i] = (float)(((unsigned)i * 7919u + 13u) % 1009u) / 97.0f;
        B[i] = A[i];
    }
#pragma tpace pipeline targetinout(B, A) size([0:NX]) halo([1:1]) async
    for (t = 0; t < steps; t++) {
#pragma tpace loop dim(1)
        for (i = 1; i < NX - 1; i++)
            B[i] = C_0 * A[i] + C_1 * (A[i - 1] + A[i + 1]);
#pragma tpace loop dim(1)
        for (i = 1; i < NX - 1; i++)
            A[i] = B[i];
    }
    double s = 0.0;
    for (i = 0; i < NX; i++)
        s += A[i] * (double)(i % 5 + 1);
    printf("heat1d %d points, %d steps: checksum %.9e\n", NX, steps, s);
    free(A);
    free(B);
    return 0;
}
