// The kernel that checks a GEMM output against the fp64 reference (sgemm
// outside MATH_IEEE_FP32, and the 16-bit forms), as NVRTC source, and its
// launch; the reference itself, with a problem's epilogue; and the GELU
// pass of EPILOGUE_BIAS_GELU_ERF's baseline, which cuBLASLt lacks. The
// sources are apart so that CI (no GPU) compiles them (tests/compile_test.cc).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// fp64_err2<DTYPE>(c, r, n, out): *out += sum over i < n of ((double)c[i] -
/// r[i])^2, c of DTYPE (tuner.proto DType: 1 fp32, 2 BF16, 3 FP16; the
/// 16-bit ones as their bits) and r fp64, both n elements; grid-stride, each
/// block's sum (a warp-shuffle reduction, then one per warp through shared
/// memory) added with one double atomicAdd (sm_60+). NaN and infinity in c
/// propagate. Launch with kFp64CheckThreads threads per block; *out must be
/// 0 before.
inline constexpr std::string_view kFp64CheckSource = R"(
template <int DTYPE>
__device__ __forceinline__ double fp64_widen(const void* c, long long i) {
  if constexpr (DTYPE == 1) {
    return (double)static_cast<const float*>(c)[i];
  } else if constexpr (DTYPE == 2) {
    return (double)__uint_as_float((unsigned)static_cast<const unsigned short*>(c)[i] << 16);
  } else {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<const unsigned short*>(c)[i]));
    return (double)f;
  }
}

template <int DTYPE>
__global__ void __launch_bounds__(256) fp64_err2(const void* __restrict__ c,
                                                 const double* __restrict__ r, long long n,
                                                 double* out) {
  __shared__ double warp_sums[8];
  double s = 0;
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) {
    const double d = fp64_widen<DTYPE>(c, i) - r[i];
    s += d * d;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int w = 0; w < 8; ++w) t += warp_sums[w];
    atomicAdd(out, t);
  }
}
)";

/// Its name expression for `dtype` (DTYPE_F32, BF16 or F16), e.g.
/// "fp64_err2<2>", for NVRTC; and its block size.
inline std::string Fp64CheckName(v1::DType dtype) {
  return "fp64_err2<" + std::to_string(dtype == v1::DTYPE_UNSPECIFIED ? 1 : static_cast<int>(dtype)) + ">";
}
inline constexpr int kFp64CheckThreads = 256;

/// ||c - r||_F^2 in double, on `stream` (synchronized): c `n` elements of
/// `dtype`, r fp64; `sum` one device double of scratch. The kernel is
/// compiled by NVRTC for the current GPU once per process and dtype.
/// INTERNAL where it does not compile or load; a CUDA error as its status.
absl::StatusOr<double> Fp64Err2(const void* c, const double* r, long long n, double* sum,
                                v1::DType dtype, cudaStream_t stream);

/// gelu_erf<DTYPE>(c, n): c[i] = 0.5 c[i] (1 + erf(c[i] / sqrt(2))) in fp32
/// for i < n, c of DTYPE (tuner.proto DType: 1 fp32, 2 BF16, 3 FP16, as
/// their bits, rounded to nearest even); grid-stride, kFp64CheckThreads
/// threads a block. What EPILOGUE_BIAS_GELU_ERF's baseline applies after
/// cuBLASLt's bias epilogue.
inline constexpr std::string_view kGeluErfSource = R"(
template <int DTYPE>
__global__ void __launch_bounds__(256) gelu_erf(void* __restrict__ c, long long n) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) {
    float x;
    unsigned short* h = static_cast<unsigned short*>(c);
    if constexpr (DTYPE == 1) {
      x = static_cast<float*>(c)[i];
    } else if constexpr (DTYPE == 2) {
      x = __uint_as_float((unsigned)h[i] << 16);
    } else {
      asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h[i]));
    }
    const float y = 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    if constexpr (DTYPE == 1) {
      static_cast<float*>(c)[i] = y;
    } else if constexpr (DTYPE == 2) {
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h[i]) : "f"(y));
    } else {
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h[i]) : "f"(y));
    }
  }
}
)";

/// "gelu_erf<DTYPE>" for `dtype` (C's type: DTYPE_F32, BF16 or F16).
inline std::string GeluErfName(v1::DType dtype) {
  return "gelu_erf<" + std::to_string(static_cast<int>(dtype)) + ">";
}

/// Applies GELU (erf form) in place to the `n` elements of `dtype` at `c`
/// on `stream` (kGeluErfSource, compiled for the current GPU once per
/// process and dtype). INTERNAL where it does not compile or load; a CUDA
/// error as its status.
absl::Status GeluErfInPlace(void* c, long long n, v1::DType dtype, cudaStream_t stream);

/// The fp64 reference of a row-major GEMM: ref = op(A) op(B) (m x n, on the
/// device) by cuBLAS DGEMM (as RowMajorGemm) from `a` and `b`, the inputs
/// widened to double on the host and stored in `layout`, and *norm its
/// Frobenius norm (cublasDnrm2). The device copies of `a` and `b` are freed
/// before it returns; synchronizes. RESOURCE_EXHAUSTED where they do not
/// fit; a CUDA or cuBLAS error as its status.
absl::Status Fp64Reference(cublasHandle_t handle, int m, int n, int k, v1::Layout layout,
                           const std::vector<double>& a, const std::vector<double>& b, double* ref,
                           double* norm);

/// Applies `epilogue` (tuner.proto Epilogue) in fp64 to the m x n reference
/// at `ref` (on the device; row-major): + bias[j] in column j, then ReLU,
/// GELU's tanh form or GELU (std::tanh, std::erf), on the host; *norm its
/// new Frobenius norm. Synchronizes. INVALID_ARGUMENT unless `bias` has n
/// values; a CUDA error as its status.
absl::Status Fp64ApplyEpilogue(double* ref, int m, int n, const std::vector<double>& bias,
                               v1::Epilogue epilogue, double* norm);

}  // namespace tuned
