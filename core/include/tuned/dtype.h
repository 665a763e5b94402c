// The GEMM problems' element types (tuner.proto DType): the input type, of
// A and B, and the output type, of C, of each; no CUDA header, so that the
// families (which compile kernels, not run them) use it too.
#pragma once

#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// A GEMM dtype's input type, of A and B: DTYPE_BF16 for DTYPE_BF16_F32,
/// DTYPE_F16 for DTYPE_F16_F32, else `dtype` itself (tuner.proto DType).
inline v1::DType InputDType(v1::DType dtype) {
  if (dtype == v1::DTYPE_BF16_F32) return v1::DTYPE_BF16;
  if (dtype == v1::DTYPE_F16_F32) return v1::DTYPE_F16;
  return dtype;
}

/// A GEMM dtype's output type, of C: DTYPE_F32 for DTYPE_BF16_F32 and
/// DTYPE_F16_F32, else `dtype` itself.
inline v1::DType OutputDType(v1::DType dtype) {
  return dtype == v1::DTYPE_BF16_F32 || dtype == v1::DTYPE_F16_F32 ? v1::DTYPE_F32 : dtype;
}

/// Whether `dtype` is one of sgemm's 16-bit forms (16-bit A and B:
/// DTYPE_BF16, DTYPE_F16, DTYPE_BF16_F32, DTYPE_F16_F32).
inline bool Is16BitGemm(v1::DType dtype) {
  const v1::DType in = InputDType(dtype);
  return in == v1::DTYPE_BF16 || in == v1::DTYPE_F16;
}

/// Bytes of one element of `dtype` (DTYPE_F32 and unknown types: 4).
inline int ElementBytes(v1::DType dtype) {
  return dtype == v1::DTYPE_BF16 || dtype == v1::DTYPE_F16 ? 2 : 4;
}

}  // namespace tuned
