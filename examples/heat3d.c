/* Heat-3D: explicit 3-D heat diffusion, the classic 7-point stencil,
 * on arrays allocated from the heap as pointers to 2-D rows.
 *
 *     b[i][j][k] = C0 a[i][j][k] + C1 (sum of the six neighbours)
 *
 * on an NX x NY x NZ grid with fixed boundary faces. Build and run it as
 * plain C (the pragmas are ignored), or let tpace make it out-of-core:
 *
 *     tpace run examples/heat3d.c
 *
 * The step count is the first argument (default STEPS).
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef NX
#define NX 96
#endif
#ifndef NY
#define NY 64
#endif
#ifndef NZ
#define NZ 80
#endif
#ifndef STEPS
#define STEPS 40
#endif

int main(int argc, char **argv)
{
    int t, i, j, k;
    int steps = argc > 1 ? atoi(argv[1]) : STEPS;
    const float c0 = 0.4f, c1 = 0.1f;
    float (*a)[NY][NZ] = (float (*)[NY][NZ])malloc(sizeof(float[NX][NY][NZ])); /* cast: valid C and C++ */
    float (*b)[NY][NZ] = (float (*)[NY][NZ])malloc(sizeof(float[NX][NY][NZ]));
    if (a == NULL || b == NULL) {
        fprintf(stderr, "heat3d: out of memory\n");
        return 1;
    }

    /* An irregular start so that every cell carries information; the faces
     * keep their start values in both arrays. */
    for (i = 0; i < NX; i++)
        for (j = 0; j < NY; j++)
            for (k = 0; k < NZ; k++) {
                a[i][j][k] = (float)((i * 31 + j * 17 + k * 7) % 113) / 11.0f;
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
    for (i = 0; i < NX; i++)
        for (j = 0; j < NY; j++)
            for (k = 0; k < NZ; k++)
                s += a[i][j][k] * (double)((i + 2 * j + 3 * k) % 7 + 1);
    printf("heat3d %dx%dx%d, %d steps: checksum %.9e\n", NX, NY, NZ, steps, s);
    free(a);
    free(b);
    return 0;
}
