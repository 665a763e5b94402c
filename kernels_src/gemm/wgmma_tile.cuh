// KIND 6's shared-memory-operand form (LA 1 and 2), Tile: A and B both
// wgmma operands in swizzled shared memory, staged through registers (see
// wgmma_tf32.cuh's comment). Compiled appended to wgmma_tf32.cuh.

namespace sgemm_wgmma_detail {

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int PASSES, int LAYOUT = 0>
struct Tile {
  enum : int {
    WGS_N = BN / WN,
    THREADS = (BM / WM) * (BN / WN) * 128,
    MI = WM / 64,   // m64 wgmmas per k8 step
    ACC = WN / 2,   // accumulators per thread of one m64 x WN wgmma
    ROWB = BK * 4,  // bytes of a K-major row
    A_BYTES = BM * ROWB,
    B_BYTES = BN * ROWB,
    SMALL = A_BYTES + B_BYTES,  // offset of the small copies (PASSES 3)
    STAGE_BYTES = (PASSES == 3 ? 2 : 1) * (A_BYTES + B_BYTES),
    KQ = BK / 4,  // float4s of a K-major row
    A_CHUNKS = BM * KQ / THREADS,  // float4s per thread per K tile
    B_CHUNKS = BN * KQ / THREADS,
    TA = (LAYOUT & 2) != 0,  // op(A) = A^T: A stored K x M, m contiguous
    TB = (LAYOUT & 1) != 0,  // op(B) = B^T: B stored N x K, k contiguous
  };
  static_assert(WM % 64 == 0 && BM % WM == 0 && BN % WN == 0, "warpgroup tiling");
  static_assert(WN == 64 || WN == 128 || WN == 256, "wgmma N");
  static_assert((BK == 16 || BK == 32) && STAGES >= 3 && (PASSES == 1 || PASSES == 3),
                "parameters");
  static_assert(BM * KQ % THREADS == 0 && BN * KQ % THREADS == 0, "even copies");
  static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "1024-byte aligned tiles");

  // One K tile's float4s of this thread.
  struct Regs {
    float4 a[A_CHUNKS];
    float4 b[B_CHUNKS];
  };

  // An operand's tile is ROWS rows (m of A, n of B) of BK floats in shared
  // memory, K-major. In global memory it is K-contiguous (A in NN, B^T's
  // storage in NT: KCONTIG) or rows-contiguous (B in NN, A^T's storage in
  // TN). Chunk c of a K-contiguous tile: row c / KQ, k quad c % KQ. Chunk c
  // of a rows-contiguous one (Q = ROWS / 4 quads of rows along a k): k
  // (c % 16) + 16 * (c / (16 * Q)), row quad (c / 16) % Q (see the file
  // comment).
  template <int Q>
  static __device__ __forceinline__ int KOf(int c) { return c % 16 + 16 * (c / (16 * Q)); }
  template <int Q>
  static __device__ __forceinline__ int QOf(int c) { return (c / 16) % Q; }

  // r <- this thread's chunks of the K tile at k0 of an operand (X at the
  // block's corner, ld its row pitch in global memory, lim its rows left in
  // M or N), zeros outside.
  template <int ROWS, bool KCONTIG, int CHUNKS, bool VEC>
  static __device__ __forceinline__ void LoadOperand(float4 (&r)[CHUNKS],
                                                     const float* __restrict__ X, int ld, int lim,
                                                     int K, int k0, int tid) {
#pragma unroll
    for (int i = 0; i < CHUNKS; ++i) {
      const int c = tid + i * THREADS;
      if constexpr (KCONTIG) {
        const int row = c / KQ, k = k0 + (c % KQ) * 4;
        const float* p = X + static_cast<long long>(row) * ld + k;
        if constexpr (VEC) {  // ld % 4 == 0: a quad is all in or all out
          r[i] = row < lim && k < K ? *reinterpret_cast<const float4*>(p)
                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        } else {
          const bool in = row < lim;
          r[i].x = in && k < K ? p[0] : 0.0f;
          r[i].y = in && k + 1 < K ? p[1] : 0.0f;
          r[i].z = in && k + 2 < K ? p[2] : 0.0f;
          r[i].w = in && k + 3 < K ? p[3] : 0.0f;
        }
      } else {
        const int k = k0 + KOf<ROWS / 4>(c), n = QOf<ROWS / 4>(c) * 4;
        const float* p = X + static_cast<long long>(k) * ld + n;
        if constexpr (VEC) {  // ld % 4 == 0: so is lim, a quad is all in or all out
          r[i] = k < K && n < lim ? *reinterpret_cast<const float4*>(p)
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        } else {
          const bool in = k < K;
          r[i].x = in && n < lim ? p[0] : 0.0f;
          r[i].y = in && n + 1 < lim ? p[1] : 0.0f;
          r[i].z = in && n + 2 < lim ? p[2] : 0.0f;
          r[i].w = in && n + 3 < lim ? p[3] : 0.0f;
        }
      }
    }
  }

  // r <- K tile at k0 of the block's A rows and B columns (A, B at the
  // block's corner, lda and ldb their row pitches; rows, cols left in M and
  // N), zeros outside.
  template <bool VEC>
  static __device__ __forceinline__ void Load(Regs& r, const float* __restrict__ A,
                                              const float* __restrict__ B, int rows, int cols,
                                              int lda, int ldb, int K, int k0, int tid) {
    LoadOperand<BM, !TA, A_CHUNKS, VEC>(r.a, A, lda, rows, K, k0, tid);
    LoadOperand<BN, TB, B_CHUNKS, VEC>(r.b, B, ldb, cols, K, k0, tid);
  }

  // The operand tile at byte OFF of `stage` <- r, rounded to TF32 (and
  // split, PASSES 3), swizzled; a rows-contiguous one transposed (4 scalar
  // stores a chunk).
  template <int ROWS, bool KCONTIG, int OFF, int CHUNKS>
  static __device__ __forceinline__ void StoreOperand(unsigned char* stage,
                                                      const float4 (&r)[CHUNKS], int tid) {
#pragma unroll
    for (int i = 0; i < CHUNKS; ++i) {
      const int c = tid + i * THREADS;
      if constexpr (KCONTIG) {
        const int off = OFF + Swizzle<ROWB>((c / KQ) * ROWB + (c % KQ) * 16);
        uint4 big, small;
        Split<PASSES>(r[i].x, big.x, small.x);
        Split<PASSES>(r[i].y, big.y, small.y);
        Split<PASSES>(r[i].z, big.z, small.z);
        Split<PASSES>(r[i].w, big.w, small.w);
        *reinterpret_cast<uint4*>(stage + off) = big;
        if constexpr (PASSES == 3) *reinterpret_cast<uint4*>(stage + SMALL + off) = small;
      } else {
        const int k = KOf<ROWS / 4>(c), n = QOf<ROWS / 4>(c) * 4;
        const float v[4] = {r[i].x, r[i].y, r[i].z, r[i].w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int off = OFF + Swizzle<ROWB>((n + j) * ROWB + k * 4);
          unsigned big, small;
          Split<PASSES>(v[j], big, small);
          *reinterpret_cast<unsigned*>(stage + off) = big;
          if constexpr (PASSES == 3) *reinterpret_cast<unsigned*>(stage + SMALL + off) = small;
        }
      }
    }
  }

  // Stage at `stage` (a 1024-byte aligned shared pointer) <- r: A's tile,
  // then B's at A_BYTES (StoreOperand).
  static __device__ __forceinline__ void Store(unsigned char* stage, const Regs& r, int tid) {
    StoreOperand<BM, !TA, 0>(stage, r.a, tid);
    StoreOperand<BN, TB, A_BYTES>(stage, r.b, tid);
  }

  // Issues (and commits, one group) the wgmmas of the stage at shared
  // address `stage` for the warpgroup tile at rows wm, columns wn of the
  // block: into acc (PASSES 1) or into the fresh part (PASSES 3).
  static __device__ __forceinline__ void Compute(unsigned stage, int wm, int wn,
                                                 float (&acc)[MI][ACC], float (&part)[MI][ACC]) {
    const unsigned a = stage + wm * ROWB, b = stage + A_BYTES + wn * ROWB;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      if constexpr (PASSES == 3) {
        Pin(part[mi]);
      } else {
        Pin(acc[mi]);
      }
    }
    WgmmaFence();
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const unsigned long long db = Descriptor<ROWB>(b + kk * 32);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const unsigned ak = a + mi * 64 * ROWB + kk * 32;
        const unsigned long long da = Descriptor<ROWB>(ak);
        if constexpr (PASSES == 3) {
          Wgmma<WN>::Run(part[mi], Descriptor<ROWB>(ak + SMALL), db, kk > 0 ? 1 : 0);
          Wgmma<WN>::Run(part[mi], da, Descriptor<ROWB>(b + SMALL + kk * 32), 1);
          Wgmma<WN>::Run(part[mi], da, db, 1);
        } else {
          Wgmma<WN>::Run(acc[mi], da, db, 1);
        }
      }
    }
    WgmmaCommit();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      if constexpr (PASSES == 3) {
        Pin(part[mi]);
      } else {
        Pin(acc[mi]);
      }
    }
  }

  // The K tiles [kt0, kt1) through the pipeline (see the file comment);
  // smem/base: the stages' generic pointer and shared address.
  template <bool VEC>
  static __device__ __forceinline__ void KLoop(unsigned char* smem, unsigned base,
                                               const float* __restrict__ A,
                                               const float* __restrict__ B, int rows, int cols,
                                               int lda, int ldb, int K, int kt0, int kt1, int tid,
                                               int wm, int wn, float (&acc)[MI][ACC]) {
    float part[MI][ACC];
    const int nk = kt1 - kt0;
    Regs r;
#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) {
      if (s < nk) {
        Load<VEC>(r, A, B, rows, cols, lda, ldb, K, (kt0 + s) * BK, tid);
        Store(smem + s * STAGE_BYTES, r, tid);
      }
    }
    if (STAGES - 2 < nk) {
      Load<VEC>(r, A, B, rows, cols, lda, ldb, K, (kt0 + STAGES - 2) * BK, tid);
    }
    FenceProxyAsync();
    __syncthreads();
    for (int i = 0; i < nk; ++i) {
      Compute(base + (i % STAGES) * STAGE_BYTES, wm, wn, acc, part);
      const int next = i + STAGES - 2;  // the tile in the registers
      if (next < nk) Store(smem + (next % STAGES) * STAGE_BYTES, r, tid);
      if (next + 1 < nk) {
        Load<VEC>(r, A, B, rows, cols, lda, ldb, K, (kt0 + next + 1) * BK, tid);
      }
      EndIteration(acc, part);
    }
    WgmmaWait<0>();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) Pin(acc[mi]);
  }

  // The end of an iteration (steps (4) and (5) of the file comment): wait
  // for the wgmmas of tile i - 1 (PASSES 1) or i (PASSES 3, then acc +=
  // part), make this thread's stores visible to the async proxy, barrier.
  static __device__ __forceinline__ void EndIteration(float (&acc)[MI][ACC],
                                                      float (&part)[MI][ACC]) {
    if constexpr (PASSES == 3) {
      WgmmaWait<0>();
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        Pin(part[mi]);
#pragma unroll
        for (int e = 0; e < ACC; ++e) acc[mi][e] += part[mi][e];
      }
    } else {
      WgmmaWait<1>();
    }
    FenceProxyAsync();
    __syncthreads();
  }

  // Iteration i of KLoop2 (LA = 2), whose register set (i + STAGES) % 2 is
  // P: tile i's wgmmas; r[P] (tile i + STAGES - 2) into its stage; tile
  // i + STAGES into r[P].
  template <int P, bool VEC>
  static __device__ __forceinline__ void Step2(unsigned char* smem, unsigned base,
                                               const float* __restrict__ A,
                                               const float* __restrict__ B, int rows, int cols,
                                               int lda, int ldb, int K, int kt0, int nk, int i,
                                               int tid, int wm, int wn, Regs (&r)[2],
                                               float (&acc)[MI][ACC], float (&part)[MI][ACC]) {
    Compute(base + (i % STAGES) * STAGE_BYTES, wm, wn, acc, part);
    const int next = i + STAGES - 2;  // the tile in r[P]
    if (next < nk) Store(smem + (next % STAGES) * STAGE_BYTES, r[P], tid);
    if (next + 2 < nk) {
      Load<VEC>(r[P], A, B, rows, cols, lda, ldb, K, (kt0 + next + 2) * BK, tid);
    }
    EndIteration(acc, part);
  }

  // KLoop with LA = 2 register sets (see the file comment): each global
  // load has two iterations to land. The sets are indexed by compile-time
  // constants only (else they would go to local memory): the loop is
  // unrolled by two, Step2<P> for the iterations whose set is P.
  template <bool VEC>
  static __device__ __forceinline__ void KLoop2(unsigned char* smem, unsigned base,
                                                const float* __restrict__ A,
                                                const float* __restrict__ B, int rows, int cols,
                                                int lda, int ldb, int K, int kt0, int kt1, int tid,
                                                int wm, int wn, float (&acc)[MI][ACC]) {
    float part[MI][ACC];
    const int nk = kt1 - kt0;
    Regs r[2];
#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) {
      if (s < nk) {
        Load<VEC>(r[0], A, B, rows, cols, lda, ldb, K, (kt0 + s) * BK, tid);
        Store(smem + s * STAGE_BYTES, r[0], tid);
      }
    }
    if (STAGES - 2 < nk) {
      Load<VEC>(r[STAGES % 2], A, B, rows, cols, lda, ldb, K, (kt0 + STAGES - 2) * BK, tid);
    }
    if (STAGES - 1 < nk) {
      Load<VEC>(r[(STAGES + 1) % 2], A, B, rows, cols, lda, ldb, K, (kt0 + STAGES - 1) * BK,
                tid);
    }
    FenceProxyAsync();
    __syncthreads();
    for (int i = 0; i < nk; i += 2) {
      Step2<STAGES % 2, VEC>(smem, base, A, B, rows, cols, lda, ldb, K, kt0, nk, i, tid, wm, wn,
                             r, acc, part);
      if (i + 1 < nk) {
        Step2<(STAGES + 1) % 2, VEC>(smem, base, A, B, rows, cols, lda, ldb, K, kt0, nk, i + 1,
                                     tid, wm, wn, r, acc, part);
      }
    }
    WgmmaWait<0>();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) Pin(acc[mi]);
  }
};

}  // namespace sgemm_wgmma_detail
