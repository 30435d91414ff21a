/* Feasibility probe for in-kernel temporal blocking (MMT, MMTB paper §2.1) on the
 * lent GPU: how fast does one kernel that advances T steps of a tile in on-chip
 * memory run, against one step per kernel, on grids resident in device memory?
 * Jacobi-2D (the example's expression) and heat-3D (7 points), float.
 * Every multi-step result is checked bit for bit against T one-step kernels.
 * Build: nvcc -O3 -arch=sm_90 --fmad=false probe.cu -o probe
 * Run: ./probe (both stencils) or ./probe heat (heat-3D only: its register-blocked
 * tiles, on a resident grid and on one mmtb chunk's worth of planes). */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                           \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

/* ---- Jacobi-2D: out[x][y] = (in[x-1][y] + in[x+1][y] + in[x][y-1] + in[x][y+1]) / 4.0 ---- */
__global__ void jacobi_step(const float *__restrict__ in, float *__restrict__ out, long X, long Y)
{
    long y = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long x = blockIdx.y;
    if (x < 1 || x >= X - 1 || y < 1 || y >= Y - 1)
        return;
    long e = x * Y + y;
    out[e] = (in[e - Y] + in[e + Y] + in[e - 1] + in[e + 1]) / 4.0;
}

/* T steps per launch: a block of BY threads holds BY columns (T on each side are
 * halo, recomputed by the neighbouring block) and streams over a segment of rows;
 * each level keeps the last three rows of its column in registers and shares the
 * middle one through shared memory for the y neighbours. */
template <int T, int BY>
__global__ void __launch_bounds__(BY) jacobi_stream(const float *__restrict__ in, float *__restrict__ out, long X, long Y, long seg)
{
    __shared__ float sh[2][T][BY];
    const int ty = threadIdx.x;
    const long y = (long)blockIdx.x * (BY - 2 * T) + ty - T;
    const long xs = (long)blockIdx.y * seg, xe = xs + seg < X ? xs + seg : X;
    const bool col_in = y >= 0 && y < Y;
    const bool col_box = y >= 1 && y < Y - 1;
    const int tl = ty > 0 ? ty - 1 : ty, tr = ty < BY - 1 ? ty + 1 : ty;
    float v[T + 1][3];
#pragma unroll
    for (int l = 0; l <= T; l++)
        v[l][0] = v[l][1] = v[l][2] = 0.0f;
    long start = xs - T > 0 ? xs - T : 0;
    int par = 0;
    for (long xin = start; xin < xe + T; xin++, par ^= 1) {
        v[0][0] = v[0][1];
        v[0][1] = v[0][2];
        v[0][2] = (xin < X && col_in) ? in[xin * Y + y] : 0.0f;
#pragma unroll
        for (int l = 1; l <= T; l++) {
            const long r = xin - l;
            sh[par][l - 1][ty] = v[l - 1][1];
            __syncthreads();
            float c = v[l - 1][1];
            float nv = (r >= 1 && r < X - 1 && col_box)
                           ? (float)((v[l - 1][0] + v[l - 1][2] + sh[par][l - 1][tl] + sh[par][l - 1][tr]) / 4.0)
                           : c;
            v[l][0] = v[l][1];
            v[l][1] = v[l][2];
            v[l][2] = nv;
        }
        const long r = xin - T;
        if (r >= xs && r >= 1 && r < X - 1 && col_box && ty >= T && ty < BY - T)
            out[r * Y + y] = v[T][2];
    }
}

/* ---- heat-3D: out = c0*in + c1*(six neighbours) ---- */
__global__ void heat_step(const float *__restrict__ in, float *__restrict__ out, long NX, long NY, long NZ, float c0, float c1)
{
    long k = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long j = (long)blockIdx.y * blockDim.y + threadIdx.y;
    long i = blockIdx.z;
    if (i < 1 || i >= NX - 1 || j < 1 || j >= NY - 1 || k < 1 || k >= NZ - 1)
        return;
    long sy = NZ, sx = NY * NZ, e = i * sx + j * sy + k;
    out[e] = c0 * in[e] + c1 * (in[e - sx] + in[e + sx] + in[e - sy] + in[e + sy] + in[e - 1] + in[e + 1]);
}

template <int T, int BZ, int BY>
__global__ void __launch_bounds__(BZ *BY) heat_stream(const float *__restrict__ in, float *__restrict__ out, long NX, long NY, long NZ, long seg, float c0, float c1)
{
    __shared__ float sh[2][T][BY][BZ];
    const int tz = threadIdx.x, ty = threadIdx.y;
    const long k = (long)blockIdx.x * (BZ - 2 * T) + tz - T;
    const long j = (long)blockIdx.y * (BY - 2 * T) + ty - T;
    const long sx = NY * NZ;
    const long xs = (long)blockIdx.z * seg, xe = xs + seg < NX ? xs + seg : NX;
    const bool col_in = k >= 0 && k < NZ && j >= 0 && j < NY;
    const bool col_box = k >= 1 && k < NZ - 1 && j >= 1 && j < NY - 1;
    const int zl = tz > 0 ? tz - 1 : tz, zr = tz < BZ - 1 ? tz + 1 : tz;
    const int yl = ty > 0 ? ty - 1 : ty, yr = ty < BY - 1 ? ty + 1 : ty;
    float v[T + 1][3];
#pragma unroll
    for (int l = 0; l <= T; l++)
        v[l][0] = v[l][1] = v[l][2] = 0.0f;
    long start = xs - T > 0 ? xs - T : 0;
    int par = 0;
    for (long xin = start; xin < xe + T; xin++, par ^= 1) {
        v[0][0] = v[0][1];
        v[0][1] = v[0][2];
        v[0][2] = (xin < NX && col_in) ? in[xin * sx + j * NZ + k] : 0.0f;
#pragma unroll
        for (int l = 1; l <= T; l++) {
            const long r = xin - l;
            sh[par][l - 1][ty][tz] = v[l - 1][1];
            __syncthreads();
            float c = v[l - 1][1];
            float nv = (r >= 1 && r < NX - 1 && col_box)
                           ? c0 * c + c1 * (v[l - 1][0] + v[l - 1][2] + sh[par][l - 1][yl][tz] + sh[par][l - 1][yr][tz] +
                                            sh[par][l - 1][ty][zl] + sh[par][l - 1][ty][zr])
                           : c;
            v[l][0] = v[l][1];
            v[l][1] = v[l][2];
            v[l][2] = nv;
        }
        const long r = xin - T;
        if (r >= xs && r >= 1 && r < NX - 1 && col_box && tz >= T && tz < BZ - T && ty >= T && ty < BY - T)
            out[r * sx + j * NZ + k] = v[T][2];
    }
}

/* Register-blocked variant: a warp spans 32 * CK columns along k (CK per lane; the k
 * neighbours by warp shuffles), each thread holds RY rows along j (the j neighbours in
 * its own registers, only its first and last row go through shared memory), BY warps
 * per block. The tile is (BY * RY) x (32 * CK); T on each side are halo. */
template <int T, int BY, int RY, int CK>
__global__ void __launch_bounds__(32 * BY) heat_rb(const float *__restrict__ in, float *__restrict__ out, long NX, long NY, long NZ, long seg, float c0, float c1)
{
    enum { TJ = BY * RY, TK = 32 * CK };
    __shared__ float edge[2][T][2][BY][CK][32];
    const int lane = threadIdx.x, ty = threadIdx.y;
    const long k0 = (long)blockIdx.x * (TK - 2 * T) - T + lane * CK;
    const long j0 = (long)blockIdx.y * (TJ - 2 * T) - T + ty * RY;
    const long sx = NY * NZ;
    const long xs = (long)blockIdx.z * seg, xe = xs + seg < NX ? xs + seg : NX;
    const int yl = ty > 0 ? ty - 1 : ty, yr = ty < BY - 1 ? ty + 1 : ty;
    float v[T + 1][3][RY][CK];
#pragma unroll
    for (int l = 0; l <= T; l++)
#pragma unroll
        for (int q = 0; q < 3; q++)
#pragma unroll
            for (int r = 0; r < RY; r++)
#pragma unroll
                for (int c = 0; c < CK; c++)
                    v[l][q][r][c] = 0.0f;
    long start = xs - T > 0 ? xs - T : 0;
    int par = 0;
    for (long xin = start; xin < xe + T; xin++, par ^= 1) {
#pragma unroll
        for (int r = 0; r < RY; r++)
#pragma unroll
            for (int c = 0; c < CK; c++) {
                const long j = j0 + r, k = k0 + c;
                v[0][0][r][c] = v[0][1][r][c];
                v[0][1][r][c] = v[0][2][r][c];
                v[0][2][r][c] = (xin < NX && j >= 0 && j < NY && k >= 0 && k < NZ) ? in[xin * sx + j * NZ + k] : 0.0f;
            }
#pragma unroll
        for (int l = 1; l <= T; l++) {
            const long x = xin - l;
#pragma unroll
            for (int c = 0; c < CK; c++) {
                edge[par][l - 1][0][ty][c][lane] = v[l - 1][1][0][c];
                edge[par][l - 1][1][ty][c][lane] = v[l - 1][1][RY - 1][c];
            }
            __syncthreads();
            float nv[RY][CK];
#pragma unroll
            for (int r = 0; r < RY; r++) {
                const float left = __shfl_up_sync(0xffffffffu, v[l - 1][1][r][CK - 1], 1);
                const float right = __shfl_down_sync(0xffffffffu, v[l - 1][1][r][0], 1);
#pragma unroll
                for (int c = 0; c < CK; c++) {
                    const long j = j0 + r, k = k0 + c;
                    const float cen = v[l - 1][1][r][c];
                    const float ym = r > 0 ? v[l - 1][1][r - 1][c] : edge[par][l - 1][1][yl][c][lane];
                    const float yp = r < RY - 1 ? v[l - 1][1][r + 1][c] : edge[par][l - 1][0][yr][c][lane];
                    const float zm = c > 0 ? v[l - 1][1][r][c - 1] : left;
                    const float zp = c < CK - 1 ? v[l - 1][1][r][c + 1] : right;
                    nv[r][c] = (x >= 1 && x < NX - 1 && j >= 1 && j < NY - 1 && k >= 1 && k < NZ - 1)
                                   ? c0 * cen + c1 * (v[l - 1][0][r][c] + v[l - 1][2][r][c] + ym + yp + zm + zp)
                                   : cen;
                }
            }
#pragma unroll
            for (int r = 0; r < RY; r++)
#pragma unroll
                for (int c = 0; c < CK; c++) {
                    v[l][0][r][c] = v[l][1][r][c];
                    v[l][1][r][c] = v[l][2][r][c];
                    v[l][2][r][c] = nv[r][c];
                }
        }
        const long x = xin - T;
        if (x >= xs && x >= 1 && x < NX - 1) {
#pragma unroll
            for (int r = 0; r < RY; r++)
#pragma unroll
                for (int c = 0; c < CK; c++) {
                    const int tj = ty * RY + r, tk = lane * CK + c;
                    const long j = j0 + r, k = k0 + c;
                    if (tj >= T && tj < TJ - T && tk >= T && tk < TK - T && j >= 1 && j < NY - 1 && k >= 1 && k < NZ - 1)
                        out[x * sx + j * NZ + k] = v[T][2][r][c];
                }
        }
    }
}

/* heat_rb with CK = 1 and no shuffles: every thread puts its RY columns of the row
 * into shared memory, and the reads along k (and past a thread's first and last
 * row along j) come from there, behind one barrier per step. */
template <int T, int BY, int RY>
__global__ void __launch_bounds__(32 * BY) heat_rbs(const float *__restrict__ in, float *__restrict__ out, long NX, long NY, long NZ, long seg, float c0, float c1)
{
    enum { TJ = BY * RY, TK = 32 };
    __shared__ float sh[2][T][TJ][TK];
    const int lane = threadIdx.x, ty = threadIdx.y;
    const long k = (long)blockIdx.x * (TK - 2 * T) - T + lane;
    const long j0 = (long)blockIdx.y * (TJ - 2 * T) - T + ty * RY;
    const long sx = NY * NZ;
    const long xs = (long)blockIdx.z * seg, xe = xs + seg < NX ? xs + seg : NX;
    const int zl = lane > 0 ? lane - 1 : lane, zr = lane < TK - 1 ? lane + 1 : lane;
    float v[T + 1][3][RY];
#pragma unroll
    for (int l = 0; l <= T; l++)
#pragma unroll
        for (int q = 0; q < 3; q++)
#pragma unroll
            for (int r = 0; r < RY; r++)
                v[l][q][r] = 0.0f;
    long start = xs - T > 0 ? xs - T : 0;
    int par = 0;
    for (long xin = start; xin < xe + T; xin++, par ^= 1) {
#pragma unroll
        for (int r = 0; r < RY; r++) {
            const long j = j0 + r;
            v[0][0][r] = v[0][1][r];
            v[0][1][r] = v[0][2][r];
            v[0][2][r] = (xin < NX && j >= 0 && j < NY && k >= 0 && k < NZ) ? in[xin * sx + j * NZ + k] : 0.0f;
        }
#pragma unroll
        for (int l = 1; l <= T; l++) {
            const long x = xin - l;
#pragma unroll
            for (int r = 0; r < RY; r++)
                sh[par][l - 1][ty * RY + r][lane] = v[l - 1][1][r];
            __syncthreads();
            float nv[RY];
#pragma unroll
            for (int r = 0; r < RY; r++) {
                const int tj = ty * RY + r;
                const long j = j0 + r;
                const float cen = v[l - 1][1][r];
                const float ym = r > 0 ? v[l - 1][1][r - 1] : sh[par][l - 1][tj > 0 ? tj - 1 : tj][lane];
                const float yp = r < RY - 1 ? v[l - 1][1][r + 1] : sh[par][l - 1][tj < TJ - 1 ? tj + 1 : tj][lane];
                nv[r] = (x >= 1 && x < NX - 1 && j >= 1 && j < NY - 1 && k >= 1 && k < NZ - 1)
                            ? c0 * cen + c1 * (v[l - 1][0][r] + v[l - 1][2][r] + ym + yp + sh[par][l - 1][tj][zl] + sh[par][l - 1][tj][zr])
                            : cen;
            }
#pragma unroll
            for (int r = 0; r < RY; r++) {
                v[l][0][r] = v[l][1][r];
                v[l][1][r] = v[l][2][r];
                v[l][2][r] = nv[r];
            }
        }
        const long x = xin - T;
        if (x >= xs && x >= 1 && x < NX - 1 && lane >= T && lane < TK - T && k >= 1 && k < NZ - 1) {
#pragma unroll
            for (int r = 0; r < RY; r++) {
                const int tj = ty * RY + r;
                const long j = j0 + r;
                if (tj >= T && tj < TJ - T && j >= 1 && j < NY - 1)
                    out[x * sx + j * NZ + k] = v[T][2][r];
            }
        }
    }
}

static float elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

/* Runs `steps` steps with launches of `per` steps each; returns the final buffer. */
template <typename Launch>
static float *run(float *a, float *b, int steps, int per, Launch launch, float *ms)
{
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventRecord(e0));
    for (int s = 0; s < steps; s += per) {
        launch(a, b);
        CHECK(cudaGetLastError());
        float *t = a;
        a = b;
        b = t;
    }
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    *ms = elapsed(e0, e1);
    return a;
}

static void init(std::vector<float> &h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h[i] = (float)((i * 37 + (i >> 10) * 11) % 101) / 7.0f;
}

/* The device grids of one suite: the start a0, two work buffers, and two for the
 * one-step reference run (both starting as a0); freed at the end of the suite. */
struct Grids {
    float *a0, *a, *b, *r1, *r2;
    explicit Grids(size_t n)
    {
        std::vector<float> h(n);
        init(h, n);
        for (float **p : {&a0, &a, &b, &r1, &r2})
            CHECK(cudaMalloc(p, n * 4));
        CHECK(cudaMemcpy(a0, h.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(r1, a0, n * 4, cudaMemcpyDeviceToDevice));
        CHECK(cudaMemcpy(r2, a0, n * 4, cudaMemcpyDeviceToDevice));
    }
    ~Grids()
    {
        for (float *p : {a0, a, b, r1, r2})
            CHECK(cudaFree(p));
    }
};

static int same(const float *d1, const float *d2, size_t n)
{
    std::vector<float> a(n), b(n);
    CHECK(cudaMemcpy(a.data(), d1, n * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(b.data(), d2, n * 4, cudaMemcpyDeviceToHost));
    return memcmp(a.data(), b.data(), n * 4) == 0;
}

template <int T, int BY>
static void jacobi_case(long X, long Y, int steps, long seg, float *a0, float *a, float *b, float *ref, size_t n)
{
    CHECK(cudaMemcpy(a, a0, n * 4, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(b, a0, n * 4, cudaMemcpyDeviceToDevice));
    dim3 grid((unsigned)((Y - 2 * T + (BY - 2 * T) - 1) / (BY - 2 * T) + 1), (unsigned)((X + seg - 1) / seg));
    float ms;
    float *out = run(a, b, steps, T, [&](float *i, float *o) { jacobi_stream<T, BY><<<grid, BY>>>(i, o, X, Y, seg); }, &ms);
    printf("jacobi2d %ldx%ld steps=%d  T=%d BY=%d seg=%ld  %8.2f ms  %7.1f Glup/s  %s\n", X, Y, steps, T, BY, seg, ms,
           (double)(X - 2) * (Y - 2) * steps / ms * 1e-6, same(out, ref, n) ? "bit-identical" : "DIFFERENT");
}

template <int T, int BZ, int BY>
static void heat_case(long NX, long NY, long NZ, int steps, long seg, float *a0, float *a, float *b, float *ref, size_t n)
{
    CHECK(cudaMemcpy(a, a0, n * 4, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(b, a0, n * 4, cudaMemcpyDeviceToDevice));
    dim3 grid((unsigned)((NZ + BZ - 2 * T - 1) / (BZ - 2 * T) + 1), (unsigned)((NY + BY - 2 * T - 1) / (BY - 2 * T) + 1),
              (unsigned)((NX + seg - 1) / seg));
    float ms;
    float *out = run(a, b, steps, T,
                     [&](float *i, float *o) { heat_stream<T, BZ, BY><<<grid, dim3(BZ, BY)>>>(i, o, NX, NY, NZ, seg, 0.4f, 0.1f); }, &ms);
    printf("heat3d %ldx%ldx%ld steps=%d  T=%d BZ=%d BY=%d seg=%ld  %8.2f ms  %7.1f Glup/s  %s\n", NX, NY, NZ, steps, T, BZ, BY,
           seg, ms, (double)(NX - 2) * (NY - 2) * (NZ - 2) * steps / ms * 1e-6, same(out, ref, n) ? "bit-identical" : "DIFFERENT");
}

template <int T, int BY, int RY, int CK>
static void heat_rb_case(long NX, long NY, long NZ, int steps, long seg, float *a0, float *a, float *b, float *ref, size_t n)
{
    const long TJ = BY * RY, TK = 32 * CK;
    CHECK(cudaMemcpy(a, a0, n * 4, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(b, a0, n * 4, cudaMemcpyDeviceToDevice));
    dim3 grid((unsigned)((NZ + TK - 2 * T - 1) / (TK - 2 * T) + 1), (unsigned)((NY + TJ - 2 * T - 1) / (TJ - 2 * T) + 1),
              (unsigned)((NX + seg - 1) / seg));
    float ms;
    float *out = run(a, b, steps, T,
                     [&](float *i, float *o) { heat_rb<T, BY, RY, CK><<<grid, dim3(32, BY)>>>(i, o, NX, NY, NZ, seg, 0.4f, 0.1f); }, &ms);
    printf("heat3d %ldx%ldx%ld steps=%d  T=%d register-blocked BY=%d RY=%d CK=%d (tile %ldx%ld) seg=%ld  %8.2f ms  %7.1f Glup/s  %s\n", NX, NY,
           NZ, steps, T, BY, RY, CK, TJ, TK, seg, ms, (double)(NX - 2) * (NY - 2) * (NZ - 2) * steps / ms * 1e-6,
           same(out, ref, n) ? "bit-identical" : "DIFFERENT");
}

template <int T, int BY, int RY>
static void heat_rbs_case(long NX, long NY, long NZ, int steps, long seg, float *a0, float *a, float *b, float *ref, size_t n)
{
    const long TJ = BY * RY, TK = 32;
    CHECK(cudaMemcpy(a, a0, n * 4, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(b, a0, n * 4, cudaMemcpyDeviceToDevice));
    dim3 grid((unsigned)((NZ + TK - 2 * T - 1) / (TK - 2 * T) + 1), (unsigned)((NY + TJ - 2 * T - 1) / (TJ - 2 * T) + 1),
              (unsigned)((NX + seg - 1) / seg));
    float ms;
    float *out = run(a, b, steps, T,
                     [&](float *i, float *o) { heat_rbs<T, BY, RY><<<grid, dim3(32, BY)>>>(i, o, NX, NY, NZ, seg, 0.4f, 0.1f); }, &ms);
    printf("heat3d %ldx%ldx%ld steps=%d  T=%d register-blocked, shared rows, BY=%d RY=%d (tile %ldx%ld) seg=%ld  %8.2f ms  %7.1f Glup/s  %s\n", NX,
           NY, NZ, steps, T, BY, RY, TJ, TK, seg, ms, (double)(NX - 2) * (NY - 2) * (NZ - 2) * steps / ms * 1e-6,
           same(out, ref, n) ? "bit-identical" : "DIFFERENT");
}

/* Heat-3D on an NX x NY x NZ grid in device memory: one step per kernel, then the
 * fused shapes against it, blocks taking segments of `seg` planes. */
static void heat_suite(long NX, long NY, long NZ, int steps, long seg)
{
    size_t n = (size_t)NX * NY * NZ;
    Grids g(n);
    float *a0 = g.a0, *a = g.a, *b = g.b, *r1 = g.r1, *r2 = g.r2;
    float ms;
    dim3 grid((unsigned)((NZ + 31) / 32), (unsigned)((NY + 7) / 8), (unsigned)NX);
    float *ref = run(r1, r2, steps, 1, [&](float *i, float *o) { heat_step<<<grid, dim3(32, 8)>>>(i, o, NX, NY, NZ, 0.4f, 0.1f); }, &ms);
    printf("heat3d %ldx%ldx%ld steps=%d  one step per kernel         %8.2f ms  %7.1f Glup/s\n", NX, NY, NZ, steps, ms,
           (double)(NX - 2) * (NY - 2) * (NZ - 2) * steps / ms * 1e-6);
    heat_case<1, 32, 8>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_case<2, 32, 16>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<1, 8, 4, 2>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<2, 8, 4, 1>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<2, 8, 4, 2>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<2, 16, 4, 2>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<2, 8, 8, 2>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<2, 4, 8, 2>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<3, 8, 4, 2>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<3, 16, 4, 2>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<4, 8, 4, 2>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rb_case<2, 8, 4, 2>(NX, NY, NZ, steps, seg / 2, a0, a, b, ref, n);
    heat_rbs_case<2, 8, 4>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rbs_case<2, 16, 2>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rbs_case<2, 8, 8>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
    heat_rbs_case<4, 8, 4>(NX, NY, NZ, steps, seg, a0, a, b, ref, n);
}

int main(int argc, char **argv)
{
    const int steps = 64;
    const bool heat_only = argc > 1 && strcmp(argv[1], "heat") == 0; /* skip Jacobi-2D */
    if (!heat_only) {
        const long X = 16384, Y = 61440;
        size_t n = (size_t)X * Y;
        Grids g(n);
        float *a0 = g.a0, *a = g.a, *b = g.b, *r1 = g.r1, *r2 = g.r2;
        float ms;
        dim3 grid((unsigned)((Y + 255) / 256), (unsigned)X);
        float *ref = run(r1, r2, steps, 1, [&](float *i, float *o) { jacobi_step<<<grid, 256>>>(i, o, X, Y); }, &ms);
        printf("jacobi2d %ldx%ld steps=%d  one step per kernel            %8.2f ms  %7.1f Glup/s\n", X, Y, steps, ms,
               (double)(X - 2) * (Y - 2) * steps / ms * 1e-6);
        jacobi_case<1, 256>(X, Y, steps, 512, a0, a, b, ref, n);
        jacobi_case<2, 256>(X, Y, steps, 256, a0, a, b, ref, n);
        jacobi_case<2, 256>(X, Y, steps, 1024, a0, a, b, ref, n);
        jacobi_case<2, 512>(X, Y, steps, 512, a0, a, b, ref, n);
        jacobi_case<4, 256>(X, Y, steps, 512, a0, a, b, ref, n);
        jacobi_case<4, 512>(X, Y, steps, 512, a0, a, b, ref, n);
        jacobi_case<8, 512>(X, Y, steps, 512, a0, a, b, ref, n);
    }
    heat_suite(512, 768, 1024, steps, 128);
    /* An mmtb chunk of heat-3D under the 8 GB budget: 40 planes of 1536 x 1728. */
    heat_suite(40, 1536, 1728, steps, 40);
    return 0;
}
