// BF16 / FP16 values as the 16-bit GEMM kernels hold them: an element's
// bits in an unsigned short (DTYPE 2: BF16, 3: FP16, tuner.proto's
// DTYPE_BF16 / DTYPE_F16), converted to and from fp32.
//
// A part compiled before gemm16_simt.cuh, mma16.cuh and wgmma16.cuh (no
// #include); names in namespace half16.

namespace half16 {

// An element widened to fp32: BF16 is the top half of an fp32; FP16
// converts exactly (PTX cvt.f32.f16).
template <int DTYPE>
__device__ __forceinline__ float Widen(unsigned short bits) {
  if constexpr (DTYPE == 2) {
    return __uint_as_float(static_cast<unsigned>(bits) << 16);
  } else {
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(bits));
    return f;
  }
}

// fp32 rounded to the nearest 16-bit value, ties to even (PTX cvt.rn).
template <int DTYPE>
__device__ __forceinline__ unsigned short Narrow(float f) {
  unsigned short bits;
  if constexpr (DTYPE == 2) {
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(bits) : "f"(f));
  } else {
    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(bits) : "f"(f));
  }
  return bits;
}

// {lo, hi} rounded to nearest even as two 16-bit values in one word (lo in
// bits 0..15).
template <int DTYPE>
__device__ __forceinline__ unsigned Pack(float lo, float hi) {
  unsigned r;
  if constexpr (DTYPE == 2) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

}  // namespace half16
