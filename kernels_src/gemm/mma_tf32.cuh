// Row-major fp32 GEMM on tensor cores for tuned (family "sgemm", KIND 5,
// families/sgemm/mma.cc), sm_80 and up:
//
//   C(MxN) = alpha * op(A) * op(B) + beta * C,   ldc = N,
//
// in the operand layout LAYOUT (tuner.proto Layout, the last template
// argument): op(A) = A, A stored M x K (lda = K), or where LAYOUT & 2
// op(A) = A^T, A stored K x M (lda = M); op(B) = B, B stored K x N (ldb =
// N), or where LAYOUT & 1 op(B) = B^T, B stored N x K (ldb = K).
//
// with the signature of every sgemm kernel (kernels_src/sgemm/sgemm.cuh):
//
//   (int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
//
// Compiled at runtime by NVRTC appended to sgemm.cuh and warp.cuh (it uses
// sgemm_detail's CeilDiv and RasterTile; no #include), instantiated through a name
// expression, e.g. "sgemm_mma<128,128,32,64,64,3,1,3,8,1>".
// Correct for every M, N, K >= 1 with M*K, K*N, M*N < 2^31:
//  - every global load is predicated (out-of-range elements of a tile are
//    zero-filled by cp.async with a source size of 0, reading nothing) and
//    every store bounds-checked;
//  - 16-byte cp.async only on a block-uniform path chosen at run time (lda
//    and ldb multiples of 4, A and B 16-byte aligned), else 4-byte cp.async;
//  - beta == 0 never reads C (BLAS semantics); SPLITK > 1 adds alpha * acc
//    into C with atomics after the launcher set C to beta * C
//    (LaunchGeometry.prescale_output).
//
// The arithmetic: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, fp32
// accumulation. Each operand x is rounded to TF32 (10-bit mantissa) with
// cvt.rna.tf32.f32 (round to nearest, ties away from zero):
//  - PASSES = 1 (TF32): acc += big(a) * big(b);
//  - PASSES = 3 (3xTF32, the split of CUTLASS's OpMultiplyAddFastF32,
//    examples 27 and 28): big = tf32(x), small = tf32(x - big) (x - big is
//    exact in fp32), acc += small(a) * big(b) + big(a) * small(b), then
//    acc += big(a) * big(b); the dropped small(a) * small(b) is about
//    2^-22 of the product, so the result has about fp32's accuracy (less for
//    small K, where fp32 rounds few terms; more for large K).
//
// Tiling: a block computes a BM x BN tile of C with (BM/WM) x (BN/WN) warps,
// each a WM x WN warp tile of (WM/16) x (WN/8) m16n8k8 tiles. K advances BK
// at a time through a STAGES-deep cp.async pipeline in dynamic shared memory:
// per stage As[BM][BK+4] (A as in global memory, k contiguous) and
// Bs[BK][BN+8] (B as in global memory, n contiguous). The paddings make the
// fragment loads conflict-free: a warp's A fragment reads rows g (0..7) at
// columns t (0..3), banks g*(BK+4)+t mod 32, distinct for BK = 16 and 32;
// its B fragment reads rows t at columns g, banks t*(BN+8)+g, distinct for BN
// a multiple of 32. Each operand's tile is copied as it is stored: op(A) =
// A^T's as As[BK][BM+8] (m contiguous; A fragment banks t*(BM+8)+g,
// distinct for BM a multiple of 16), op(B) = B^T's as Bs[BN][BK+4] (k
// contiguous; banks g*(BK+4)+t, distinct), read through Tile::AOff and
// BOff. Fragments (PTX ISA, "Matrix fragments for mma.m16n8k8",
// .tf32; g = lane / 4, t = lane % 4): a0 = A[g][t], a1 = A[g+8][t],
// a2 = A[g][t+4], a3 = A[g+8][t+4]; b0 = B[t][g], b1 = B[t+4][g];
// c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1].
//
// Grid: x = ceil(M/BM) * ceil(N/BN) output tiles, visited GROUP tile-rows at
// a time (L2 reuse); y = SPLITK, each a contiguous range of the K tiles.
// Block: (BM/WM) * (BN/WN) * 32 threads; dynamic shared memory
// STAGES * (BM*(BK+4) + BK*(BN+8)) floats.

namespace sgemm_mma_detail {

// sgemm.cuh's helpers (this file is compiled appended to it).
using sgemm_detail::Aligned16;
using sgemm_detail::CeilDiv;
using sgemm_detail::CpAsync16;
using sgemm_detail::CpAsync4;
using sgemm_detail::CpAsyncCommit;
using sgemm_detail::CpAsyncWait;

// x rounded to TF32 (round to nearest, ties away), as the .b32 mma operand.
__device__ __forceinline__ unsigned Tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// big = tf32(x) and, for PASSES = 3, small = tf32(x - big).
template <int PASSES>
__device__ __forceinline__ void Split(float x, unsigned& big, unsigned& small) {
  big = Tf32(x);
  if constexpr (PASSES == 3) small = Tf32(x - __uint_as_float(big));
}

// d += a * b, one m16n8k8 TF32 tile, fp32 accumulation.
__device__ __forceinline__ void MmaTf32(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d = a * b (a fresh accumulator: C is zero), one m16n8k8 TF32 tile.
__device__ __forceinline__ void MmaTf32Fresh(float* d, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int PASSES, int LAYOUT = 0>
struct Tile {
  enum {
    THREADS = (BM / WM) * (BN / WN) * 32,
    WARPS_N = BN / WN,
    MI = WM / 16,  // m16 tiles of a warp tile
    NI = WN / 8,   // n8 tiles
    TA = (LAYOUT & 2) != 0,  // op(A) = A^T: A stored K x M
    TB = (LAYOUT & 1) != 0,  // op(B) = B^T: B stored N x K
    SA = TA ? BM + 8 : BK + 4,  // padded row strides, floats (see the file comment)
    SB = TB ? BK + 4 : BN + 8,
    A_STAGE = (TA ? BK : BM) * SA,
    B_STAGE = (TB ? BN : BK) * SB,
  };
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0, "warp tiling");
  static_assert(BK % 8 == 0 && STAGES >= 2 && (PASSES == 1 || PASSES == 3), "parameters");
  static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "even copies");

  // Offsets in a stage's tiles of A's element (m, k) and B's (k, n), as
  // they are stored in global memory (the file comment's layouts).
  static __device__ __forceinline__ constexpr int AOff(int m, int k) {
    return TA ? k * SA + m : m * SA + k;
  }
  static __device__ __forceinline__ constexpr int BOff(int k, int n) {
    return TB ? n * SB + k : k * SB + n;
  }

  // dst[r][c] (row pitch S floats) <- src[(r0 + r) * ld + c0 + c] for the
  // R x C tile (c contiguous in both), zero where r0 + r >= r_lim or c0 + c
  // >= c_lim: THREADS threads, 16-byte copies (VEC: ld, c0 and c_lim
  // multiples of 4, src 16-byte aligned) or 4-byte ones.
  template <int R, int C, int S, bool VEC>
  static __device__ __forceinline__ void Copy(float* dst, const float* __restrict__ src, int ld,
                                              int r0, int c0, int r_lim, int c_lim, int tid) {
    if constexpr (VEC) {  // a 4-float chunk is all in or all out
#pragma unroll
      for (int i = 0; i < R * C / 4 / THREADS; ++i) {
        const int c = tid + i * THREADS, r = c / (C / 4), cc = (c % (C / 4)) * 4;
        const bool p = r0 + r < r_lim && c0 + cc < c_lim;
        CpAsync16(dst + r * S + cc, p ? src + static_cast<long long>(r0 + r) * ld + c0 + cc : src,
                  p);
      }
    } else {
#pragma unroll 4
      for (int i = 0; i < R * C / THREADS; ++i) {
        const int c = tid + i * THREADS, r = c / C, cc = c % C;
        const bool p = r0 + r < r_lim && c0 + cc < c_lim;
        CpAsync4(dst + r * S + cc, p ? src + static_cast<long long>(r0 + r) * ld + c0 + cc : src,
                 p);
      }
    }
  }

  // Stage `stage` <- K tile `kt` of the block's A rows and B columns
  // (A, B at the block's corner, lda and ldb their row pitches; rows, cols
  // left in M and N): each operand copied as it is stored (Copy).
  template <bool VEC>
  static __device__ __forceinline__ void Load(float* smem, int stage, int kt,
                                              const float* __restrict__ A,
                                              const float* __restrict__ B, int rows, int cols,
                                              int lda, int ldb, int K, int tid) {
    float* as = smem + stage * A_STAGE;
    float* bs = smem + STAGES * A_STAGE + stage * B_STAGE;
    const int k0 = kt * BK;
    if constexpr (TA) {
      Copy<BK, BM, SA, VEC>(as, A, lda, k0, 0, K, rows, tid);
    } else {
      Copy<BM, BK, SA, VEC>(as, A, lda, 0, k0, rows, K, tid);
    }
    if constexpr (TB) {
      Copy<BN, BK, SB, VEC>(bs, B, ldb, 0, k0, cols, K, tid);
    } else {
      Copy<BK, BN, SB, VEC>(bs, B, ldb, k0, 0, K, cols, tid);
    }
  }

  // acc += the stage's BK slice for the warp tile at (wm, wn) of the block.
  static __device__ __forceinline__ void Compute(const float* smem, int stage, int wm, int wn,
                                                 int g, int t, float (&acc)[MI][NI][4]) {
    const float* as = smem + stage * A_STAGE + AOff(wm, 0);
    const float* bs = smem + STAGES * A_STAGE + stage * B_STAGE + BOff(0, wn);
    // 3xTF32 holds one k8 step's fragments at a time: unrolled, ptxas loads
    // the whole stage's ahead and, with the fresh accumulators below, spills
    // (64x64 warp tiles spill even so: not in its space, sgemm.cc).
#pragma unroll(PASSES == 3 ? 1 : BK / 8)
    for (int kk = 0; kk < BK; kk += 8) {
      unsigned bbig[NI][2], bsmall[NI][2];
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        Split<PASSES>(bs[BOff(kk + t, ni * 8 + g)], bbig[ni][0], bsmall[ni][0]);
        Split<PASSES>(bs[BOff(kk + t + 4, ni * 8 + g)], bbig[ni][1], bsmall[ni][1]);
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const float* a = as + AOff(mi * 16 + g, kk + t);
        unsigned abig[4], asmall[4];
        Split<PASSES>(a[0], abig[0], asmall[0]);
        Split<PASSES>(a[AOff(8, 0)], abig[1], asmall[1]);
        Split<PASSES>(a[AOff(0, 4)], abig[2], asmall[2]);
        Split<PASSES>(a[AOff(8, 4)], abig[3], asmall[3]);
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          if constexpr (PASSES == 3) {
            // The k8 step's three products into a fresh accumulator, then one
            // IEEE (round-to-nearest) add into acc: the tensor cores' own
            // accumulation truncates, a bias that grew with K when acc was
            // the mma's C (7e-6 relative at K = 1000 on the H100, about
            // 2^-27 x K; tests/gpu_test.cc).
            float part[4];
            MmaTf32Fresh(part, asmall, bbig[ni]);
            MmaTf32(part, abig, bsmall[ni]);
            MmaTf32(part, abig, bbig[ni]);
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mi][ni][e] += part[e];
          } else {
            MmaTf32(acc[mi][ni], abig, bbig[ni]);
          }
        }
      }
    }
  }

  // The K tiles [kt0, kt1) through the pipeline (see the file comment).
  template <bool VEC>
  static __device__ __forceinline__ void KLoop(float* smem, const float* __restrict__ A,
                                               const float* __restrict__ B, int rows, int cols,
                                               int lda, int ldb, int K, int kt0, int kt1, int tid,
                                               int wm, int wn, int g, int t,
                                               float (&acc)[MI][NI][4]) {
    const int nk = kt1 - kt0;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < nk) Load<VEC>(smem, s, kt0 + s, A, B, rows, cols, lda, ldb, K, tid);
      CpAsyncCommit();
    }
    for (int i = 0; i < nk; ++i) {
      CpAsyncWait<STAGES - 2>();  // K tile i has landed (this thread's copies)
      __syncthreads();            // everyone's, and stage (i-1) % STAGES is free
      const int next = i + STAGES - 1;
      if (next < nk) {
        Load<VEC>(smem, next % STAGES, kt0 + next, A, B, rows, cols, lda, ldb, K, tid);
      }
      CpAsyncCommit();
      Compute(smem, i % STAGES, wm, wn, g, t, acc);
    }
    CpAsyncWait<0>();
  }
};

}  // namespace sgemm_mma_detail

// KIND=5: see the file comment. Parameters: BM x BN block tile, BK K tile,
// WM x WN warp tile, STAGES pipeline stages, SPLITK blocks along K per
// output tile, PASSES 1 (TF32) or 3 (3xTF32), GROUP tile-rows per raster
// group, MINB __launch_bounds__ minimum blocks per SM, LAYOUT the operand
// layout (tuner.proto Layout; see the file comment).
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK, int PASSES, int GROUP,
          int MINB, int LAYOUT = 0>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
    sgemm_mma(int M, int N, int K, float alpha, const float* __restrict__ A,
              const float* __restrict__ B, float beta, float* __restrict__ C) {
  using T = sgemm_mma_detail::Tile<BM, BN, BK, WM, WN, STAGES, PASSES, LAYOUT>;
  extern __shared__ __align__(16) float smem[];
  const int tiles_m = sgemm_mma_detail::CeilDiv(M, BM);
  const int tiles_n = sgemm_mma_detail::CeilDiv(N, BN);
  const int pid = blockIdx.x;
  int tile_m, tile_n;
  sgemm_detail::RasterTile<GROUP>(pid, tiles_m, tiles_n, tile_m, tile_n);
  if (tile_m >= tiles_m) return;
  int kt0, kt1;  // K tiles of this split
  if (!sgemm_detail::SplitKRange<SPLITK>(sgemm_detail::CeilDiv(K, BK), kt0, kt1)) return;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp / T::WARPS_N) * WM, wn = (warp % T::WARPS_N) * WN;
  const int bm = tile_m * BM, bn = tile_n * BN;
  const int rows = M - bm, cols = N - bn;
  const int lda = T::TA ? M : K, ldb = T::TB ? K : N;  // the operands' row pitches
  A += T::TA ? static_cast<long long>(bm) : static_cast<long long>(bm) * lda;
  B += T::TB ? static_cast<long long>(bn) * ldb : static_cast<long long>(bn);
  C += static_cast<long long>(bm) * N + bn;

  float acc[T::MI][T::NI][4];
#pragma unroll
  for (int mi = 0; mi < T::MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < T::NI; ++ni) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;
    }
  }
  const bool vec = ((lda | ldb) & 3) == 0 && sgemm_mma_detail::Aligned16(A) &&
                   sgemm_mma_detail::Aligned16(B);
  if (vec) {
    T::template KLoop<true>(smem, A, B, rows, cols, lda, ldb, K, kt0, kt1, tid, wm, wn, g, t,
                            acc);
  } else {
    T::template KLoop<false>(smem, A, B, rows, cols, lda, ldb, K, kt0, kt1, tid, wm, wn, g, t,
                             acc);
  }

  // Epilogue: c0, c1 at row g, c2, c3 at row g + 8; columns 2t and 2t + 1.
#pragma unroll
  for (int mi = 0; mi < T::MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = wm + mi * 16 + g + 8 * h;
      if (row >= rows) continue;
      float* crow = C + static_cast<long long>(row) * N;
#pragma unroll
      for (int ni = 0; ni < T::NI; ++ni) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int col = wn + ni * 8 + 2 * t + j;
          if (col >= cols) continue;
          const float v = alpha * acc[mi][ni][2 * h + j];
          if constexpr (SPLITK > 1) {
            atomicAdd(crow + col, v);
          } else {
            crow[col] = beta != 0.0f ? fmaf(beta, crow[col], v) : v;
          }
        }
      }
    }
  }
}
