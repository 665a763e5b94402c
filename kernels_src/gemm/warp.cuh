// ---------------------------------------------------------------------------
// KIND=3. Warp-tiled SGEMM with a cp.async multi-stage pipeline (sm_80+),
// sliced-K, split-K and stream-K by atomics, and block rasterization.
//
//  Block tile BM x BN. A group of (BM/TM) * (BN/TN) threads (warps of 32)
//  covers it; SLICEK groups per block, THREADS = SLICEK * (BM/TM) * (BN/TN).
//  Warp tile WM x WN = (LM*TM) x (LN*TN), LM = 32/LN lanes along M and LN
//  along N; the warps of a group cover the block tile row-major (BN/WN warps
//  per row). A lane owns TM x TN outputs as (TM/4) x (TN/4) warp iterations
//  of a 4x4 sub-tile: row i of lane (lm, ln) is (i/4)*(LM*4) + lm*4 + i%4
//  within the warp tile, column j likewise with LN. Each k step a lane reads
//  TM/4 + TN/4 float4 from shared memory; the lanes of a warp read LM (LN)
//  consecutive float4, so reads are conflict-free and broadcast.
//  Shared memory (dynamic): STAGES x {As[BK][BM+4], Bs[BK][BN] (BN+4 where
//  op(B) = B^T)}, both k-major, then, for SLICEK > 1, the (SLICEK-1) x
//  BM*BN floats of the reduction.
//  Operand layouts (LAYOUT, the last template argument; sgemm.cuh): a
//  K-contiguous operand (A where op(A) = A, B where op(B) = B^T) is copied
//  transposed with 4-byte cp.async (a warp copies 4 rows x 8 k: one 32-byte
//  sector per row, and the row stride BM+4 (BN+4) = 4 mod 32 banks puts the
//  32 lanes on 32 banks); an MN-contiguous one (B where op(B) = B, A where
//  op(A) = A^T) as it is, with 16-byte cp.async when its ld % 4 == 0 and it
//  is 16-byte aligned (else 4-byte). So the copies coalesce in every layout.
//  Out-of-range elements are zero-filled (src-size 0). STAGES - 1 K tiles
//  are in flight while one is computed; one barrier per K tile.
//  SLICEK > 1 (sliced-K, CUTLASS's term): group g computes k in
//  [g, g+1) * BK/SLICEK of every K tile, so a tile has SLICEK times the warps
//  (small problems, whose few tiles leave SMs idle, without split-K's
//  atomics); at the tile's end groups 1.. write their partial sums to shared
//  memory and group 0 adds them and stores.
//  SPLITK > 1: blockIdx.y picks a contiguous range of K tiles and the block
//  atomically adds alpha * its partial product into C, which the launcher
//  must have set to beta * C (zero when beta == 0; LaunchGeometry
//  prescale_output). SPLITK == 1: C = alpha * acc + beta * C, C read only
//  when beta != 0.
//  GROUP: blockIdx.x runs over the output tiles GROUP tile-rows at a time
//  (column-major within a group) so that concurrently running blocks share
//  rows of A and columns of B in L2.
//  MINB: __launch_bounds__(THREADS, MINB), the blocks per SM the register
//  allocation must allow.
//  STREAMB 1: B's copies carry an L2 evict-first policy (EvictFirstPolicy),
//  for B read once (ceil(M/BM) == 1, e.g. M = 16): streaming it then evicts
//  its own lines rather than what else the L2 holds. 0: default policy. (A
//  K-contiguous B, op(B) = B^T, is copied under the default policy.)
//  STREAMK 1 (stream-K, Osama et al., "Stream-K: Work-centric Parallel
//  Decomposition for Dense Matrix Multiplication", PPoPP 2023; CUTLASS):
//  grid = (G, ceil(tiles / G)) for G = MINB * SMs block slots: the rows but
//  the last are data-parallel blocks, one tile each; the G blocks of the
//  last row share the (output tile, K tile) iterations of the tiles left
//  (the partial wave, or a whole one) evenly (StreamK), so that no SM idles
//  in a last partial wave (e.g. 33 x 33 tiles of 4097^3 on 2 x 132 block
//  slots: 4.1 waves). Every tile, whole or partial, is added into C
//  atomically as with split-K (C set to beta * C first). Takes
//  SPLITK == SLICEK == 1. (A persistent grid of G blocks looping over the
//  whole waves ran 4096^3 and 8192^3 5-7% slower than data-parallel on an
//  H100, bench/RESULTS.md sgemm-streamk.)
// Grid: x = ceil(M/BM) * ceil(N/BN), y = SPLITK; stream-K: x = G, y =
// any number with (y - 1) * G < tiles (sgemm.cc: ceil(tiles / G)). Requires
// (checked by sgemm.cc): TM % 4 == TN % 4 == 0, BM % WM == BN % WN == 0,
// BK % 8 == 0, BK % SLICEK == 0, BM*BK % THREADS == 0, BN*BK % (4*THREADS) == 0.
namespace sgemm_detail {

__device__ __forceinline__ unsigned SmemAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// An L2 cache policy (PTX createpolicy) under which lines are evicted first:
// for data read once, so that it does not push out what else the L2 holds
// (data other kernels reuse; dirty lines, whose write-back would take DRAM
// bandwidth from this kernel).
__device__ __forceinline__ unsigned long long EvictFirstPolicy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
// 4 bytes global -> shared, asynchronously; zero-fills when !pred (src unread).
// EVICT_FIRST: under `policy` (EvictFirstPolicy()), else the default policy.
template <bool EVICT_FIRST = false>
__device__ __forceinline__ void CpAsync4(float* dst, const float* src, bool pred,
                                         unsigned long long policy = 0) {
  if constexpr (EVICT_FIRST) {
    asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 4, %2, %3;\n" ::"r"(
                     SmemAddr(dst)),
                 "l"(src), "r"(pred ? 4 : 0), "l"(policy));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(SmemAddr(dst)), "l"(src),
                 "r"(pred ? 4 : 0));
  }
}
// 16 bytes (both addresses 16-byte aligned), bypassing L1; zero-fills when
// !pred. EVICT_FIRST as for CpAsync4.
template <bool EVICT_FIRST = false>
__device__ __forceinline__ void CpAsync16(float* dst, const float* src, bool pred,
                                          unsigned long long policy = 0) {
  if constexpr (EVICT_FIRST) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(
                     SmemAddr(dst)),
                 "l"(src), "r"(pred ? 16 : 0), "l"(policy));
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SmemAddr(dst)),
                 "l"(src), "r"(pred ? 16 : 0));
  }
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <int BM, int BN, int BK, int TM, int TN, int LN, int STAGES, int SLICEK, int STREAMB,
          int LAYOUT = 0>
struct Warp {
  enum : int {
    GROUP_THREADS = (BM / TM) * (BN / TN),  // threads of one K slice
    THREADS = SLICEK * GROUP_THREADS,
    LM = 32 / LN,
    WM = LM * TM,
    WN = LN * TN,
    WARPS_N = BN / WN,
    LDA = BM + 4,
    LDB = TransB(LAYOUT) ? BN + 4 : BN,  // + 4: op(B) = B^T's transposed copies (as A's)
    A_STAGE = BK * LDA,
    B_STAGE = BK * LDB,
    PIPE = STAGES * (A_STAGE + B_STAGE),  // floats of the pipeline's stages
    KSLICE = BK / SLICEK,                 // k of a K tile per group
    A_PER = BM * BK / THREADS,            // 4-byte copies of A per thread per K tile
    B_PER4 = BN * BK / (4 * THREADS),     // 16-byte copies of B
    B_PER1 = BN * BK / THREADS,           // or 4-byte copies
  };
  static constexpr bool TRANS_A = TransA(LAYOUT);  // op(A) = A^T: A's tile is MN-contiguous
  static constexpr bool TRANS_B = TransB(LAYOUT);  // op(B) = B^T: B's tile is K-contiguous
  static_assert(LN * LM == 32, "LN must divide 32");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN are multiples of 4");
  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
  static_assert(BK % 8 == 0, "BK must be a multiple of 8");
  static_assert(BK % SLICEK == 0, "SLICEK must divide BK");
  static_assert(A_PER * THREADS == BM * BK && B_PER4 * 4 * THREADS == BN * BK,
                "tile copies must divide evenly among the threads");

  // Issues the copies of a K-contiguous operand's K tile at k0 (A where
  // op(A) = A, B where op(B) = B^T) into xs[k][mn] (row stride LD),
  // transposed: EXT (BM or BN) along M (N), X at the tile's first row
  // (element (mn, k) at X[mn * ld + k]), `left` of EXT inside the matrix.
  // 4-byte copies under the default L2 policy: copy e = tid + it * THREADS
  // is (mn, k) of 4-row x 8-k block e / 32, lane e % 32 (a warp reads one
  // 32-byte sector per row). Offsets are 32-bit (M*K, K*N < 2^31) and
  // written so that the copy index `it` enters as a compile-time step: few
  // registers stay live.
  template <int EXT, int LD>
  static __device__ __forceinline__ void CopyKContiguous(float* xs, const float* __restrict__ X,
                                                         int left, int ld, int kleft, int k0,
                                                         int tid) {
    constexpr int PER = EXT * BK / THREADS;
    constexpr int KB = BK / 8;  // 8-k blocks per row block
    constexpr int WARPS = THREADS / 32;
    const int q = tid % 32, w = tid / 32;
    if constexpr (WARPS % KB == 0) {
      constexpr int RSTEP = 4 * (WARPS / KB);  // rows between a thread's copies
      const int m0 = (w / KB) * 4 + q % 4;
      const int k = (w % KB) * 8 + q / 4;
      const bool kin = k < kleft;
      const int src0 = m0 * ld + k0 + k;
#pragma unroll
      for (int it = 0; it < PER; ++it) {
        const bool in = kin && m0 + it * RSTEP < left;
        CpAsync4(xs + k * LD + m0 + it * RSTEP,
                 X + (in ? static_cast<unsigned>(src0 + it * RSTEP * ld) : 0u), in);
      }
    } else {
#pragma unroll
      for (int it = 0; it < PER; ++it) {
        const int blk = w + it * WARPS;
        const int m = (blk / KB) * 4 + q % 4;
        const int k = (blk % KB) * 8 + q / 4;
        const bool in = m < left && k < kleft;
        CpAsync4(xs + k * LD + m, X + (in ? m * ld + k0 + k : 0), in);
      }
    }
  }

  // Issues the copies of an MN-contiguous operand's K tile at k0 (B where
  // op(B) = B, A where op(A) = A^T) into xs[k][mn] (row stride LD), as it
  // is: X at the tile's first column (element (mn, k) at X[k * ld + mn]),
  // `left` of EXT inside the matrix. V: 16-byte copies (ld % 4 == 0, X
  // 16-byte aligned), else 4-byte.
  template <int EXT, int LD, bool V, bool EF>
  static __device__ __forceinline__ void CopyMnContiguous(float* xs, const float* __restrict__ X,
                                                          int left, int ld, int kleft, int k0,
                                                          int tid, unsigned long long policy) {
    if constexpr (V) {
      // Copy f = tid + it * THREADS is the float4 at (k, mn) = (f / (EXT/4),
      // 4 * (f % (EXT/4))); where the tile's EXT*BK/4 float4 are not a
      // multiple of THREADS (BM of op(A) = A^T: the rules count 4-byte
      // copies for A), the last round's extra copies are skipped.
      constexpr int NF = EXT / 4;
      constexpr int COPIES = EXT * BK / 4;
      constexpr int PER4 = (COPIES + THREADS - 1) / THREADS;
      constexpr bool EXACT = COPIES % THREADS == 0;
      if constexpr (THREADS % NF == 0) {
        constexpr int KSTEP = THREADS / NF;
        const int k = tid / NF;
        const int n = (tid % NF) * 4;
        // ld % 4 == 0 and the tile's first column % 4 == 0: n < left means n + 3 < left.
        const bool nin = n < left;
        const int src0 = (k0 + k) * ld + n;
#pragma unroll
        for (int it = 0; it < PER4; ++it) {
          if constexpr (!EXACT) {
            if (k + it * KSTEP >= BK) break;
          }
          const bool in = nin && k + it * KSTEP < kleft;
          CpAsync16<EF>(xs + (k + it * KSTEP) * LD + n,
                        X + (in ? static_cast<unsigned>(src0 + it * KSTEP * ld) : 0u), in, policy);
        }
      } else {
#pragma unroll
        for (int it = 0; it < PER4; ++it) {
          const int f = tid + it * THREADS;
          if constexpr (!EXACT) {
            if (f >= COPIES) break;
          }
          const int k = f / NF;
          const int n = (f % NF) * 4;
          const bool in = k < kleft && n < left;
          CpAsync16<EF>(xs + k * LD + n, X + (in ? (k0 + k) * ld + n : 0), in, policy);
        }
      }
    } else if constexpr (THREADS % EXT == 0) {
      // The general path (ld % 4 != 0 or X unaligned), 4-byte copies: copy
      // e = tid + it * THREADS is (k, mn) = (e / EXT, e % EXT); mn is fixed.
      constexpr int PER1 = EXT * BK / THREADS;
      constexpr int KSTEP = THREADS / EXT;
      const int k = tid / EXT;
      const int n = tid % EXT;
      const bool nin = n < left;
      const int src0 = (k0 + k) * ld + n;
#pragma unroll
      for (int it = 0; it < PER1; ++it) {
        const bool in = nin && k + it * KSTEP < kleft;
        CpAsync4<EF>(xs + (k + it * KSTEP) * LD + n,
                     X + (in ? static_cast<unsigned>(src0 + it * KSTEP * ld) : 0u), in, policy);
      }
    } else {
      // Likewise where a row of the tile spans several copies per thread
      // (EXT > THREADS): not unrolled, so that few addresses stay live.
      constexpr int PER1 = EXT * BK / THREADS;
#pragma unroll 1
      for (int it = 0; it < PER1; ++it) {
        const int e = tid + it * THREADS;
        const int k = e / EXT;
        const int n = e % EXT;
        const bool in = k < kleft && n < left;
        CpAsync4<EF>(xs + k * LD + n, X + (in ? (k0 + k) * ld + n : 0), in, policy);
      }
    }
  }

  // Issues the copies of K tile `kt` into stage (as, bs): op(A)'s and
  // op(B)'s tiles, each by CopyKContiguous or CopyMnContiguous as its
  // layout stores it. A points at the tile's first row of op(A) (rows
  // left), B at its first column of op(B) (cols left). V: the
  // MN-contiguous operands take 16-byte copies. STREAMB's evict-first
  // policy applies to B's MN-contiguous copies (op(B) = B).
  template <bool V>
  static __device__ __forceinline__ void Load(float* as, float* bs, const float* __restrict__ A,
                                              const float* __restrict__ B, int rows, int cols,
                                              int lda, int ldb, int K, int kt, int tid) {
    const int k0 = kt * BK;
    const int kleft = K - k0;
    constexpr bool EF = STREAMB != 0 && !TRANS_B;  // B's copies evict-first
    const unsigned long long policy = EF ? EvictFirstPolicy() : 0;
    if constexpr (TRANS_A) {
      CopyMnContiguous<BM, LDA, V, false>(as, A, rows, lda, kleft, k0, tid, policy);
    } else {
      CopyKContiguous<BM, LDA>(as, A, rows, lda, kleft, k0, tid);
    }
    if constexpr (TRANS_B) {
      CopyKContiguous<BN, LDB>(bs, B, cols, ldb, kleft, k0, tid);
    } else {
      CopyMnContiguous<BN, LDB, V, EF>(bs, B, cols, ldb, kleft, k0, tid, policy);
    }
  }

  // acc += As^T * Bs over KSLICE k of a K tile (as, bs: the slice's first
  // k); (wm, wn) is the lane's first row and column within the block tile.
  static __device__ __forceinline__ void Compute(const float* as, const float* bs, int wm, int wn,
                                                 float (&acc)[TM][TN]) {
#pragma unroll
    for (int k = 0; k < KSLICE; ++k) {
      float a[TM];
      float b[TN];
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(as + k * LDA + wm + (i / 4) * (LM * 4));
        a[i + 0] = v.x;
        a[i + 1] = v.y;
        a[i + 2] = v.z;
        a[i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const float4 v = *reinterpret_cast<const float4*>(bs + k * LDB + wn + (j / 4) * (LN * 4));
        b[j + 0] = v.x;
        b[j + 1] = v.y;
        b[j + 2] = v.z;
        b[j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
    }
  }

  // The STAGES-deep pipeline over K tiles [kt0, kt1); A points at the
  // block's first row of op(A) (rows left), B at its first column of op(B)
  // (cols left). The thread's group computes K slice `slice` of every K tile.
  template <bool V>
  static __device__ __forceinline__ void KLoop(float* smem, const float* __restrict__ A,
                                               const float* __restrict__ B, int rows, int cols,
                                               int lda, int ldb, int K, int kt0, int kt1, int tid,
                                               int slice,
                                               int wm, int wn, float (&acc)[TM][TN]) {
    float* as = smem;
    float* bs = smem + STAGES * A_STAGE;
    const int nt = kt1 - kt0;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < nt) {
        Load<V>(as + s * A_STAGE, bs + s * B_STAGE, A, B, rows, cols, lda, ldb, K, kt0 + s, tid);
      }
      CpAsyncCommit();
    }
    for (int t = 0; t < nt; ++t) {
      CpAsyncWait<STAGES - 2>();  // tile t has landed (this thread's copies)...
      __syncthreads();            // ...everyone's; and stage (t - 1) % STAGES is free
      const int next = t + STAGES - 1;
      if (next < nt) {
        const int s = next % STAGES;
        Load<V>(as + s * A_STAGE, bs + s * B_STAGE, A, B, rows, cols, lda, ldb, K, kt0 + next,
                tid);
      }
      CpAsyncCommit();
      const int s = t % STAGES;
      Compute(as + s * A_STAGE + slice * KSLICE * LDA, bs + s * B_STAGE + slice * KSLICE * LDB,
              wm, wn, acc);
    }
    CpAsyncWait<0>();
  }

  // SLICEK > 1: adds the other groups' partial sums into group 0's acc
  // through shared memory `red` ((SLICEK-1) * BM*BN floats, laid out so that
  // consecutive threads touch consecutive words). Every thread calls it.
  static __device__ __forceinline__ void Reduce(float* red, int slice, int gtid,
                                                float (&acc)[TM][TN]) {
    if (slice > 0) {
      float* r = red + (slice - 1) * (TM * TN * GROUP_THREADS) + gtid;
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) r[(i * TN + j) * GROUP_THREADS] = acc[i][j];
      }
    }
    __syncthreads();
    if (slice == 0) {
#pragma unroll
      for (int g = 0; g < SLICEK - 1; ++g) {
        const float* r = red + g * (TM * TN * GROUP_THREADS) + gtid;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] += r[(i * TN + j) * GROUP_THREADS];
        }
      }
    }
  }
};

// Stores alpha * acc (+ beta * C) of a lane into the tile at C (rows, cols
// left); ATOMIC (split-K, stream-K): adds alpha * acc atomically. vec_c:
// N % 4 == 0 and C is 16-byte aligned (float4 stores).
template <int TM, int TN, int LN, bool ATOMIC>
__device__ __forceinline__ void WarpStore(float* __restrict__ C, int N, int rows, int cols, int wm,
                                          int wn, float alpha, float beta, bool vec_c,
                                          const float (&acc)[TM][TN]) {
  constexpr int LM = 32 / LN;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = wm + (i / 4) * (LM * 4) + i % 4;
    if (row >= rows) continue;
    float* crow = C + static_cast<long long>(row) * N;
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      const int col = wn + (j / 4) * (LN * 4);
      if constexpr (ATOMIC) {
        if (vec_c) {
          if (col < cols) {
            RedAdd4(crow + col, alpha * acc[i][j], alpha * acc[i][j + 1], alpha * acc[i][j + 2],
                    alpha * acc[i][j + 3]);
          }
          continue;
        }
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          if (col + w < cols) atomicAdd(crow + col + w, alpha * acc[i][j + w]);
        }
      } else {
        if (vec_c) {
          // cols % 4 == 0 and col % 4 == 0: col < cols means col + 3 < cols.
          if (col < cols) {
            Blend4(crow + col, acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3], alpha, beta);
          }
        } else {
#pragma unroll
          for (int w = 0; w < 4; ++w) {
            if (col + w < cols) {
              crow[col + w] = Blend(acc[i][j + w], alpha, beta, crow + col + w);
            }
          }
        }
      }
    }
  }
}

// One output tile of sgemm_warp (W = its Warp<...>) by thread `tid`
// (threadIdx.x): tile `pid` (in GROUP order) over K tiles [kt0, kt1);
// stores alpha * acc (+ beta * C), or adds alpha * acc atomically when
// ATOMIC (split-K, stream-K: C holds beta * C).
template <typename W, int BM, int BN, int TM, int TN, int LN, int GROUP, int SLICEK, bool ATOMIC>
__device__ __forceinline__ void WarpTile(int M, int N, int K, float alpha,
                                         const float* __restrict__ A,
                                         const float* __restrict__ B, float beta,
                                         float* __restrict__ C, float* smem, int pid, int kt0,
                                         int kt1, int tid) {
  const int tiles_m = CeilDiv(M, BM);
  const int tiles_n = CeilDiv(N, BN);
  int tile_m, tile_n;
  RasterTile<GROUP>(pid, tiles_m, tiles_n, tile_m, tile_n);
  if (tile_m >= tiles_m) return;

  const int slice = SLICEK > 1 ? tid / W::GROUP_THREADS : 0;  // K slice of this thread's group
  const int gtid = SLICEK > 1 ? tid % W::GROUP_THREADS : tid;
  const int warp = gtid / 32, lane = tid % 32;
  const int wm = (warp / W::WARPS_N) * W::WM + (lane / LN) * 4;
  const int wn = (warp % W::WARPS_N) * W::WN + (lane % LN) * 4;
  const int bm = tile_m * BM, bn = tile_n * BN;
  const int rows = M - bm, cols = N - bn;
  const int lda = W::TRANS_A ? M : K;
  const int ldb = W::TRANS_B ? K : N;
  A += W::TRANS_A ? static_cast<long long>(bm) : static_cast<long long>(bm) * K;
  B += W::TRANS_B ? static_cast<long long>(bn) * K : static_cast<long long>(bn);
  C += static_cast<long long>(bm) * N + bn;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }
  // 16-byte copies of the MN-contiguous operands (B where op(B) = B, A
  // where op(A) = A^T) need their ld % 4 == 0 and 16-byte aligned pointers.
  const bool vec = (W::TRANS_B || ((ldb & 3) == 0 && Aligned16(B))) &&
                   (!W::TRANS_A || ((lda & 3) == 0 && Aligned16(A)));
  if (vec) {
    W::template KLoop<true>(smem, A, B, rows, cols, lda, ldb, K, kt0, kt1, tid, slice, wm, wn,
                            acc);
  } else {
    W::template KLoop<false>(smem, A, B, rows, cols, lda, ldb, K, kt0, kt1, tid, slice, wm, wn,
                             acc);
  }
  if constexpr (SLICEK > 1) {
    W::Reduce(smem + W::PIPE, slice, gtid, acc);
    if (slice > 0) return;
  }
  const bool vec_c = (N & 3) == 0 && Aligned16(C);
  WarpStore<TM, TN, LN, ATOMIC>(C, N, rows, cols, wm, wn, alpha, beta, vec_c, acc);
}

// A stream-K block's share of tiles [first, tiles): their (tile, K tile)
// iterations, tile-major, split evenly over the gridDim.x blocks of the
// grid's last row (see sgemm_warp). Updated by one thread.
struct StreamK {
  int pid, kt0, kt1;  // the current segment: K tiles [kt0, kt1) of tile pid (done: pid >= tiles)
  long long end;      // one past the block's last iteration

  __device__ void Start(int first, int tiles, int ktiles) {
    const long long iters = static_cast<long long>(tiles - first) * ktiles;
    const long long base = static_cast<long long>(first) * ktiles;
    end = base + iters * (blockIdx.x + 1) / gridDim.x;
    Seek(base + iters * blockIdx.x / gridDim.x, tiles, ktiles);
  }
  __device__ void Next(int tiles, int ktiles) {
    Seek(static_cast<long long>(pid) * ktiles + kt1, tiles, ktiles);
  }
  // The segment at iteration `it` (none past the share).
  __device__ void Seek(long long it, int tiles, int ktiles) {
    if (it >= end) {
      pid = tiles;
      return;
    }
    pid = static_cast<int>(it / ktiles);
    kt0 = static_cast<int>(it % ktiles);
    kt1 = static_cast<int>(min(static_cast<long long>(ktiles),
                               end - static_cast<long long>(pid) * ktiles));
  }
};

}  // namespace sgemm_detail

template <int BM, int BN, int BK, int TM, int TN, int LN, int STAGES, int SPLITK, int GROUP,
          int MINB, int SLICEK, int STREAMB, int STREAMK, int LAYOUT = 0>
__global__ void __launch_bounds__(SLICEK * (BM / TM) * (BN / TN), MINB)
    sgemm_warp(int M, int N, int K, float alpha, const float* __restrict__ A,
               const float* __restrict__ B, float beta, float* __restrict__ C) {
  using W = sgemm_detail::Warp<BM, BN, BK, TM, TN, LN, STAGES, SLICEK, STREAMB, LAYOUT>;
  static_assert(STREAMK == 0 || (SPLITK == 1 && SLICEK == 1),
                "stream-K takes neither split-K nor sliced-K");
  constexpr bool ATOMIC = SPLITK > 1 || STREAMK != 0;
  extern __shared__ __align__(16) float smem[];
  const int tiles_m = sgemm_detail::CeilDiv(M, BM);
  const int tiles_n = sgemm_detail::CeilDiv(N, BN);
  const int ktiles = sgemm_detail::CeilDiv(K, BK);
  if constexpr (STREAMK != 0) {
    // Rows y < gridDim.y - 1 of the grid are whole waves of data-parallel
    // tiles (the hardware schedules them as SMs free up); the last row
    // shares the tiles left, at most a wave, as stream-K iterations.
    const int tiles = tiles_m * tiles_n;
    const int first = min(tiles, (gridDim.y - 1) * gridDim.x);  // of the last row
    if (blockIdx.y + 1 < gridDim.y) {
      const int pid = blockIdx.y * gridDim.x + blockIdx.x;
      if (pid >= tiles) return;
      sgemm_detail::WarpTile<W, BM, BN, TM, TN, LN, GROUP, SLICEK, ATOMIC>(
          M, N, K, alpha, A, B, beta, C, smem, pid, 0, ktiles, threadIdx.x);
      return;
    }
    // The share is kept by thread 0 in shared memory: in registers it would
    // stay live across each tile's K loop and push the 128-register (MINB 2
    // x 256 threads) kernels into spills.
    __shared__ sgemm_detail::StreamK work;
    if (threadIdx.x == 0) work.Start(first, tiles, ktiles);
    __syncthreads();
    for (;;) {
      const volatile sgemm_detail::StreamK* v = &work;
      const int pid = v->pid, kt0 = v->kt0, kt1 = v->kt1;
      if (pid >= tiles) break;
      // threadIdx.x through asm volatile: the loop cannot hoist what derives
      // from it (copy and store addresses) and keep it live across the K
      // loop either.
      int tid;
      asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
      sgemm_detail::WarpTile<W, BM, BN, TM, TN, LN, GROUP, SLICEK, ATOMIC>(
          M, N, K, alpha, A, B, beta, C, smem, pid, kt0, kt1, tid);
      __syncthreads();  // everyone has read the share; the stages are free
      if (tid == 0) work.Next(tiles, ktiles);
      __syncthreads();
    }
  } else {
    int kt0, kt1;  // K tiles of this split
    if (!sgemm_detail::SplitKRange<SPLITK>(ktiles, kt0, kt1)) return;
    sgemm_detail::WarpTile<W, BM, BN, TM, TN, LN, GROUP, SLICEK, ATOMIC>(
        M, N, K, alpha, A, B, beta, C, smem, blockIdx.x, kt0, kt1, threadIdx.x);
  }
}
