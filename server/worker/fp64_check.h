// The kernel that checks an SGEMM output against the fp64 reference in the
// math modes other than MATH_IEEE_FP32 (server/worker/sgemm_problem.cc), as
// NVRTC source. Apart so that CI (no GPU) compiles it (tests/compile_test.cc).
#pragma once

#include <string_view>

namespace tuned {

/// fp64_err2(c, r, n, out): *out += sum over i < n of ((double)c[i] - r[i])^2,
/// c fp32 and r fp64, both n elements; grid-stride, each block's sum (a
/// warp-shuffle reduction, then one per warp through shared memory) added
/// with one double atomicAdd (sm_60+). NaN and infinity in c propagate.
/// Launch with kFp64CheckThreads threads per block; *out must be 0 before.
inline constexpr std::string_view kFp64CheckSource = R"(
__global__ void __launch_bounds__(256) fp64_err2(const float* __restrict__ c,
                                                 const double* __restrict__ r, long long n,
                                                 double* out) {
  __shared__ double warp_sums[8];
  double s = 0;
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) {
    const double d = (double)c[i] - r[i];
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

/// Its name expression, for NVRTC, and its block size.
inline constexpr std::string_view kFp64CheckName = "fp64_err2";
inline constexpr int kFp64CheckThreads = 256;

}  // namespace tuned
