// The device's copy rate for bench/gpu.sh part `kernels3d`: the best of REPEATS
// device-to-device copies of BYTES bytes (cudaMemcpy), in bytes read plus written
// per second, the single-step roofline's denominator (as `tpace probe` measures
// memory_gbs).
// Build: nvcc -O3 -arch=sm_90 -o d2d_copy d2d_copy.cu
// Usage: d2d_copy [GIB [REPEATS]]   (default 4 GiB, 10 copies)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("copy: CUDA %s at line %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)
int main(int argc, char **argv) {
  const double gib = argc > 1 ? atof(argv[1]) : 4.0;
  const int repeats = argc > 2 ? atoi(argv[2]) : 10;
  const size_t bytes = (size_t)(gib * (double)(1ull << 30));
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice)); // warm-up
  CK(cudaDeviceSynchronize());
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    auto t0 = std::chrono::steady_clock::now();
    CK(cudaMemcpy(r % 2 ? a : b, r % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaDeviceSynchronize());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  printf("copy: bytes=%zu repeats=%d seconds=%.6f gbs=%.1f\n", bytes, repeats, best, 2.0 * (double)bytes / best / 1e9);
  return 0;
}
