// cuBLASLt's top 8 algorithms for a row-major bf16 NN GEMM, each timed (L2 flushed, median of 50),
// plus cublasGemmEx; with "once" each runs once (for ncu's kernel names, in order).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define CK(x) do { auto r_ = (x); if ((int)r_ != 0) { fprintf(stderr, "%s: %d\n", #x, (int)r_); exit(1); } } while (0)
int main(int argc, char** argv) {
  int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  bool once = argc > 4 && !strcmp(argv[4], "once");
  size_t ws_bytes = 32u << 20;
  void *A, *B, *C, *ws, *scratch;
  CK(cudaMalloc(&A, 2ull * M * K)); CK(cudaMalloc(&B, 2ull * K * N)); CK(cudaMalloc(&C, 2ull * M * N));
  CK(cudaMalloc(&ws, ws_bytes)); CK(cudaMalloc(&scratch, 256u << 20));
  { std::vector<unsigned short> h(std::max((size_t)M * K, (size_t)K * N)); unsigned x = 1;
    for (auto& v : h) { x = x * 1664525u + 1013904223u; float f = (x >> 8) * (1.0f / 16777216.0f) - 0.5f; unsigned u; memcpy(&u, &f, 4); v = u >> 16; }
    CK(cudaMemcpy(A, h.data(), 2ull * M * K, cudaMemcpyHostToDevice)); CK(cudaMemcpy(B, h.data(), 2ull * K * N, cudaMemcpyHostToDevice)); }
  cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc; CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t la, lb, lc;  // column-major C^T (N x M) = B^T (N x K) A^T (K x M)
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, N, K, N));
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, K, M, K));
  CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, N, M, N));
  cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t res[8]; int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 8, res, &found));
  cublasHandle_t h; CK(cublasCreate(&h));
  float al = 1, be = 0;
  auto run = [&](int i) {
    if (i < 0) {
      CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &al, B, CUDA_R_16BF, N, A, CUDA_R_16BF, K, &be, C,
                      CUDA_R_16BF, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    } else {
      CK(cublasLtMatmul(lt, desc, &al, B, la, A, lb, &be, C, lc, C, lc, &res[i].algo, ws, ws_bytes, 0));
    }
  };
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int i = -1; i < found; ++i) {
    if (once) { run(i); CK(cudaDeviceSynchronize()); continue; }
    std::vector<float> t;
    for (int r = 0; r < 53; ++r) {
      CK(cudaMemsetAsync(scratch, r, 256u << 20, 0));
      CK(cudaEventRecord(e0, 0)); run(i); CK(cudaEventRecord(e1, 0)); CK(cudaEventSynchronize(e1));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (r >= 3) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    int tile = 0, stages = 0, splitk = 0, swz = 0, red = 0, cta = 0, cl = 0;
    size_t w;
    if (i >= 0) {
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl, sizeof cl, &w);
    }
    printf("%dx%dx%d algo %d: %.2f us  %.1f TF  ws %zu tile %d stages %d splitk %d swz %d red %d cluster %d\n",
           M, N, K, i, t[t.size() / 2] * 1e3, 2.0 * M * N * K / (t[t.size() / 2] * 1e-3) / 1e12,
           i >= 0 ? res[i].workspaceSize : 0, tile, stages, splitk, swz, red, cl);
    (void)cta;
  }
  return 0;
}
