// Host conversions between fp32 and the 16-bit element types of the GEMM
// problems (tuner.proto DTYPE_BF16, DTYPE_F16, and the inputs of
// DTYPE_BF16_F32, DTYPE_F16_F32), as the bits a device buffer holds: for
// random inputs, references and checks on the host.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "tuned/dtype.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// `f` rounded to the nearest value of `dtype`'s input type, ties to even
/// (cuda_bf16.h's __float2bfloat16_rn, cuda_fp16.h's __float2half_rn), as
/// its bits; any input type other than DTYPE_BF16 is taken as DTYPE_F16.
inline uint16_t Narrow16(float f, v1::DType dtype) {
  if (InputDType(dtype) == v1::DTYPE_BF16) return __nv_bfloat16_raw(__float2bfloat16_rn(f)).x;
  return __half_raw(__float2half_rn(f)).x;
}

/// The value of `bits` of `dtype`'s input type in fp32 (exact).
inline float Widen16(uint16_t bits, v1::DType dtype) {
  if (InputDType(dtype) == v1::DTYPE_BF16) {
    __nv_bfloat16_raw raw;
    raw.x = bits;
    return __bfloat162float(__nv_bfloat16(raw));
  }
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

}  // namespace tuned
