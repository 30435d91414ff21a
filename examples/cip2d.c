/* CIP-2D: advection of a profile f by the CIP (constrained interpolation
 * profile) scheme of Yabe et al., the tpace paper's third test code.
 *
 *     f_t  + u f_x  + v f_y  = 0
 *     gx_t + u gx_x + v gx_y = -gx u_x - gy v_x      (gx = f_x)
 *     gy_t + u gy_x + v gy_y = -gx u_y - gy v_y      (gy = f_y)
 *
 * on the unit square, NX x NY points (i along x, j along y), with the
 * velocity of a solid-body rotation about the centre, constant in time:
 * u = -OMEGA (y - 1/2), v = OMEGA (x - 1/2). The start is a Gaussian hill
 * off the centre, with its exact derivatives.
 *
 * A step is three sweeps over the interior (the boundary values stay fixed):
 *   1. advection: at each point the cubic F(X, Y) = sum over m + n <= 3 of
 *      C_mn X^m Y^n that matches f, gx, gy at the point and at its upwind
 *      neighbours (i-1 or i+1 after the sign of u, j-1 or j+1 after the sign
 *      of v, and the diagonal one for f) is evaluated, with its
 *      derivatives, at the departure point (-u dt, -v dt): fn, gxn, gyn;
 *   2. the non-advective terms of the derivative equations (centred
 *      differences of u and v), written back into gx and gy;
 *   3. the copy-back f = fn.
 *
 * Flops per grid point and step (additions, subtractions, multiplications;
 * the upwind choices are comparisons and selects, not counted):
 *   sweep 1: departure point 2, coefficients 39, F 18, F_x 12, F_y 12 = 83
 *   sweep 2: 7 for gx, 7 for gy                                       = 14
 *   sweep 3: copy                                                     =  0
 *                                                                     = 97
 * (the tpace paper counts 91 for its CIP code, Table 1).
 *
 * Float, deliberately: the paper's CIP runs are 8 float arrays (Table 1:
 * 22000 x 22000 x 8 arrays = 15.5 GB, 12 bytes written per point = fn, gxn,
 * gyn in float). The arrays are f, gx, gy, fn, gxn, gyn, u, v.
 *
 * The step count is the first argument (default STEPS).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef NX
#define NX 200
#endif
#ifndef NY
#define NY 160
#endif
#ifndef STEPS
#define STEPS 40
#endif
/* Angular velocity: one turn per unit time. */
#define OMEGA 6.283185307179586
/* Courant number at the corners, where the speed is largest. */
#define COURANT 0.4

int main(int argc, char **argv)
{
    int t, i, j;
    int steps = argc > 1 ? atoi(argv[1]) : STEPS;
    float (*f)[NY] = (float (*)[NY])malloc(sizeof(float[NX][NY]));
    float (*gx)[NY] = (float (*)[NY])malloc(sizeof(float[NX][NY]));
    float (*gy)[NY] = (float (*)[NY])malloc(sizeof(float[NX][NY]));
    float (*fn)[NY] = (float (*)[NY])malloc(sizeof(float[NX][NY]));
    float (*gxn)[NY] = (float (*)[NY])malloc(sizeof(float[NX][NY]));
    float (*gyn)[NY] = (float (*)[NY])malloc(sizeof(float[NX][NY]));
    float (*u)[NY] = (float (*)[NY])malloc(sizeof(float[NX][NY]));
    float (*v)[NY] = (float (*)[NY])malloc(sizeof(float[NX][NY]));
    if (f == NULL || gx == NULL || gy == NULL || fn == NULL || gxn == NULL
        || gyn == NULL || u == NULL || v == NULL) {
        fprintf(stderr, "cip2d: out of memory\n");
        return 1;
    }

    /* Grid spacing, time step and the constants the sweeps use, computed
     * once in double and rounded to float. */
    const double hx = 1.0 / (NX - 1), hy = 1.0 / (NY - 1);
    const double h = hx < hy ? hx : hy;
    const double ddt = COURANT * h / (OMEGA * sqrt(0.5));
    const float dt = (float)ddt;
    const float dx = (float)hx, dy = (float)hy;
    const float rdx2 = (float)(1.0 / (hx * hx)), rdy2 = (float)(1.0 / (hy * hy));
    const float rdx3 = (float)(1.0 / (hx * hx * hx)), rdy3 = (float)(1.0 / (hy * hy * hy));
    const float rdxy = (float)(1.0 / (hx * hy));
    const float hdtdx = (float)(0.5 * ddt / hx), hdtdy = (float)(0.5 * ddt / hy);

    /* A Gaussian hill of width 0.08 centred at (1/2, 3/4), its exact
     * derivatives, and the rotation. The new arrays start as copies so that
     * every cell of every array is defined. */
    for (i = 0; i < NX; i++)
        for (j = 0; j < NY; j++) {
            const double x = i * hx, y = j * hy;
            const double s2 = 0.08 * 0.08;
            const double e = exp(-((x - 0.5) * (x - 0.5) + (y - 0.75) * (y - 0.75)) / s2);
            f[i][j] = (float)e;
            gx[i][j] = (float)(-2.0 * (x - 0.5) / s2 * e);
            gy[i][j] = (float)(-2.0 * (y - 0.75) / s2 * e);
            fn[i][j] = f[i][j];
            gxn[i][j] = gx[i][j];
            gyn[i][j] = gy[i][j];
            u[i][j] = (float)(-OMEGA * (y - 0.5));
            v[i][j] = (float)(OMEGA * (x - 0.5));
        }

#pragma tpace init

#pragma tpace pipeline targetinout(f, gx, gy, fn, gxn, gyn) targetin(u, v) size([0:NX][0:NY]) halo([1:1][1:1]) async
    for (t = 0; t < steps; t++) {
        /* 1. Advection. The upwind neighbour along x is i-1 where u >= 0 and
         * i+1 where u < 0; xd is its offset, rx3 = 1/xd^3 (rx2 = 1/xd^2 has
         * no sign); likewise along y. */
#pragma tpace loop dim(2)
        for (i = 1; i < NX - 1; i++) {
#pragma tpace loop dim(1)
            for (j = 1; j < NY - 1; j++) {
                const float uu = u[i][j], vv = v[i][j];
                const float xd = uu >= 0.0f ? -dx : dx;
                const float yd = vv >= 0.0f ? -dy : dy;
                const float rx3 = uu >= 0.0f ? -rdx3 : rdx3;
                const float ry3 = vv >= 0.0f ? -rdy3 : rdy3;
                const float rxy = (uu >= 0.0f) == (vv >= 0.0f) ? rdxy : -rdxy;

                /* Values at the point (0), the x-upwind point (1), the
                 * y-upwind point (2) and the diagonal upwind point (3). */
                const float f0 = f[i][j], gx0 = gx[i][j], gy0 = gy[i][j];
                const float f1 = uu >= 0.0f ? f[i - 1][j] : f[i + 1][j];
                const float gx1 = uu >= 0.0f ? gx[i - 1][j] : gx[i + 1][j];
                const float gy1 = uu >= 0.0f ? gy[i - 1][j] : gy[i + 1][j];
                const float f2 = vv >= 0.0f ? f[i][j - 1] : f[i][j + 1];
                const float gx2 = vv >= 0.0f ? gx[i][j - 1] : gx[i][j + 1];
                const float gy2 = vv >= 0.0f ? gy[i][j - 1] : gy[i][j + 1];
                const float f3 = uu >= 0.0f ? (vv >= 0.0f ? f[i - 1][j - 1] : f[i - 1][j + 1])
                                            : (vv >= 0.0f ? f[i + 1][j - 1] : f[i + 1][j + 1]);

                /* The coefficients of F: a1 X^3, b1 Y^3, c1 X^2 Y, d1 X Y^2,
                 * e1 X^2, f1c Y^2, g1 X Y; gx0 X, gy0 Y, f0. */
                const float df1 = f1 - f0, df2 = f2 - f0;
                const float a1 = ((gx0 + gx1) * xd - 2.0f * df1) * rx3;
                const float e1 = (3.0f * df1 - (2.0f * gx0 + gx1) * xd) * rdx2;
                const float b1 = ((gy0 + gy2) * yd - 2.0f * df2) * ry3;
                const float f1c = (3.0f * df2 - (2.0f * gy0 + gy2) * yd) * rdy2;
                const float tmp = f3 - f1 - df2;
                const float dgy = gy1 - gy0, dgx = gx2 - gx0;
                const float g1 = (dgy * yd + dgx * xd - tmp) * rxy;
                const float c1 = (dgy - g1 * xd) * rdx2;
                const float d1 = (dgx - g1 * yd) * rdy2;

                /* F, F_x and F_y at the departure point. */
                const float xx = -uu * dt, yy = -vv * dt;
                fn[i][j] = ((a1 * xx + c1 * yy + e1) * xx + g1 * yy + gx0) * xx
                         + ((b1 * yy + d1 * xx + f1c) * yy + gy0) * yy + f0;
                gxn[i][j] = (3.0f * a1 * xx + 2.0f * (c1 * yy + e1)) * xx
                          + (d1 * yy + g1) * yy + gx0;
                gyn[i][j] = (3.0f * b1 * yy + 2.0f * (d1 * xx + f1c)) * yy
                          + (c1 * xx + g1) * xx + gy0;
            }
        }

        /* 2. Non-advective terms of the derivatives, back into gx and gy. */
#pragma tpace loop dim(2)
        for (i = 1; i < NX - 1; i++) {
#pragma tpace loop dim(1)
            for (j = 1; j < NY - 1; j++) {
                gx[i][j] = gxn[i][j] - hdtdx * (gxn[i][j] * (u[i + 1][j] - u[i - 1][j])
                                              + gyn[i][j] * (v[i + 1][j] - v[i - 1][j]));
                gy[i][j] = gyn[i][j] - hdtdy * (gxn[i][j] * (u[i][j + 1] - u[i][j - 1])
                                              + gyn[i][j] * (v[i][j + 1] - v[i][j - 1]));
            }
        }

        /* 3. Copy-back of the profile. */
#pragma tpace loop dim(2)
        for (i = 1; i < NX - 1; i++) {
#pragma tpace loop dim(1)
            for (j = 1; j < NY - 1; j++) {
                f[i][j] = fn[i][j];
            }
        }
    }

    double sf = 0.0, sgx = 0.0, sgy = 0.0;
    for (i = 0; i < NX; i++)
        for (j = 0; j < NY; j++) {
            const double w = (double)((i + 2 * j) % 7 + 1);
            sf += f[i][j] * w;
            sgx += gx[i][j] * w;
            sgy += gy[i][j] * w;
        }
    printf("cip2d %dx%d, %d steps: checksum f %.9e gx %.9e gy %.9e\n",
           NX, NY, steps, sf, sgx, sgy);
    free(f);
    free(gx);
    free(gy);
    free(fn);
    free(gxn);
    free(gyn);
    free(u);
    free(v);
    return 0;
}
