/* Himeno benchmark: Jacobi iteration for the pressure Poisson equation of an
 * incompressible flow solver, written the way RIKEN's static-allocation C
 * version (himenobmtxps.c) is: static float arrays, coefficient arrays with a
 * leading component dimension (a[4][..][..][..], b[3], c[3]) indexed
 * a[0][i][j][k], run-time bounds imax/jmax/kmax, and jacobi(nn) returning
 * gosa, the sum of squared residuals of the last step.
 *
 * Differences from the original, all outside the computation: the step count
 * is the first argument instead of being calibrated from a timed run, nothing
 * is timed (the output is deterministic), and a checksum of p is printed.
 *
 * Sizes (one of them may be defined; the default is SSMALL):
 *
 *     -DXSMALL   17 x  17 x   33   tiny, for tests
 *     -DSSMALL   33 x  33 x   65
 *     -DSMALL    65 x  65 x  129   S
 *     -DMIDDLE  129 x 129 x  257   M
 *     -DLARGE   257 x 257 x  513   L   (1.9 GB of static arrays)
 *     -DELARGE  513 x 513 x 1025   XL  (15 GB: link with -mcmodel=medium)
 *
 * or -DMIMAX=.. -DMJMAX=.. -DMKMAX=.. directly. The tpace paper (Table 1)
 * ran 512 x 512 x 1024, 14 arrays of float, 15.0 GB.
 *
 * Flops per grid point and step (the benchmark's own count, fflop(): 34):
 *     s0:               9 products (3 a*p, 3 b*(..), 3 c*p)
 *                       + 3 x 3 add/sub inside the b brackets
 *                       + 9 add joining the 10 terms (9 products, wrk1) = 27
 *     ss:               (s0*a3 - p)*bnd                                =  3
 *     gosa += ss*ss                                                    =  2
 *     wrk2 = p + omega*ss                                              =  2
 *                                                                     = 34
 * The copy-back sweep p = wrk2 has no flops.
 *
 * Float throughout, as the original: 14 arrays (a x4, b x3, c x3, p, bnd,
 * wrk1, wrk2); gosa and the update are float too.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(XSMALL)
#define MIMAX 17
#define MJMAX 17
#define MKMAX 33
#elif defined(SMALL)
#define MIMAX 65
#define MJMAX 65
#define MKMAX 129
#elif defined(MIDDLE)
#define MIMAX 129
#define MJMAX 129
#define MKMAX 257
#elif defined(LARGE)
#define MIMAX 257
#define MJMAX 257
#define MKMAX 513
#elif defined(ELARGE)
#define MIMAX 513
#define MJMAX 513
#define MKMAX 1025
#endif
/* SSMALL, the default. */
#ifndef MIMAX
#define MIMAX 33
#endif
#ifndef MJMAX
#define MJMAX 33
#endif
#ifndef MKMAX
#define MKMAX 65
#endif
#ifndef STEPS
#define STEPS 20
#endif

static float p[MIMAX][MJMAX][MKMAX];
static float a[4][MIMAX][MJMAX][MKMAX],
             b[3][MIMAX][MJMAX][MKMAX],
             c[3][MIMAX][MJMAX][MKMAX];
static float bnd[MIMAX][MJMAX][MKMAX];
static float wrk1[MIMAX][MJMAX][MKMAX],
             wrk2[MIMAX][MJMAX][MKMAX];

static int imax, jmax, kmax;
static float omega;

static void initmt(void);
static float jacobi(int nn);

int main(int argc, char **argv)
{
    int nn = argc > 1 ? atoi(argv[1]) : STEPS;
    float gosa;

    omega = 0.8f;
    imax = MIMAX - 1;
    jmax = MJMAX - 1;
    kmax = MKMAX - 1;

    initmt();
    printf("mimax = %d mjmax = %d mkmax = %d\n", MIMAX, MJMAX, MKMAX);
    printf("imax = %d jmax = %d kmax = %d\n", imax, jmax, kmax);

    gosa = jacobi(nn);

    double s = 0.0;
    for (int i = 0; i < MIMAX; i++)
        for (int j = 0; j < MJMAX; j++)
            for (int k = 0; k < MKMAX; k++)
                s += p[i][j][k] * (double)((i + 2 * j + 3 * k) % 7 + 1);
    printf("himeno %dx%dx%d, %d steps: gosa %.9e checksum %.9e\n",
           MIMAX, MJMAX, MKMAX, nn, (double)gosa, s);
    return 0;
}

/* As the original: everything zero, then the coefficients of the 19-point
 * Poisson operator on the first imax x jmax x kmax points and p growing
 * quadratically along i. The last plane of each dimension stays zero. */
static void initmt(void)
{
    int i, j, k;

    for (i = 0; i < MIMAX; i++)
        for (j = 0; j < MJMAX; j++)
            for (k = 0; k < MKMAX; k++) {
                a[0][i][j][k] = 0.0f;
                a[1][i][j][k] = 0.0f;
                a[2][i][j][k] = 0.0f;
                a[3][i][j][k] = 0.0f;
                b[0][i][j][k] = 0.0f;
                b[1][i][j][k] = 0.0f;
                b[2][i][j][k] = 0.0f;
                c[0][i][j][k] = 0.0f;
                c[1][i][j][k] = 0.0f;
                c[2][i][j][k] = 0.0f;
                p[i][j][k] = 0.0f;
                wrk1[i][j][k] = 0.0f;
                bnd[i][j][k] = 0.0f;
            }

    for (i = 0; i < imax; i++)
        for (j = 0; j < jmax; j++)
            for (k = 0; k < kmax; k++) {
                a[0][i][j][k] = 1.0f;
                a[1][i][j][k] = 1.0f;
                a[2][i][j][k] = 1.0f;
                a[3][i][j][k] = (float)(1.0 / 6.0);
                b[0][i][j][k] = 0.0f;
                b[1][i][j][k] = 0.0f;
                b[2][i][j][k] = 0.0f;
                c[0][i][j][k] = 1.0f;
                c[1][i][j][k] = 1.0f;
                c[2][i][j][k] = 1.0f;
                p[i][j][k] = (float)(i * i) / (float)((imax - 1) * (imax - 1));
                wrk1[i][j][k] = 0.0f;
                bnd[i][j][k] = 1.0f;
            }
}

static float jacobi(int nn)
{
    int i, j, k, n;
    float gosa = 0.0f, s0, ss;

#pragma tpace init

#pragma tpace pipeline targetinout(p, wrk2) targetin(a, b, c, wrk1, bnd) size([0:MIMAX][0:MJMAX][0:MKMAX]) halo([1:1][1:1][1:1]) async
    for (n = 0; n < nn; ++n) {
        gosa = 0.0f;

#pragma tpace loop dim(3)
        for (i = 1; i < imax - 1; i++) {
#pragma tpace loop dim(2)
            for (j = 1; j < jmax - 1; j++) {
#pragma tpace loop dim(1)
                for (k = 1; k < kmax - 1; k++) {
                    s0 = a[0][i][j][k] * p[i + 1][j][k]
                       + a[1][i][j][k] * p[i][j + 1][k]
                       + a[2][i][j][k] * p[i][j][k + 1]
                       + b[0][i][j][k] * (p[i + 1][j + 1][k] - p[i + 1][j - 1][k]
                                        - p[i - 1][j + 1][k] + p[i - 1][j - 1][k])
                       + b[1][i][j][k] * (p[i][j + 1][k + 1] - p[i][j - 1][k + 1]
                                        - p[i][j + 1][k - 1] + p[i][j - 1][k - 1])
                       + b[2][i][j][k] * (p[i + 1][j][k + 1] - p[i - 1][j][k + 1]
                                        - p[i + 1][j][k - 1] + p[i - 1][j][k - 1])
                       + c[0][i][j][k] * p[i - 1][j][k]
                       + c[1][i][j][k] * p[i][j - 1][k]
                       + c[2][i][j][k] * p[i][j][k - 1]
                       + wrk1[i][j][k];

                    ss = (s0 * a[3][i][j][k] - p[i][j][k]) * bnd[i][j][k];

                    gosa += ss * ss;

                    wrk2[i][j][k] = p[i][j][k] + omega * ss;
                }
            }
        }

#pragma tpace loop dim(3)
        for (i = 1; i < imax - 1; ++i) {
#pragma tpace loop dim(2)
            for (j = 1; j < jmax - 1; ++j) {
#pragma tpace loop dim(1)
                for (k = 1; k < kmax - 1; ++k) {
                    p[i][j][k] = wrk2[i][j][k];
                }
            }
        }
    } /* end n loop */

    return gosa;
}
