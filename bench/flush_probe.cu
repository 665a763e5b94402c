// flush_probe: what the time of a small GEMM is made of on the GPU machine.
// Times, with CUDA events (median of 200 runs), an empty kernel and, per
// shape, one sgemm_warp config (kernels_src/gemm/sgemm.cuh) and cuBLAS
// (pure fp32, as the worker runs it), each three ways: back to back with no
// flush; after a cudaMemsetAsync of 2 x L2 (the worker's flush, which leaves
// the L2 full of dirty lines); after a kernel that only reads 2 x L2 (clean
// lines). It measures the measurement.
// Build (here): TUNED_BUILD_BENCH=ON bash scripts/build.sh (build/bin/flush_probe), or
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. -o flush_probe bench/flush_probe.cu -lcublas
// Run (device): flush_probe
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

// -DSGEMM_HEADER='"file"' times a variant of the kernels instead.
#ifndef SGEMM_HEADER
#define SGEMM_HEADER "kernels_src/gemm/sgemm.cuh"
#endif
#include SGEMM_HEADER
#include "kernels_src/gemm/warp.cuh"  // sgemm_warp (the kernel files are joined in this order)

#include "probe_check.h"  // CK, CB

__global__ void empty_kernel() {}

// Reads n floats; writes only if the (never true) sum test passes.
__global__ void read_flush(const float4* p, size_t n4, float* sink) {
  float s = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    const float4 v = p[i];
    s += v.x + v.y + v.z + v.w;
  }
  if (s == 123456.0f) *sink = s;
}

__global__ void fill(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u + seed;
    x ^= x >> 13;
    p[i] = (x & 0xffff) / 65536.0f - 0.5f;
  }
}

enum Flush { kNone, kMemset, kRead };

double MedianMs(const std::function<void()>& run, Flush flush, float* scratch, size_t bytes) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ms;
  run();  // warm-up
  for (int r = 0; r < 200; ++r) {
    if (flush == kMemset) CK(cudaMemsetAsync(scratch, r & 0xff, bytes));
    if (flush == kRead) read_flush<<<1056, 256>>>(reinterpret_cast<const float4*>(scratch), bytes / 16, scratch);
    CK(cudaEventRecord(a));
    run();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float t = 0;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CK(cudaGetLastError());
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms[ms.size() / 2];
}

int main() {
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const size_t bytes = 2 * static_cast<size_t>(l2);
  float* scratch;
  CK(cudaMalloc(&scratch, bytes));
  CK(cudaMemset(scratch, 1, bytes));
  cublasHandle_t h;
  CB(cublasCreate(&h));
  CB(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  const char* names[] = {"no flush", "memset flush", "read flush"};
  std::printf("%-34s %12s %12s %12s  (median ms of 200)\n", "what", names[0], names[1], names[2]);
  auto row = [&](const char* what, const std::function<void()>& run) {
    std::printf("%-34s", what);
    for (Flush f : {kNone, kMemset, kRead}) std::printf(" %12.4f", MedianMs(run, f, scratch, bytes));
    std::printf("\n");
  };
  row("empty kernel", [] { empty_kernel<<<1, 32>>>(); });
  struct Case {
    int m, n, k;
    const char* config;
    void (*kernel)(int, int, int, float, const float*, const float*, float, float*);
    int bm, bn, threads, smem, splitk;
  };
  // sgemm_warp<BM,BN,BK,TM,TN,LN,STAGES,SPLITK,GROUP,MINB,SLICEK,STREAMB,STREAMK>: the
  // suite's winners.
  const Case cases[] = {
      {512, 512, 512, "warp_16x64x32_4x4_ln8_s3_g1_b1_sl2",
       sgemm_warp<16, 64, 32, 4, 4, 8, 3, 1, 1, 1, 2, 0, 0>, 16, 64, 128,
       (3 * 32 * (20 + 64) + 16 * 64) * 4, 1},
      {4096, 4096, 64, "warp_128x128x16_8x8_ln8_s4_g1_b2",
       sgemm_warp<128, 128, 16, 8, 8, 8, 4, 1, 1, 2, 1, 0, 0>, 128, 128, 256,
       4 * 16 * (132 + 128) * 4, 1},
      {4096, 4096, 4096, "warp_128x256x16_8x16_ln8_s4_g8_b1",
       sgemm_warp<128, 256, 16, 8, 16, 8, 4, 1, 8, 1, 1, 0, 0>, 128, 256, 256,
       4 * 16 * (132 + 256) * 4, 1},
      // The same with split-K 2 (atomic adds into C): 4-5% slower in the suites'
      // NVRTC builds (bench/RESULTS.md nvrtc-vs-nvcc).
      {4096, 4096, 4096, "warp_128x256x16_8x16_ln8_s4_g8_b1_sk2",
       sgemm_warp<128, 256, 16, 8, 16, 8, 4, 2, 8, 1, 1, 0, 0>, 128, 256, 256,
       4 * 16 * (132 + 256) * 4, 2},
      {16, 4096, 4096, "warp_16x128x16_4x4_ln8_s4_g1_b1_sk8",
       sgemm_warp<16, 128, 16, 4, 4, 8, 4, 8, 1, 1, 1, 0, 0>, 16, 128, 128,
       4 * 16 * (20 + 128) * 4, 8},
      {128, 4096, 4096, "warp_64x128x16_8x8_ln8_s4_g8_b1_sk4",
       sgemm_warp<64, 128, 16, 8, 8, 8, 4, 4, 8, 1, 1, 0, 0>, 64, 128, 128,
       4 * 16 * (68 + 128) * 4, 4},
      {8192, 128, 8192, "warp_256x128x16_16x8_ln4_s4_g8_b1_sk4",
       sgemm_warp<256, 128, 16, 16, 8, 4, 4, 4, 8, 1, 1, 0, 0>, 256, 128, 256,
       4 * 16 * (260 + 128) * 4, 4},
  };
  for (const Case& c : cases) {
    float *a, *b, *cc;
    CK(cudaMalloc(&a, size_t{4} * c.m * c.k));
    CK(cudaMalloc(&b, size_t{4} * c.k * c.n));
    CK(cudaMalloc(&cc, size_t{4} * c.m * c.n));
    fill<<<1024, 256>>>(a, size_t{1} * c.m * c.k, 1);
    fill<<<1024, 256>>>(b, size_t{1} * c.k * c.n, 2);
    CK(cudaFuncSetAttribute(c.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem));
    const int tiles = ((c.m + c.bm - 1) / c.bm) * ((c.n + c.bn - 1) / c.bn);
    char what[96];
    std::snprintf(what, sizeof what, "%dx%dx%d %s", c.m, c.n, c.k, "kernel");
    std::printf("# %s: %s\n", what, c.config);
    row(what, [&] {  // split-K adds into C: C = 0 first (beta == 0)
      if (c.splitk > 1) CK(cudaMemsetAsync(cc, 0, size_t{4} * c.m * c.n));
      c.kernel<<<dim3(tiles, c.splitk), c.threads, c.smem>>>(c.m, c.n, c.k, 1.0f, a, b, 0.0f, cc);
    });
    std::snprintf(what, sizeof what, "%dx%dx%d %s", c.m, c.n, c.k, "cuBLAS");
    const float one = 1, zero = 0;
    row(what, [&] {  // row-major C = A B as column-major C^T = B^T A^T
      CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, c.n, c.m, c.k, &one, b, c.n, a, c.k, &zero, cc, c.n));
    });
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(cc));
  }
  cublasDestroy(h);
  return 0;
}
