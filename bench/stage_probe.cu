// What staging a misaligned operand costs and buys: at a pitch TMA cannot
// take (rows of 4097 16-bit or fp32 elements are not a multiple of 16
// bytes), time the row-padding copy of A and B (cudaMemcpy2DAsync into rows
// rounded up to 16 bytes) and cuBLAS on the padded copies, against cuBLAS on
// the operands as they are. Median of ROUNDS runs timed with CUDA events, L2
// flushed (a 256 MiB memset) before each run, inputs random.
//
// With --copies it compares forms of the copy itself on A and B, each
// checked byte for byte against cudaMemcpy2DAsync's: cudaMemcpy2DAsync one
// after the other on one stream (what the launchers do), the two on two
// streams at once, and StageRows below (a warp a row, 16-byte stores, each
// from two aligned 16-byte loads shifted by the row's misalignment).
//
// nvcc -std=c++17 -O3 -arch=sm_90a bench/stage_probe.cu -lcublas -o stage_probe
// ./stage_probe [--copies] [n ...]   (default 4097)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "probe_check.h"  // CK, CB

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

// Rows of `row` bytes at pitch `sp` (any base, 2-byte aligned or more)
// into rows at pitch `dp` (16-byte aligned base, dp % 16 == 0, dp >= row
// rounded up to 16): a warp a row, lane l the 16-byte units l, l + 32, ...
// Unit u is bytes [16u, 16u + 16) of the row, which lie in the aligned
// chunks u and u + 1 from the row's base rounded down to 16 bytes, shifted
// by the base's misalignment `mis`; chunk u + 1 is read only where it holds
// a byte of the row. The last unit's bytes past the row land in the pad.
__global__ void StageRows(const unsigned char* src, size_t sp, unsigned char* dst, size_t dp,
                          size_t row, int rows) {
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  const int units = static_cast<int>((row + 15) / 16);
  for (int r = blockIdx.x * warps + threadIdx.x / 32; r < rows; r += gridDim.x * warps) {
    const unsigned char* s = src + static_cast<size_t>(r) * sp;
    const unsigned mis = static_cast<unsigned>(reinterpret_cast<uintptr_t>(s) & 15);
    const uint4* chunk = reinterpret_cast<const uint4*>(s - mis);
    uint4* d = reinterpret_cast<uint4*>(dst + static_cast<size_t>(r) * dp);
    for (int u = lane; u < units; u += 32) {
      const uint4 lo = __ldg(chunk + u);
      const bool second = mis != 0 && 16ull * u + 16 < mis + row;
      const uint4 hi = second ? __ldg(chunk + u + 1) : make_uint4(0, 0, 0, 0);
      const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      const unsigned q = mis / 4, t = 8 * (mis % 4);
      unsigned o[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        // Word q + j and the next, by a uniform switch (no local memory).
        unsigned a = 0, b = 0;
        switch (q) {
          case 0: a = w[j]; b = w[j + 1]; break;
          case 1: a = w[j + 1]; b = w[j + 2]; break;
          case 2: a = w[j + 2]; b = w[j + 3]; break;
          default: a = w[j + 3]; b = j + 4 < 8 ? w[j + 4] : 0; break;
        }
        o[j] = __funnelshift_r(a, b, t);
      }
      d[u] = make_uint4(o[0], o[1], o[2], o[3]);
    }
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

// The copy forms on A and B of n x n elements of `elem` bytes, each base
// one element off a 16-byte boundary too (a view's), checked against
// cudaMemcpy2DAsync's copy byte for byte.
static void CompareCopies(int n, int elem) {
  const size_t row = size_t(n) * elem, pitch = (row + 15) / 16 * 16;
  unsigned char *src[2], *dst[2], *want[2];
  for (int i = 0; i < 2; ++i) {
    CK(cudaMalloc(&src[i], row * n + 16));
    CK(cudaMalloc(&dst[i], pitch * n));
    CK(cudaMalloc(&want[i], pitch * n));
    Fill<<<1024, 256>>>(src[i], row * n + 16, 2, 7 + i);
  }
  CK(cudaGetLastError());
  cudaStream_t side;
  cudaEvent_t fork, join;
  CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (size_t off : {size_t{0}, size_t(elem)}) {
    const unsigned char* a = src[0] + off;
    const unsigned char* b = src[1] + off;
    auto memcpy2d = [&](unsigned char* const* out, cudaStream_t s0, cudaStream_t s1) {
      CK(cudaMemcpy2DAsync(out[0], pitch, a, row, row, n, cudaMemcpyDeviceToDevice, s0));
      CK(cudaMemcpy2DAsync(out[1], pitch, b, row, row, n, cudaMemcpyDeviceToDevice, s1));
    };
    memcpy2d(want, nullptr, nullptr);
    const float one_stream = TimeMs([&] { memcpy2d(dst, nullptr, nullptr); });
    const float two_streams = TimeMs([&] {
      CK(cudaEventRecord(fork, nullptr));
      CK(cudaStreamWaitEvent(side, fork));
      memcpy2d(dst, nullptr, side);
      CK(cudaEventRecord(join, side));
      CK(cudaStreamWaitEvent(nullptr, join));
    });
    const int blocks = std::min((n + 7) / 8, sms * 8);
    auto rows = [&] {
      StageRows<<<blocks, 256>>>(a, row, dst[0], pitch, row, n);
      StageRows<<<blocks, 256>>>(b, row, dst[1], pitch, row, n);
      CK(cudaGetLastError());
    };
    CK(cudaMemset(dst[0], 0xff, pitch * n));
    rows();
    CK(cudaDeviceSynchronize());
    std::vector<unsigned char> got(pitch * n), ref(pitch * n);
    size_t wrong = 0;
    for (int i = 0; i < 2; ++i) {
      CK(cudaMemcpy(got.data(), dst[i], pitch * n, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(ref.data(), want[i], pitch * n, cudaMemcpyDeviceToHost));
      for (int r = 0; r < n; ++r) {
        wrong += std::memcmp(got.data() + r * pitch, ref.data() + r * pitch, row) != 0;
      }
    }
    const float kernel = TimeMs(rows);
    const double bytes = 4.0 * row * n;  // A and B, read and written
    std::printf("copies n=%d elem=%dB base+%zu  memcpy2d %.3f ms (%.0f GB/s)  two streams %.3f ms "
                "(%.0f GB/s)  StageRows %.3f ms (%.0f GB/s, %zu wrong rows)\n",
                n, elem, off, one_stream, bytes / one_stream / 1e6, two_streams,
                bytes / two_streams / 1e6, kernel, bytes / kernel / 1e6, wrong);
  }
  for (int i = 0; i < 2; ++i) {
    CK(cudaFree(src[i]));
    CK(cudaFree(dst[i]));
    CK(cudaFree(want[i]));
  }
  CK(cudaStreamDestroy(side));
  CK(cudaEventDestroy(fork));
  CK(cudaEventDestroy(join));
}

int main(int argc, char** argv) {
  std::vector<int> ns;
  bool copies = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--copies") == 0) {
      copies = true;
    } else {
      ns.push_back(std::atoi(argv[i]));
    }
  }
  if (ns.empty()) ns.push_back(4097);
  CK(cudaMalloc(&flush_buf, 256 << 20));
  if (copies) {
    for (int n : ns) {
      for (int elem : {2, 4}) CompareCopies(n, elem);
    }
    return 0;
  }
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
