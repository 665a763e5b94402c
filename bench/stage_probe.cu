// What staging a misaligned operand costs and buys: at a pitch TMA cannot
// take (rows of 4097 16-bit or fp32 elements are not a multiple of 16
// bytes), time the row-padding copy of A and B (cudaMemcpy2DAsync into rows
// rounded up to 16 bytes) and cuBLAS on the padded copies, against cuBLAS on
// the operands as they are. Median of ROUNDS runs timed with CUDA events, L2
// flushed (a 256 MiB memset) before each run, inputs random.
//
// nvcc -std=c++17 -O3 -arch=sm_90a bench/stage_probe.cu -lcublas -o stage_probe
// ./stage_probe [n ...]   (default 4097)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                    \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));             \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)
#define CB(x)                                                                  \
  do {                                                                         \
    cublasStatus_t s = (x);                                                    \
    if (s != CUBLAS_STATUS_SUCCESS) {                                          \
      std::fprintf(stderr, "%s: %s\n", #x, cublasGetStatusString(s));          \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

constexpr int ROUNDS = 20;

__global__ void Fill(unsigned char* p, size_t bytes, int elem, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < bytes / elem;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    const float v = float(h & 0xffff) / 65536.0f - 0.5f;
    if (elem == 2) reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
    else reinterpret_cast<float*>(p)[i] = v;
  }
}

static void* flush_buf;
static float TimeMs(const std::function<void()>& f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r < ROUNDS + 3; ++r) {
    CK(cudaMemsetAsync(flush_buf, r, 256 << 20));
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float t;
    CK(cudaEventElapsedTime(&t, a, b));
    if (r >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int main(int argc, char** argv) {
  std::vector<int> ns;
  for (int i = 1; i < argc; ++i) ns.push_back(std::atoi(argv[i]));
  if (ns.empty()) ns.push_back(4097);
  CK(cudaMalloc(&flush_buf, 256 << 20));
  cublasHandle_t h;
  CB(cublasCreate(&h));
  for (int n : ns) {
    for (int elem : {2, 4}) {
      const size_t row = size_t(n) * elem, pitch = (row + 15) / 16 * 16;
      const int ld = int(pitch / elem);
      unsigned char *a, *b, *c, *ap, *bp;
      CK(cudaMalloc(&a, row * n));
      CK(cudaMalloc(&b, row * n));
      CK(cudaMalloc(&c, row * n));
      CK(cudaMalloc(&ap, pitch * n));
      CK(cudaMalloc(&bp, pitch * n));
      Fill<<<1024, 256>>>(a, row * n, elem, 1);
      Fill<<<1024, 256>>>(b, row * n, elem, 2);
      CK(cudaGetLastError());
      const float one = 1, zero = 0;
      CB(cublasSetMathMode(h, elem == 2 ? CUBLAS_DEFAULT_MATH : CUBLAS_TF32_TENSOR_OP_MATH));
      auto gemm = [&](const void* x, const void* y, int l) {
        if (elem == 2) {
          CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, y, CUDA_R_16BF, l, x,
                          CUDA_R_16BF, l, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
        } else {
          CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float*)y, l,
                         (const float*)x, l, &zero, (float*)c, n));
        }
      };
      auto stage = [&]() {
        CK(cudaMemcpy2DAsync(ap, pitch, a, row, row, n, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy2DAsync(bp, pitch, b, row, row, n, cudaMemcpyDeviceToDevice));
      };
      const float t_asis = TimeMs([&] { gemm(a, b, n); });
      const float t_stage = TimeMs(stage);
      const float t_padded = TimeMs([&] { gemm(ap, bp, ld); });
      const float t_both = TimeMs([&] {
        stage();
        gemm(ap, bp, ld);
      });
      const double flop = 2.0 * n * double(n) * n;
      std::printf(
          "n=%d elem=%dB  cuBLAS as is %.3f ms (%.0f TF)  stage A+B %.3f ms (%.0f GB/s)  "
          "cuBLAS padded %.3f ms (%.0f TF)  stage+padded %.3f ms (%.0f TF, %.2fx as is)\n",
          n, elem, t_asis, flop / t_asis / 1e9, t_stage, 4.0 * row * n / t_stage / 1e6, t_padded,
          flop / t_padded / 1e9, t_both, flop / t_both / 1e9, t_asis / t_both);
      CK(cudaFree(a));
      CK(cudaFree(b));
      CK(cudaFree(c));
      CK(cudaFree(ap));
      CK(cudaFree(bp));
    }
  }
  return 0;
}
