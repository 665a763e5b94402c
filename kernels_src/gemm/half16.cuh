// BF16 / FP16 values as the 16-bit GEMM kernels hold them: an element's
// bits in an unsigned short (DTYPE 2: BF16, 3: FP16, tuner.proto's
// DTYPE_BF16 / DTYPE_F16), converted to and from fp32; and C's elements:
// of the inputs' type, or fp32 for DTYPE 4 and 5 (DTYPE_BF16_F32 and
// DTYPE_F16_F32: inputs BF16 and FP16, C float).
//
// A part compiled before gemm16_simt.cuh, mma16.cuh and wgmma16.cuh (no
// #include); names in namespace half16.

namespace half16 {

// A problem dtype's input type (2 or 3) and C's element type.
template <int DTYPE>
struct Elem {
  static constexpr int kIn = DTYPE;
  using C = unsigned short;
};
template <>
struct Elem<4> {
  static constexpr int kIn = 2;
  using C = float;
};
template <>
struct Elem<5> {
  static constexpr int kIn = 3;
  using C = float;
};
template <int DTYPE>
using CType = typename Elem<DTYPE>::C;

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

// ---- C's elements (DTYPE 2..5): fp32 rounded once to C's type, and back.
template <int DTYPE>
__device__ __forceinline__ CType<DTYPE> ToC(float f) {
  if constexpr (DTYPE >= 4) {
    return f;
  } else {
    return Narrow<DTYPE>(f);
  }
}
template <int DTYPE>
__device__ __forceinline__ float FromC(CType<DTYPE> c) {
  if constexpr (DTYPE >= 4) {
    return c;
  } else {
    return Widen<DTYPE>(c);
  }
}
// Two consecutive elements at `p` (aligned to 2 elements): one 32-bit
// access for 16 bits, one float2 for fp32.
template <int DTYPE>
__device__ __forceinline__ void StoreC2(CType<DTYPE>* p, float v0, float v1) {
  if constexpr (DTYPE >= 4) {
    *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
  } else {
    *reinterpret_cast<unsigned*>(p) = Pack<DTYPE>(v0, v1);
  }
}
template <int DTYPE>
__device__ __forceinline__ void LoadC2(const CType<DTYPE>* p, float& v0, float& v1) {
  if constexpr (DTYPE >= 4) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    v0 = v.x;
    v1 = v.y;
  } else {
    const unsigned w = *reinterpret_cast<const unsigned*>(p);
    v0 = Widen<DTYPE>(static_cast<unsigned short>(w & 0xffffu));
    v1 = Widen<DTYPE>(static_cast<unsigned short>(w >> 16));
  }
}
// Eight consecutive elements at `p` (16-byte aligned): one 16-byte access
// for 16 bits, two for fp32.
template <int DTYPE>
__device__ __forceinline__ void StoreC8(CType<DTYPE>* p, const float (&f)[8]) {
  if constexpr (DTYPE >= 4) {
    float4* q = reinterpret_cast<float4*>(p);
    q[0] = make_float4(f[0], f[1], f[2], f[3]);
    q[1] = make_float4(f[4], f[5], f[6], f[7]);
  } else {
    *reinterpret_cast<uint4*>(p) = make_uint4(Pack<DTYPE>(f[0], f[1]), Pack<DTYPE>(f[2], f[3]),
                                              Pack<DTYPE>(f[4], f[5]), Pack<DTYPE>(f[6], f[7]));
  }
}
template <int DTYPE>
__device__ __forceinline__ void LoadC8(const CType<DTYPE>* p, float (&f)[8]) {
  if constexpr (DTYPE >= 4) {
    const float4* q = reinterpret_cast<const float4*>(p);
    const float4 a = q[0], b = q[1];
    f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w;
    f[4] = b.x; f[5] = b.y; f[6] = b.z; f[7] = b.w;
  } else {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = Widen<DTYPE>(static_cast<unsigned short>(w[i] & 0xffffu));
      f[2 * i + 1] = Widen<DTYPE>(static_cast<unsigned short>(w[i] >> 16));
    }
  }
}

// ---- the fused epilogue (EPILOGUE, tuner.proto Epilogue): applied to C's
// element in column `col` once alpha * acc + beta * C_old is formed, before
// its rounding. 0: none; 1: + bias[col]; 2: ReLU of that; 3: GELU's tanh
// form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as cuBLASLt's
// CUBLASLT_EPILOGUE_GELU_BIAS and torch's gelu(approximate="tanh"); 4:
// GELU, 0.5 x (1 + erf(x / sqrt(2))), torch's gelu. `bias` holds N
// elements of C's type; a column past N (a tile's edge, whose store is
// dropped) reads none.
template <int EPILOGUE>
__device__ __forceinline__ float Activate(float x) {
  if constexpr (EPILOGUE == 2) {
    return fmaxf(x, 0.0f);
  } else if constexpr (EPILOGUE == 3) {
    const float u = 0.7978845608028654f * fmaf(0.044715f * x, x * x, x);  // sqrt(2/pi)
    return 0.5f * x * (1.0f + tanhf(u));
  } else if constexpr (EPILOGUE == 4) {
    return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));  // 1/sqrt(2)
  } else {
    return x;
  }
}
template <int DTYPE, int EPILOGUE>
__device__ __forceinline__ float Fuse(float v, const CType<DTYPE>* __restrict__ bias, int col,
                                      int N) {
  if constexpr (EPILOGUE == 0) {
    return v;
  } else {
    if (col < N) v += FromC<DTYPE>(bias[col]);
    return Activate<EPILOGUE>(v);
  }
}

}  // namespace half16
