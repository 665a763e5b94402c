// Standalone check and timing of gemm16_mma (kernels_src/gemm/mma16.cuh), the
// BF16 / FP16 mma.sync GEMM, against cuBLAS (cublasGemmEx) and cuBLASLt (the best
// of its heuristic's top 8 algorithms).
//
//   nvcc -std=c++17 -arch=sm_90a -O3 bench/gemm16_mma_probe.cu -o gemm16_mma_probe -lcublas -lcublasLt
//   ./gemm16_mma_probe                 # the default cases (see DefaultCases)
//   ./gemm16_mma_probe M N K [M N K ...]   # these shapes, NN, both types, beta 0
//
// Per case and config: the relative Frobenius error ||C - R|| / ||R|| of the
// result against an fp64 reference R computed from the same 16-bit inputs
// (cublasDgemm on the widened inputs), and cuBLAS's own error (GemmEx, 16-bit
// in and out, CUBLAS_COMPUTE_32F) against it; a config passes if its error is at
// most 2x cuBLAS's (+1e-7). Timings: CUDA events around each launch, 3 warm-up
// launches, the median of 20, a 256 MB buffer written between launches (L2
// flush), kernel and cuBLAS launches interleaved. TFLOPS = 2MNK / time.
// Inputs: uniform in [-1, 1) rounded to the 16-bit type, never zero. beta == 0
// runs start from a C full of NaN (0xFFFF), so a kernel that reads C fails.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../kernels_src/gemm/sgemm.cuh"  // sgemm_detail::RasterTile
#include "../kernels_src/gemm/half16.cuh"  // the 16-bit conversions
#include "../kernels_src/gemm/mma16.cuh"

typedef unsigned short u16;

#include "probe_check.h"  // CK, CB

using LaunchFn = void (*)(int, int, int, float, const u16*, const u16*, float, u16*, cudaStream_t);

struct Config {
  std::string name;
  int dtype, layout, splitk;
  LaunchFn launch;
};

template <int DT, int BM, int BN, int BK, int WM, int WN, int ST, int SK, int GR, int LY, int MINB>
void Launch(int M, int N, int K, float alpha, const u16* A, const u16* B, float beta, u16* C,
            cudaStream_t s) {
  using T = mma16_detail::Tile<DT, BM, BN, BK, WM, WN, ST, SK, LY>;
  auto k = gemm16_mma<DT, BM, BN, BK, WM, WN, ST, SK, GR, LY, MINB>;
  static bool set = false;
  if (!set) {
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, T::SMEM_BYTES));
    set = true;
  }
  const long long tiles = static_cast<long long>((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  dim3 grid(static_cast<unsigned>(tiles), 1, SK);
  k<<<grid, T::THREADS, T::SMEM_BYTES, s>>>(M, N, K, alpha, A, B, beta, C);
}

#define CFG(DT, BM, BN, BK, WM, WN, ST, SK, GR, LY, MINB)                                 \
  Config {                                                                                \
    #BM "x" #BN "x" #BK "_w" #WM "x" #WN "_s" #ST "_k" #SK "_g" #GR "_b" #MINB, DT, LY, SK, \
        &Launch<DT, BM, BN, BK, WM, WN, ST, SK, GR, LY, MINB>                            \
  }

// The full list (NN) and a shorter one for the other layouts.
#define FULL_LIST(DT, LY)                                         \
  CFG(DT, 128, 128, 32, 64, 32, 4, 1, 8, LY, 1),                  \
      CFG(DT, 128, 128, 32, 64, 64, 4, 1, 8, LY, 1),              \
      CFG(DT, 128, 256, 32, 64, 64, 3, 1, 8, LY, 1),              \
      CFG(DT, 256, 128, 32, 64, 64, 3, 1, 8, LY, 1),              \
      CFG(DT, 128, 128, 64, 64, 32, 3, 1, 8, LY, 1),              \
      CFG(DT, 64, 128, 32, 32, 64, 4, 1, 8, LY, 1),               \
      CFG(DT, 64, 64, 64, 32, 32, 4, 1, 8, LY, 1),                \
      CFG(DT, 32, 128, 64, 32, 32, 4, 1, 8, LY, 1),               \
      CFG(DT, 16, 128, 64, 16, 32, 4, 1, 8, LY, 1),               \
      CFG(DT, 16, 256, 64, 16, 64, 4, 1, 8, LY, 1),               \
      CFG(DT, 16, 64, 64, 16, 16, 4, 4, 8, LY, 1),                \
      CFG(DT, 16, 128, 64, 16, 32, 4, 4, 8, LY, 1),               \
      CFG(DT, 32, 128, 64, 32, 32, 4, 4, 8, LY, 1),               \
      CFG(DT, 64, 64, 64, 32, 32, 4, 2, 8, LY, 1),                \
      CFG(DT, 64, 64, 64, 32, 32, 4, 4, 8, LY, 1),                \
      CFG(DT, 64, 128, 32, 32, 64, 4, 2, 8, LY, 1),               \
      CFG(DT, 128, 128, 32, 64, 32, 4, 2, 8, LY, 1),              \
      CFG(DT, 128, 128, 32, 64, 32, 4, 4, 8, LY, 1)
#define SHORT_LIST(DT, LY)                                        \
  CFG(DT, 128, 128, 32, 64, 32, 4, 1, 8, LY, 1),                  \
      CFG(DT, 128, 256, 32, 64, 64, 3, 1, 8, LY, 1),              \
      CFG(DT, 64, 64, 64, 32, 32, 4, 1, 8, LY, 1),                \
      CFG(DT, 16, 128, 64, 16, 32, 4, 1, 8, LY, 1),               \
      CFG(DT, 64, 64, 64, 32, 32, 4, 4, 8, LY, 1)

static std::vector<Config> AllConfigs() {
  return {FULL_LIST(2, 0),  FULL_LIST(3, 0),  SHORT_LIST(2, 1), SHORT_LIST(3, 1),
          SHORT_LIST(2, 2), SHORT_LIST(3, 2), SHORT_LIST(2, 3), SHORT_LIST(3, 3)};
}

// ---------------------------------------------------------------- device helpers
__device__ __forceinline__ unsigned Hash(unsigned long long i, unsigned seed) {
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 32;
  return static_cast<unsigned>(x);
}

template <int DT>
__global__ void FillRandom(u16* p, long long n, unsigned seed) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) {
    float u = (Hash(i, seed) >> 8) * (2.0f / 16777216.0f) - 1.0f;  // [-1, 1)
    u16 h = half16::Narrow<DT>(u);
    if (half16::Widen<DT>(h) == 0.0f) h = half16::Narrow<DT>(0.0078125f);
    p[i] = h;
  }
}

template <int DT>
__global__ void Widen(const u16* p, double* d, long long n) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x)
    d[i] = half16::Widen<DT>(p[i]);
}

// acc[0] += sum (c - r)^2, acc[1] += sum r^2, acc[2] += count of non-finite c.
template <int DT>
__global__ void ErrorSums(const u16* c, const double* r, long long n, double* acc) {
  double e = 0, s = 0, bad = 0;
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) {
    const double x = half16::Widen<DT>(c[i]);
    if (!isfinite(x)) {
      bad += 1;
      continue;
    }
    e += (x - r[i]) * (x - r[i]);
    s += r[i] * r[i];
  }
  for (int o = 16; o > 0; o >>= 1) {
    e += __shfl_down_sync(0xffffffffu, e, o);
    s += __shfl_down_sync(0xffffffffu, s, o);
    bad += __shfl_down_sync(0xffffffffu, bad, o);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(acc, e);
    atomicAdd(acc + 1, s);
    atomicAdd(acc + 2, bad);
  }
}

// ---------------------------------------------------------------- host side
struct Case {
  int M, N, K, layout, dtype;
  bool misalign;  // A, B, C offset by one element
  float beta;
  bool time;  // timings (else correctness only)
};

static const char* kLayout[] = {"NN", "NT", "TN", "TT"};

struct Ctx {
  cublasHandle_t blas;
  cublasLtHandle_t lt;
  cudaStream_t s;
  void* flush;
  size_t flush_bytes = 256ull << 20;
  void* ws;
  size_t ws_bytes = 32ull << 20;
  double* acc;
};

static void Flush(Ctx& c) { CK(cudaMemsetAsync(c.flush, 0x5a, c.flush_bytes, c.s)); }

static double Median(std::vector<float> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
static std::vector<float> TimeIt(Ctx& c, F f, int reps) {
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    Flush(c);
    CK(cudaEventRecord(ev[2 * i], c.s));
    f();
    CK(cudaEventRecord(ev[2 * i + 1], c.s));
  }
  CK(cudaStreamSynchronize(c.s));
  std::vector<float> t(reps);
  for (int i = 0; i < reps; ++i) CK(cudaEventElapsedTime(&t[i], ev[2 * i], ev[2 * i + 1]));
  for (auto& e : ev) CK(cudaEventDestroy(e));
  return t;
}

struct Result {
  std::string cfg;
  double err, ms, tf;
};

struct Summary {
  Case cs;
  double cublas_err, cublas_ms, lt_ms;
  std::vector<Result> results;
  int fails;
};

static double RelErr(Ctx& c, int dtype, const u16* C, const double* R, long long n) {
  CK(cudaMemsetAsync(c.acc, 0, 3 * sizeof(double), c.s));
  if (dtype == 2)
    ErrorSums<2><<<1024, 256, 0, c.s>>>(C, R, n, c.acc);
  else
    ErrorSums<3><<<1024, 256, 0, c.s>>>(C, R, n, c.acc);
  double h[3];
  CK(cudaMemcpyAsync(h, c.acc, sizeof(h), cudaMemcpyDeviceToHost, c.s));
  CK(cudaStreamSynchronize(c.s));
  if (h[2] > 0) return INFINITY;
  return std::sqrt(h[0] / std::max(h[1], 1e-300));
}

static Summary RunCase(Ctx& c, const Case& cs, const std::vector<Config>& cfgs) {
  const int M = cs.M, N = cs.N, K = cs.K, dt = cs.dtype;
  const bool ta = cs.layout & 2, tb = cs.layout & 1;
  const long long na = (long long)M * K, nb = (long long)K * N, nc = (long long)M * N;
  const int off = cs.misalign ? 1 : 0;
  u16 *A0, *B0, *C0, *Cinit;
  double *Ad, *Bd, *Cd;
  CK(cudaMalloc(&A0, (na + 8) * 2));
  CK(cudaMalloc(&B0, (nb + 8) * 2));
  CK(cudaMalloc(&C0, (nc + 8) * 2));
  CK(cudaMalloc(&Cinit, (nc + 8) * 2));
  CK(cudaMalloc(&Ad, na * 8));
  CK(cudaMalloc(&Bd, nb * 8));
  CK(cudaMalloc(&Cd, nc * 8));
  u16 *A = A0 + off, *B = B0 + off, *C = C0 + off;
  const unsigned seed = M * 131u + N * 7u + K;
  if (dt == 2) {
    FillRandom<2><<<1024, 256, 0, c.s>>>(A, na, seed);
    FillRandom<2><<<1024, 256, 0, c.s>>>(B, nb, seed + 1);
    FillRandom<2><<<1024, 256, 0, c.s>>>(Cinit, nc, seed + 2);
    Widen<2><<<1024, 256, 0, c.s>>>(A, Ad, na);
    Widen<2><<<1024, 256, 0, c.s>>>(B, Bd, nb);
    Widen<2><<<1024, 256, 0, c.s>>>(Cinit, Cd, nc);
  } else {
    FillRandom<3><<<1024, 256, 0, c.s>>>(A, na, seed);
    FillRandom<3><<<1024, 256, 0, c.s>>>(B, nb, seed + 1);
    FillRandom<3><<<1024, 256, 0, c.s>>>(Cinit, nc, seed + 2);
    Widen<3><<<1024, 256, 0, c.s>>>(A, Ad, na);
    Widen<3><<<1024, 256, 0, c.s>>>(B, Bd, nb);
    Widen<3><<<1024, 256, 0, c.s>>>(Cinit, Cd, nc);
  }
  const float alpha = 1.0f, beta = cs.beta;
  // Column-major view: C^T (N x M) = op(B)^T op(A)^T.
  const cublasOperation_t opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = tb ? K : N, lda = ta ? M : K;
  {
    const double da = alpha, db = beta;
    CB(cublasDgemm(c.blas, opB, opA, N, M, K, &da, Bd, ldb, Ad, lda, &db, Cd, N));
  }
  const cudaDataType_t ty = dt == 2 ? CUDA_R_16BF : CUDA_R_16F;
  auto reset_c = [&]() {
    if (beta != 0.0f)
      CK(cudaMemcpyAsync(C, Cinit, nc * 2, cudaMemcpyDeviceToDevice, c.s));
    else
      CK(cudaMemsetAsync(C, 0xff, nc * 2, c.s));  // NaN: must not be read
  };
  auto cublas = [&]() {
    CB(cublasGemmEx(c.blas, opB, opA, N, M, K, &alpha, B, ty, ldb, A, ty, lda, &beta, C, ty, N,
                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  Summary sm{cs, 0, 0, NAN, {}, 0};
  reset_c();
  cublas();
  sm.cublas_err = RelErr(c, dt, C, Cd, nc);
  const double flops = 2.0 * M * N * K;
  const int reps = 20, warm = 3;
  std::vector<float> cub_all;

  // cuBLASLt: best of the heuristic's top 8 (aligned cases only).
  if (cs.time && !cs.misalign) {
    cublasLtMatmulDesc_t op;
    CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opB, sizeof(opB)));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opA, sizeof(opA)));
    cublasLtMatrixLayout_t la, lb, lc;
    CB(cublasLtMatrixLayoutCreate(&la, ty, tb ? K : N, tb ? N : K, ldb));
    CB(cublasLtMatrixLayoutCreate(&lb, ty, ta ? M : K, ta ? K : M, lda));
    CB(cublasLtMatrixLayoutCreate(&lc, ty, N, M, N));
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &c.ws_bytes, sizeof(c.ws_bytes)));
    cublasLtMatmulHeuristicResult_t heur[8];
    int found = 0;
    cublasLtMatmulAlgoGetHeuristic(c.lt, op, la, lb, lc, lc, pref, 8, heur, &found);
    double best = INFINITY;
    for (int i = 0; i < found; ++i) {
      auto run = [&]() {
        cublasLtMatmul(c.lt, op, &alpha, B, la, A, lb, &beta, C, lc, C, lc, &heur[i].algo, c.ws,
                       c.ws_bytes, c.s);
      };
      run();
      if (cudaStreamSynchronize(c.s) != cudaSuccess) continue;
      best = std::min(best, Median(TimeIt(c, run, 10)));
    }
    sm.lt_ms = best;
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
  }

  for (const Config& k : cfgs) {
    if (k.dtype != dt || k.layout != cs.layout) continue;
    reset_c();
    k.launch(M, N, K, alpha, A, B, beta, C, c.s);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(c.s));
    Result r{k.name, RelErr(c, dt, C, Cd, nc), NAN, NAN};
    const bool pass = r.err <= 2.0 * sm.cublas_err + 1e-7;
    if (!pass) ++sm.fails;
    if (cs.time) {
      for (int i = 0; i < warm; ++i) {
        k.launch(M, N, K, alpha, A, B, beta, C, c.s);
        cublas();
      }
      std::vector<float> tk, tc;
      for (int i = 0; i < reps; ++i) {  // interleaved
        tk.push_back(TimeIt(c, [&]() { k.launch(M, N, K, alpha, A, B, beta, C, c.s); }, 1)[0]);
        tc.push_back(TimeIt(c, cublas, 1)[0]);
      }
      CK(cudaGetLastError());
      r.ms = Median(tk);
      r.tf = flops / r.ms * 1e-9;
      const double cm = Median(tc);
      cub_all.insert(cub_all.end(), tc.begin(), tc.end());
      printf("  %-4s %s %5d %5d %5d %s b=%.1f %-34s err %.3e (cublas %.3e) %s  %8.4f ms %7.1f TF | cublas %8.4f ms %7.1f TF | ratio %.3f\n",
             dt == 2 ? "bf16" : "f16", kLayout[cs.layout], M, N, K, cs.misalign ? "mis" : "al ",
             beta, k.name.c_str(), r.err, sm.cublas_err, pass ? "PASS" : "FAIL", r.ms, r.tf, cm,
             flops / cm * 1e-9, cm / r.ms);
    } else {
      printf("  %-4s %s %5d %5d %5d %s b=%.1f %-34s err %.3e (cublas %.3e) %s\n",
             dt == 2 ? "bf16" : "f16", kLayout[cs.layout], M, N, K, cs.misalign ? "mis" : "al ",
             beta, k.name.c_str(), r.err, sm.cublas_err, pass ? "PASS" : "FAIL");
    }
    fflush(stdout);
    sm.results.push_back(r);
  }
  sm.cublas_ms = Median(cub_all);
  CK(cudaFree(A0));
  CK(cudaFree(B0));
  CK(cudaFree(C0));
  CK(cudaFree(Cinit));
  CK(cudaFree(Ad));
  CK(cudaFree(Bd));
  CK(cudaFree(Cd));
  return sm;
}

static std::vector<Case> DefaultCases() {
  const int suite[][3] = {{512, 512, 512},    {1024, 1024, 1024}, {2048, 2048, 2048},
                          {4096, 4096, 4096}, {8192, 8192, 8192}, {1000, 1000, 1000},
                          {4097, 4097, 4097}, {16, 4096, 4096},   {128, 4096, 4096},
                          {4096, 11008, 4096}, {8192, 128, 8192}, {4096, 4096, 64},
                          {1, 1, 1},          {7, 5, 3},          {100, 200, 37},
                          {3000, 2000, 1500}, {1000, 1000, 1003}};
  std::vector<Case> v;
  for (int dt : {2, 3})
    for (auto& s : suite) v.push_back({s[0], s[1], s[2], 0, dt, false, 0.0f, true});
  // The other layouts.
  const int lay[][3] = {{7, 5, 3},       {100, 200, 37},   {1000, 1000, 1003},
                        {4096, 4096, 4096}, {16, 4096, 4096}, {4097, 4097, 4097}};
  for (int dt : {2, 3})
    for (int l = 1; l < 4; ++l)
      for (auto& s : lay) v.push_back({s[0], s[1], s[2], l, dt, false, 0.0f, true});
  // Misaligned pointers and beta != 0 (every layout: correctness; NN and NT: timed).
  const int mis[][3] = {{1, 1, 1}, {7, 5, 3}, {100, 200, 37}, {1000, 1000, 1003}, {512, 512, 512}};
  for (int dt : {2, 3})
    for (int l = 0; l < 4; ++l)
      for (auto& s : mis) {
        v.push_back({s[0], s[1], s[2], l, dt, true, 0.5f, false});
        v.push_back({s[0], s[1], s[2], l, dt, false, 0.5f, false});
      }
  for (int dt : {2, 3}) {
    v.push_back({4096, 4096, 4096, 0, dt, true, 0.0f, true});
    v.push_back({4096, 4096, 4096, 0, dt, false, 0.5f, true});
  }
  // K = 1..7 (the bounds-checked path for NN).
  for (int dt : {2, 3})
    for (int k = 1; k <= 7; ++k) v.push_back({33, 65, k, 0, dt, false, 0.0f, false});
  return v;
}

int main(int argc, char** argv) {
  std::vector<Case> cases;
  if (argc > 1) {
    for (int i = 1; i + 2 < argc; i += 3)
      for (int dt : {2, 3})
        cases.push_back({atoi(argv[i]), atoi(argv[i + 1]), atoi(argv[i + 2]), 0, dt, false, 0.0f, true});
  } else {
    cases = DefaultCases();
  }
  Ctx c;
  CK(cudaStreamCreate(&c.s));
  CB(cublasCreate(&c.blas));
  CB(cublasSetStream(c.blas, c.s));
  CB(cublasLtCreate(&c.lt));
  CK(cudaMalloc(&c.flush, c.flush_bytes));
  CK(cudaMalloc(&c.ws, c.ws_bytes));
  CK(cudaMalloc(&c.acc, 3 * sizeof(double)));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int ver = 0;
  cublasGetVersion(c.blas, &ver);
  printf("device %s (sm_%d%d), cuBLAS %d\n", prop.name, prop.major, prop.minor, ver);
  const auto cfgs = AllConfigs();
  std::vector<Summary> all;
  int fails = 0;
  for (const Case& cs : cases) {
    printf("case %s %s M=%d N=%d K=%d %s beta=%.1f\n", cs.dtype == 2 ? "bf16" : "f16",
           kLayout[cs.layout], cs.M, cs.N, cs.K, cs.misalign ? "misaligned(+1)" : "aligned", cs.beta);
    fflush(stdout);
    all.push_back(RunCase(c, cs, cfgs));
    fails += all.back().fails;
  }
  printf("\n## Best config per timed case\n\n");
  printf("| type | layout | M | N | K | ptrs | beta | best config | TFLOPS | cuBLAS TFLOPS | ratio | cuBLASLt best-of-8 TFLOPS | ratio vs Lt | max err / cuBLAS err |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Summary& s : all) {
    if (!s.cs.time || s.results.empty()) continue;
    const Result* b = nullptr;
    double worst = 0;
    for (const Result& r : s.results) {
      if (r.err > 2.0 * s.cublas_err + 1e-7) continue;
      if (!b || r.ms < b->ms) b = &r;
      worst = std::max(worst, r.err / std::max(s.cublas_err, 1e-30));
    }
    if (!b) continue;
    const double fl = 2.0 * s.cs.M * s.cs.N * s.cs.K;
    printf("| %s | %s | %d | %d | %d | %s | %.1f | %s | %.1f | %.1f | %.3f | %s | %s | %.2f |\n",
           s.cs.dtype == 2 ? "bf16" : "f16", kLayout[s.cs.layout], s.cs.M, s.cs.N, s.cs.K,
           s.cs.misalign ? "+1" : "al", s.cs.beta, b->cfg.c_str(), b->tf, fl / s.cublas_ms * 1e-9,
           s.cublas_ms / b->ms,
           std::isfinite(s.lt_ms) ? std::to_string(fl / s.lt_ms * 1e-9).substr(0, 6).c_str() : "-",
           std::isfinite(s.lt_ms) ? std::to_string(s.lt_ms / b->ms).substr(0, 5).c_str() : "-",
           worst);
  }
  printf("\nFAILS: %d\n", fails);
  return fails != 0;
}
