//! The CPU emulation's `__syncthreads()` (src/runtime/cuda_emulation.cuh): under
//! `TPACE_LAUNCH_SYNC` a block's threads run as coroutines in phases between
//! barriers, each phase in a freshly shuffled order, so kernels that share
//! `__shared__` memory through barriers give the right answer under every seed,
//! a missing barrier gives a wrong one under some seed, and a barrier that only
//! some threads reach (or one in a plain `TPACE_LAUNCH` kernel) stops the
//! program with exit status 3 and a message rather than hanging. A kernel's
//! dynamic shared memory (`TPACE_DYNAMIC_SHARED`) is as large as its launch says,
//! holds nothing from an earlier block, and past 48 KiB needs the kernel's opt-in.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EMULATION: &str = include_str!("../src/runtime/cuda_emulation.cuh");

/// Host-side helpers shared by the programs: upload, launch, download, compare.
const HOST: &str = r#"
static inline int *to_device(const int *h, size_t n, cudaStream_t s)
{
    void *d;
    if (cudaMalloc(&d, n * sizeof(int)) != cudaSuccess)
        exit(2);
    cudaMemcpyAsync(d, h, n * sizeof(int), cudaMemcpyHostToDevice, s);
    return (int *)d;
}
static inline void to_host(int *h, const int *d, size_t n, cudaStream_t s)
{
    cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, s);
    cudaDeviceSynchronize();
}
static int wrong = 0;
static inline void expect(const char *what, const int *got, const int *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            printf("%s: wrong at %zu: %d, not %d\n", what, i, got[i], want[i]);
            wrong = 1;
            return;
        }
}
"#;

/// The reversal of each block's values through shared memory (2-D blocks
/// numbered row by row), with or without the barrier; a template kernel
/// taking a lambda; and a loop with barriers in it, many steps.
const KERNELS: &str = r#"
template <bool SYNC>
__global__ void __launch_bounds__(256) reverse(const int *in, int *out)
{
    __shared__ int sh[256];
    unsigned n = blockDim.x * blockDim.y;
    unsigned t = threadIdx.y * blockDim.x + threadIdx.x;
    unsigned b = blockIdx.y * gridDim.x + blockIdx.x;
    sh[t] = in[b * n + t];
    if (SYNC)
        __syncthreads();
    out[b * n + t] = sh[n - 1 - t];
}
/* Each value moves one place right: in thread order it would be right even
 * without the barrier, so only the shuffle can catch its absence. */
template <bool SYNC>
__global__ void shift(const int *in, int *out)
{
    __shared__ int sh[256];
    unsigned n = blockDim.x, t = threadIdx.x;
    sh[t] = in[blockIdx.x * n + t];
    if (SYNC)
        __syncthreads();
    out[blockIdx.x * n + t] = sh[t ? t - 1 : 0];
}
template <typename F>
__global__ void reverse_map(F f, const int *in, int *out)
{
    __shared__ int sh[256];
    unsigned n = blockDim.x;
    unsigned t = threadIdx.x;
    sh[t] = f(in[blockIdx.x * n + t]);
    __syncthreads();
    out[blockIdx.x * n + t] = sh[n - 1 - t];
}
/* Each step, every value becomes its right neighbour's (cyclically) plus the
 * thread's number: a read barrier and a write barrier per step. */
__global__ void rotate(int *data, int steps)
{
    __shared__ int sh[64];
    unsigned n = blockDim.x, t = threadIdx.x;
    sh[t] = data[blockIdx.x * n + t];
    __syncthreads();
    for (int s = 0; s < steps; s++) {
        int v = sh[(t + 1) % n] + (int)t;
        __syncthreads();
        sh[t] = v;
        __syncthreads();
    }
    data[blockIdx.x * n + t] = sh[t];
}
"#;

const MAIN_GOOD: &str = r#"
int main(void)
{
    cudaStream_t s;
    cudaStreamCreate(&s);
    enum { BLOCKS = 6, N = 256 };
    static int in[BLOCKS * N], out[BLOCKS * N], want[BLOCKS * N];
    for (int i = 0; i < BLOCKS * N; i++)
        in[i] = i * 7 + 3;
    int *din = to_device(in, BLOCKS * N, s);
    int *dout = to_device(out, BLOCKS * N, s);

    /* 1-D blocks of 256, 2-D blocks of 16x16 in a 3x2 grid, 2-D blocks of 8x4. */
    for (int b = 0; b < BLOCKS; b++)
        for (int t = 0; t < N; t++)
            want[b * N + t] = in[b * N + N - 1 - t];
    TPACE_LAUNCH_SYNC(reverse<true>, dim3(BLOCKS), dim3(N), 0, s, din, dout);
    to_host(out, dout, BLOCKS * N, s);
    expect("reverse 1-D", out, want, BLOCKS * N);
    TPACE_LAUNCH_SYNC(reverse<true>, dim3(3, 2), dim3(16, 16), 0, s, din, dout);
    to_host(out, dout, BLOCKS * N, s);
    expect("reverse 2-D", out, want, BLOCKS * N);
    for (int b = 0; b < BLOCKS * N / 32; b++)
        for (int t = 0; t < 32; t++)
            want[b * 32 + t] = in[b * 32 + 31 - t];
    TPACE_LAUNCH_SYNC(reverse<true>, dim3(BLOCKS * N / 32), dim3(8, 4), 0, s, din, dout);
    to_host(out, dout, BLOCKS * N, s);
    expect("reverse 8x4", out, want, BLOCKS * N);

    for (int b = 0; b < BLOCKS; b++)
        for (int t = 0; t < N; t++)
            want[b * N + t] = in[b * N + (t ? t - 1 : 0)];
    TPACE_LAUNCH_SYNC(shift<true>, dim3(BLOCKS), dim3(N), 0, s, din, dout);
    to_host(out, dout, BLOCKS * N, s);
    expect("shift", out, want, BLOCKS * N);

    /* A template kernel with a lambda argument. */
    for (int b = 0; b < BLOCKS; b++)
        for (int t = 0; t < N; t++)
            want[b * N + t] = 2 * in[b * N + N - 1 - t] + 1;
    int one = 1;
    auto twice = [=](int x) { return 2 * x + one; };
    TPACE_LAUNCH_SYNC(reverse_map<decltype(twice)>, dim3(BLOCKS), dim3(N), 0, s, twice, din, dout);
    to_host(out, dout, BLOCKS * N, s);
    expect("reverse_map", out, want, BLOCKS * N);

    /* A loop with barriers, 200 steps, 4 blocks of 64. */
    enum { R = 4, M = 64, STEPS = 200 };
    static int data[R * M], ref[R * M], next[M];
    for (int i = 0; i < R * M; i++)
        data[i] = ref[i] = (i * 37) % 101;
    for (int b = 0; b < R; b++)
        for (int s2 = 0; s2 < STEPS; s2++) {
            for (int t = 0; t < M; t++)
                next[t] = ref[b * M + (t + 1) % M] + t;
            memcpy(ref + b * M, next, sizeof next);
        }
    int *dd = to_device(data, R * M, s);
    TPACE_LAUNCH_SYNC(rotate, dim3(R), dim3(M), 0, s, dd, STEPS);
    to_host(data, dd, R * M, s);
    expect("rotate", data, ref, R * M);

    cudaFree(din);
    cudaFree(dout);
    cudaFree(dd);
    cudaStreamDestroy(s);
    printf(wrong ? "wrong\n" : "ok\n");
    return 0;
}
"#;

const MAIN_NO_BARRIER: &str = r#"
int main(int argc, char **argv)
{
    cudaStream_t s;
    cudaStreamCreate(&s);
    enum { BLOCKS = 6, N = 256 };
    static int in[BLOCKS * N], out[BLOCKS * N], want[BLOCKS * N];
    for (int i = 0; i < BLOCKS * N; i++)
        in[i] = i * 7 + 3;
    for (int b = 0; b < BLOCKS; b++)
        for (int t = 0; t < N; t++)
            want[b * N + t] = in[b * N + N - 1 - t];
    int *din = to_device(in, BLOCKS * N, s);
    int *dout = to_device(out, BLOCKS * N, s);
    /* Argument: which kernel, 'r' (reverse) or 's' (shift). */
    if (argc > 1 && argv[1][0] == 's') {
        for (int b = 0; b < BLOCKS; b++)
            for (int t = 0; t < N; t++)
                want[b * N + t] = in[b * N + (t ? t - 1 : 0)];
        TPACE_LAUNCH_SYNC(shift<false>, dim3(BLOCKS), dim3(N), 0, s, din, dout);
    } else {
        TPACE_LAUNCH_SYNC(reverse<false>, dim3(BLOCKS), dim3(N), 0, s, din, dout);
    }
    to_host(out, dout, BLOCKS * N, s);
    expect("without a barrier", out, want, BLOCKS * N);
    cudaStreamDestroy(s);
    printf(wrong ? "wrong\n" : "ok\n");
    return 0;
}
"#;

const MAIN_HALF_BARRIER: &str = r#"
__global__ void half(int *out)
{
    if (threadIdx.x < blockDim.x / 2)
        __syncthreads();
    out[threadIdx.x] = 1;
}
int main(void)
{
    cudaStream_t s;
    cudaStreamCreate(&s);
    static int out[32];
    int *d = to_device(out, 32, s);
    TPACE_LAUNCH_SYNC(half, dim3(1), dim3(32), 0, s, d);
    to_host(out, d, 32, s);
    printf("finished\n");
    return 0;
}
"#;

const MAIN_PLAIN_LAUNCH: &str = r#"
__global__ void barrier(int *out)
{
    out[threadIdx.x] = 1;
    __syncthreads();
}
int main(void)
{
    cudaStream_t s;
    cudaStreamCreate(&s);
    static int out[32];
    int *d = to_device(out, 32, s);
    TPACE_LAUNCH(barrier, dim3(1), dim3(32), s, d);
    to_host(out, d, 32, s);
    printf("finished\n");
    return 0;
}
"#;

const MAIN_DYNAMIC: &str = r#"
/* A reversal through dynamic shared memory of the launch's size. */
__global__ void reverse_dyn(const int *in, int *out)
{
    TPACE_DYNAMIC_SHARED(smem, blockDim.x * sizeof(int));
    int *sh = (int *)smem;
    unsigned n = blockDim.x, t = threadIdx.x;
    sh[t] = in[blockIdx.x * n + t];
    __syncthreads();
    out[blockIdx.x * n + t] = sh[n - 1 - t];
}
/* Each block writes one half and reads the other, which only the block before it wrote. */
__global__ void other_half(int *out)
{
    TPACE_DYNAMIC_SHARED(smem, 2 * blockDim.x * sizeof(int));
    int *sh = (int *)smem;
    unsigned n = blockDim.x, t = threadIdx.x;
    sh[t + n * (blockIdx.x % 2)] = 5;
    __syncthreads();
    out[blockIdx.x * n + t] = sh[t + n * ((blockIdx.x + 1) % 2)];
}
/* 64 KiB of it: only after opting in. */
__global__ void big(int *out)
{
    TPACE_DYNAMIC_SHARED(smem, 65536);
    int *sh = (int *)smem;
    sh[16383 - threadIdx.x] = (int)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = sh[16383 - threadIdx.x] + 1;
}
int main(int argc, char **argv)
{
    cudaStream_t s;
    cudaStreamCreate(&s);
    enum { BLOCKS = 4, N = 64 };
    static int in[BLOCKS * N], out[BLOCKS * N], want[BLOCKS * N];
    for (int i = 0; i < BLOCKS * N; i++)
        in[i] = i * 5 + 1;
    int *din = to_device(in, BLOCKS * N, s);
    int *dout = to_device(out, BLOCKS * N, s);
    /* Argument 'short': the launch gives one int less than the kernel uses. */
    const size_t give = N * sizeof(int) - (argc > 1 && argv[1][0] == 's' ? sizeof(int) : 0);
    for (int b = 0; b < BLOCKS; b++)
        for (int t = 0; t < N; t++)
            want[b * N + t] = in[b * N + N - 1 - t];
    TPACE_LAUNCH_SYNC(reverse_dyn, dim3(BLOCKS), dim3(N), give, s, din, dout);
    to_host(out, dout, BLOCKS * N, s);
    expect("reverse_dyn", out, want, BLOCKS * N);
    /* What no thread of a block wrote is all ones (-1), not the block before's 5. */
    for (int i = 0; i < BLOCKS * N; i++)
        want[i] = -1;
    TPACE_LAUNCH_SYNC(other_half, dim3(BLOCKS), dim3(N), 2 * N * sizeof(int), s, dout);
    to_host(out, dout, BLOCKS * N, s);
    expect("other_half", out, want, BLOCKS * N);
    /* More than 48 KiB: refused until the kernel opts in, and no opt-in past the device's limit. */
    for (int t = 0; t < N; t++)
        want[t] = t + 1;
    TPACE_LAUNCH_SYNC(big, dim3(1), dim3(N), 65536, s, dout);
    if (cudaGetLastError() != cudaErrorInvalidValue)
        printf("a launch of 64 KiB without opting in was not refused\n"), wrong = 1;
    if (cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, 1 << 30) == cudaSuccess)
        printf("an opt-in of 1 GiB was accepted\n"), wrong = 1;
    if (cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536) != cudaSuccess)
        printf("the opt-in of 64 KiB was refused\n"), wrong = 1;
    TPACE_LAUNCH_SYNC(big, dim3(1), dim3(N), 65536, s, dout);
    if (cudaGetLastError() != cudaSuccess)
        printf("the launch of 64 KiB after opting in was refused\n"), wrong = 1;
    to_host(out, dout, N, s);
    expect("big", out, want, N);
    cudaStreamDestroy(s);
    printf(wrong ? "wrong\n" : "ok\n");
    return 0;
}
"#;

/// Compile `main` (with the emulation, the host helpers and the kernels ahead
/// of it) as a generated program's emulated build is compiled, warnings as errors.
fn build(dir: &Path, name: &str, main: &str) -> PathBuf {
    build_with(dir, name, "", main)
}

/// [`build`] with `defines` ahead of everything.
fn build_with(dir: &Path, name: &str, defines: &str, main: &str) -> PathBuf {
    let source = dir.join(format!("{name}.cpp"));
    let binary = dir.join(name);
    let text = format!(
        "{defines}#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n{EMULATION}\n{HOST}\n{KERNELS}\n{main}"
    );
    std::fs::write(&source, text).expect("write the program");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    let out = Command::new(&cxx)
        .args(["-x", "c++", "-std=c++17", "-O2", "-ffp-contract=off"])
        .args(["-Wall", "-Wextra", "-Werror"])
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .arg("-lm")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cxx}: {e}"));
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{name}: {cxx} reports:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    binary
}

fn run(binary: &Path, seed: u64) -> Output {
    run_with(binary, seed, &[])
}

fn run_with(binary: &Path, seed: u64, args: &[&str]) -> Output {
    Command::new(binary)
        .args(args)
        .env("TPACE_EMU_SEED", seed.to_string())
        .output()
        .expect("run the program")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn kernels_with_barriers_are_right_under_every_seed() {
    let dir = tempfile::tempdir().expect("scratch folder");
    // The x86-64 switch where there is one, and the portable swapcontext path.
    let fast = build(dir.path(), "good", MAIN_GOOD);
    let portable = build_with(
        dir.path(),
        "good_ucontext",
        "#define TPACE_EMU_UCONTEXT\n",
        MAIN_GOOD,
    );
    for (binary, seed) in [0, 1, 2, 3, 7, 42, 1234567]
        .into_iter()
        .flat_map(|seed| [(&fast, seed), (&portable, seed)])
    {
        let out = run(binary, seed);
        assert!(
            out.status.success() && stdout(&out) == "ok\n",
            "seed {seed}: status {:?}\n{}{}",
            out.status,
            stdout(&out),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_missing_barrier_gives_a_wrong_answer_under_some_seed() {
    let dir = tempfile::tempdir().expect("scratch folder");
    let binary = build(dir.path(), "no_barrier", MAIN_NO_BARRIER);
    // The reversal reads values not yet written in any order; the shift only
    // out of thread order, which the shuffle gives.
    for kernel in ["reverse", "shift"] {
        let caught = (1..=5).find(|&seed| {
            let out = run_with(&binary, seed, &[kernel]);
            assert!(
                out.status.success(),
                "{kernel}, seed {seed}: status {:?}",
                out.status
            );
            stdout(&out).ends_with("wrong\n")
        });
        assert!(
            caught.is_some(),
            "{kernel}: no seed caught the missing barrier"
        );
    }
}

fn assert_stops(name: &str, main: &str, message: &str) {
    let dir = tempfile::tempdir().expect("scratch folder");
    let binary = build(dir.path(), name, main);
    for seed in [1, 2, 3] {
        let out = run(&binary, seed);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{name}, seed {seed}: {stderr}");
        assert!(
            stderr.contains(message),
            "{name}, seed {seed}: stderr lacks {message:?}:\n{stderr}"
        );
        assert!(!stdout(&out).contains("finished"), "{name} went on");
    }
}

#[test]
fn a_barrier_only_some_threads_reach_stops_the_program() {
    assert_stops(
        "half_barrier",
        MAIN_HALF_BARRIER,
        "tpace emulation: __syncthreads() reached by some threads of a block but not all \
         (kernel would hang on a GPU)",
    );
}

#[test]
fn a_barrier_in_a_plain_launch_stops_the_program() {
    assert_stops(
        "plain_launch",
        MAIN_PLAIN_LAUNCH,
        "tpace emulation: __syncthreads() outside a TPACE_LAUNCH_SYNC launch",
    );
}

#[test]
fn dynamic_shared_memory_is_sized_fresh_and_opted_in() {
    let dir = tempfile::tempdir().expect("scratch folder");
    let binary = build(dir.path(), "dynamic", MAIN_DYNAMIC);
    for seed in [1, 2, 3] {
        let out = run(&binary, seed);
        assert!(
            out.status.success() && stdout(&out) == "ok\n",
            "seed {seed}: status {:?}\n{}{}",
            out.status,
            stdout(&out),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = run_with(&binary, 1, &["short"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "tpace emulation: a kernel uses 256 bytes of dynamic shared memory, its launch gave 252"
        ),
        "{stderr}"
    );
}
