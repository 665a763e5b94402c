// KIND 6's register-A form (LA 0), RsTile, with its warp-specialized
// producer and consumers (WS), and RsGemm, the kernel body of both.
// Compiled appended to wgmma_tile.cuh.

namespace sgemm_wgmma_detail {

// LA = 0, the register-A form: C^T = B^T * A^T. wgmma's
// shared operand is A^T, A's rows as they are (K-major), copied with
// cp.async into 128-byte-swizzled rows of BK = 32 floats; wgmma's register
// operand is B^T, read from B's natural tile (k rows of BN + 8 floats: a
// warp's fragment loads hit 32 banks) and rounded (cvt.rna) or split in
// registers. No transposing store. A is not rounded: wgmma
// reads it truncated to TF32, and 3xTF32 splits it by truncation (big = A
// as copied, small = tf32(A - trunc(A)) written beside it, SplitA), with
// the error of the rounded split (2.80e-7 against 2.77e-7 at 2048^3). So
// one-pass TF32 makes no pass over A at all, 30-40% faster, at 1.6x cuBLAS
// TF32's error against fp64 (4.2e-4 against 2.6e-4, H100, 2048^3 to
// 8192^3): one operand truncated and one rounded, where truncation's error
// (up to an ulp, biased) has about 1.5 times rounding's second moment, so
// the sum about 2.5 times and its root about 1.6 times; within the tf32
// mode's bound of 2x, which the job checks on every problem. A block: BN / 64
// warpgroups, each 64 columns of C by all BM rows (wgmma N = BM: 128 or
// 256); STAGES stages of (1 or 2) x BM x 128 + 32 x (BN + 8) x 4 bytes
// (rounded up to 1024; STAGES >= 4), STAGES - 1 K tiles of copies in
// flight (16-byte path; STAGES - 2 on the 4-byte one, see KLoop). Per K
// tile: BK/8 (x 3) wgmmas from fragments loaded before, and under them the
// next tile's work (KLoop); one __syncthreads (3xTF32: acc += the fresh
// accumulators, as LA 1 and 2 do, every PROMOTE K tiles).
// 16-byte copies where K and N are multiples of 4 and A and B 16-byte
// aligned, else 4-byte ones (each thread copies whole 16-byte units either
// way, so that it splits only what it copied); out-of-range elements are
// zero-filled, and blocks whose tile lies within M, N and K copy without
// predicates (FullCopier).
// Layouts: op(B) = B^T (LAYOUT & 1; B stored N x K, k contiguous): B^T's
// rows are copied as A's (LoadK, FullCopier) into a K-major tile swizzled
// by row pairs (KOff<true>), and each k8 step's fragments come from one
// ldmatrix.x4 (Fragments). TT (both transposed) is NN's problem for C^T =
// B A (RsGemm's SWAP): B's rows are the shared operand, A's k rows give the
// register operand's fragments. TN is not taken: neither A^T's storage nor
// B's is k-contiguous, and wgmma's shared operand must be K-major for
// .tf32. 3xTF32 NT is not taken either: NVRTC 13.0's ptxas spills 4 to 8
// bytes of it under its 255 registers (NN's sits at 255 unspilled).
template <int BM, int BN, int STAGES, int PASSES, int PROMOTE = 1, int LAYOUT = 0>
struct RsTile {
  enum : int {
    BK = 32,
    ROWB = BK * 4,
    THREADS = BN / 64 * 128,
    ACC = BM / 2,  // accumulators per thread of one m64 x BM wgmma
    A_BYTES = BM * ROWB,
    PB = BN + 8,  // B's row pitch, floats
    PBT = BK + 4,  // B^T's row pitch (TB), floats
    TB = (LAYOUT & 1) != 0,  // op(B) = B^T: B stored N x K (k contiguous), B^T's tile K-major
    B_OFF = (PASSES == 3 ? 2 : 1) * A_BYTES,
    STAGE_BYTES = (B_OFF + (TB ? BN * PBT : BK * PB) * 4 + 1023) / 1024 * 1024,
    A_CHUNKS = BM * (BK / 4) / THREADS,  // 16-byte units per thread per K tile
    B_CHUNKS = BK * (BN / 4) / THREADS,
  };
  static_assert((LAYOUT & 2) == 0,
                "RsTile: op(A) = A (wgmma's shared operand is A's K-major rows, copied as "
                "stored; TT comes as NN's C^T = B A, RsGemm)");
  static_assert((BM == 128 || BM == 256) && BN % 64 == 0 && STAGES >= 4, "LA=0 tile");
  static_assert(A_CHUNKS * THREADS == BM * BK / 4 && B_CHUNKS * THREADS == BK * BN / 4, "copies");
  static_assert(PROMOTE == 1 || PROMOTE == 2, "PROMOTE");

  // The byte offset in a stage of 16-byte unit u (k quad) of row `row` of a
  // K-major operand tile: A's (IS_B false) 128-byte swizzled (wgmma's
  // shared operand, Swizzle); B^T's (TB) at B_OFF, rows of PBT floats
  // (144 bytes, 9 bank groups), its even rows first, then its odd ones, so
  // that the rows n0 = 16w + 2g (or n0 + 1, g = 0..7) of one ldmatrix
  // matrix (Fragments) are 8 consecutive rows in 8 distinct bank groups.
  template <bool IS_B>
  static __device__ __forceinline__ int KOff(int row, int u) {
    if constexpr (IS_B) {
      return B_OFF + ((row & 1) * (BN / 2) + (row >> 1)) * (PBT * 4) + u * 16;
    } else {
      return Swizzle<ROWB>(row * ROWB + u * 16);
    }
  }

  // The copies of blocks whose tile lies within M, N and K (KLoop's FULL),
  // K tile after K tile: this thread's A chunks lie THREADS / 8 rows apart
  // and its B chunks THREADS / (BN / 4) rows apart, so a chunk costs a
  // 64-bit add, and their shared addresses are constant offsets from the
  // stage's (the swizzle of rows 8 apart is the same). The indexed form
  // (Load) took about 95 of the 226 instructions a warp issued per K tile
  // in LA=0 TF32 256x128 (Nsight Compute's SASS), recomputing
  // 64-bit addresses.
  template <int CT = THREADS>  // the threads that copy
  struct FullCopier {
    enum : int {
      A_ROWS = CT / (BK / 4),  // rows between a thread's A chunks
      B_ROWS = TB ? CT / (BK / 4) : CT / (BN / 4),  // rows (n or k) between its B chunks
      AC = BM * (BK / 4) / CT,  // chunks a thread
      BC = BK * (BN / 4) / CT,
      B_DST = TB ? B_ROWS / 2 * PBT * 4 : B_ROWS * PB * 4,  // bytes between their shared offsets
    };
    const char* a;  // this thread's first A chunk of the next K tile
    const char* b;  // its first B chunk of the next K tile
    long long a_step, b_step;  // bytes between its chunks
    unsigned a_dst, b_dst;     // their offsets in a stage

    // A and B at the block's corner, k0 the first K tile's column.
    __device__ __forceinline__ FullCopier(const float* A, const float* B, int ldb, int K, int k0,
                                          int tid) {
      const int row = tid / (BK / 4), kq = tid % (BK / 4);
      a = reinterpret_cast<const char*>(A + static_cast<long long>(row) * K + k0 + kq * 4);
      a_step = static_cast<long long>(A_ROWS) * K * 4;
      a_dst = KOff<false>(row, kq);
      if constexpr (TB) {  // B^T's rows as A's
        b = reinterpret_cast<const char*>(B + static_cast<long long>(row) * ldb + k0 + kq * 4);
        b_dst = KOff<true>(row, kq);
      } else {
        const int kr = tid / (BN / 4), nq = tid % (BN / 4);
        b = reinterpret_cast<const char*>(B + static_cast<long long>(k0 + kr) * ldb + nq * 4);
        b_dst = B_OFF + (kr * PB + nq * 4) * 4;
      }
      b_step = static_cast<long long>(B_ROWS) * ldb * 4;
    }
    // The next K tile into the stage at shared address `stage` (WITH_A
    // false: B's rows alone, A's come by TMA).
    template <bool WITH_A = true>
    __device__ __forceinline__ void Issue(unsigned stage) {
      static_assert(A_ROWS % 8 == 0 &&
                        (TB ? B_ROWS % 2 == 0 && BC * B_ROWS == BN : BC * B_ROWS == BK),
                    "copy plan");
      const char* p = a;
      if constexpr (WITH_A) {
#pragma unroll
        for (int i = 0; i < AC; ++i, p += a_step) {
          CpAsync16Shared(stage + a_dst + i * A_ROWS * ROWB, p);
        }
        a += BK * 4;
      }
      p = b;
#pragma unroll
      for (int i = 0; i < BC; ++i, p += b_step) {
        CpAsync16Shared(stage + b_dst + i * B_DST, p);
      }
      if constexpr (TB) {
        b = p - BC * b_step + BK * 4;  // BK columns on
      } else {
        b = p;  // BK rows on
      }
    }
  };

  // K tile at k0 into `stage`: A rows (rows left: `rows`) swizzled, B rows
  // (columns left: `cols`) padded to PB; zeros beyond M, N and K. Blocks
  // whose tile lies within M, N and K copy with FullCopier instead, without
  // predicates, which made the kernel 10-12% faster on the H100 (the
  // zero-filling form and its address selects took the K loop's issue
  // slots).
  // CT: the threads that copy; WS's producer (CT < THREADS) keeps its loops
  // rolled, within its 40 registers (unrolled, they spilled 1.2 KB).
  // WITH_A false: B alone (A comes by TMA).
  // B^T's rows (TB) are copied as A's (LoadK).
  template <bool VEC, int CT = THREADS, bool WITH_A = true>
  static __device__ __forceinline__ void Load(unsigned char* stage, const float* __restrict__ A,
                                              const float* __restrict__ B, int rows, int cols,
                                              int ldb, int K, int k0, int tid) {
    if constexpr (WITH_A) LoadK<false, BM, VEC, CT>(stage, A, K, rows, K, k0, tid);
    if constexpr (TB) {
      LoadK<true, BN, VEC, CT>(stage, B, ldb, cols, K, k0, tid);
      return;
    }
    constexpr int UNROLL = CT == THREADS ? 64 : 1;
#pragma unroll UNROLL
    for (int i = 0; i < BK * (BN / 4) / CT; ++i) {
      const int c = tid + i * CT, kr = c / (BN / 4), n = (c % (BN / 4)) * 4;
      float* dst = reinterpret_cast<float*>(stage + B_OFF) + kr * PB + n;
      const float* src = B + static_cast<long long>(k0 + kr) * ldb + n;
      if constexpr (VEC) {
        const bool in = k0 + kr < K && n < cols;
        sgemm_detail::CpAsync16(dst, in ? src : B, in);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool in = k0 + kr < K && n + e < cols;
          sgemm_detail::CpAsync4(dst + e, in ? src + e : B, in);
        }
      }
    }
  }

  // The K tile at k0 of a K-contiguous operand (X at the block's corner, ld
  // its row pitch, lim its rows left in M or N) into its K-major tile of
  // `stage` (KOff<IS_B>); zeros beyond lim and K. CT threads, as Load.
  template <bool IS_B, int ROWS, bool VEC, int CT>
  static __device__ __forceinline__ void LoadK(unsigned char* stage, const float* __restrict__ X,
                                               int ld, int lim, int K, int k0, int tid) {
    constexpr int UNROLL = CT == THREADS ? 64 : 1;
#pragma unroll UNROLL
    for (int i = 0; i < ROWS * (BK / 4) / CT; ++i) {
      const int c = tid + i * CT, row = c / (BK / 4), k = k0 + (c % (BK / 4)) * 4;
      float* dst = reinterpret_cast<float*>(stage + KOff<IS_B>(row, c % (BK / 4)));
      const float* src = X + static_cast<long long>(row) * ld + k;
      if constexpr (VEC) {
        const bool in = row < lim && k < K;
        sgemm_detail::CpAsync16(dst, in ? src : X, in);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool in = row < lim && k + e < K;
          sgemm_detail::CpAsync4(dst + e, in ? src + e : X, in);
        }
      }
    }
  }

  // 3xTF32: this thread's A units of the stage, as Load copied them, split
  // by truncation: big is x as copied (wgmma reads a .tf32 operand's top 19
  // bits, i.e. x with its low 13 bits cleared), small = tf32(x - big) (the
  // difference is exact; cvt.rna rounds it), written A_BYTES further. One
  // store a unit instead of two: 3-5% faster than rounding big, with the
  // same error. TF32 makes no pass over A (see the comment
  // before RsTile).
  static __device__ __forceinline__ void SplitA(unsigned char* stage, int tid) {
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int c = tid + i * THREADS;
      const int off = Swizzle<ROWB>((c / (BK / 4)) * ROWB + (c % (BK / 4)) * 16);
      const uint4 v = *reinterpret_cast<const uint4*>(stage + off);
      const uint4 small = {Small(v.x), Small(v.y), Small(v.z), Small(v.w)};
      *reinterpret_cast<uint4*>(stage + A_BYTES + off) = small;
    }
  }
  // tf32(x - trunc(x)), trunc(x): x's low 13 bits cleared (the part of x
  // that wgmma reads as .tf32).
  static __device__ __forceinline__ unsigned Small(unsigned x) {
    return sgemm_mma_detail::Tf32(__uint_as_float(x) - __uint_as_float(x & 0xffffe000u));
  }

  // The wgmma rows (B^T rows, columns of C) of a thread are ours to place:
  // its rows g and g + 8 of its warp's 16 (g = lane / 4) are columns n0 and
  // n0 + 1 of the block's BN, n0 = 16w + 2g of its warpgroup's 64 (w: its
  // warp in the warpgroup), so that each of its fragment pairs is one 8-byte
  // load (8 loads a K tile instead of 16). This returns n0.
  static __device__ __forceinline__ int ColN0(int tid) {
    return (tid / 128) * 64 + 16 * ((tid % 128) / 32) + 2 * ((tid % 32) / 4);
  }
  // Where this thread reads its fragments (Fragments' n0 and t): NN, column
  // ColN0 and k t = lane % 4 of B's tile. TB: its lane gives ldmatrix the
  // address of row ColN0's n0 + j % 2 of matrix j = lane / 8 (lanes 8j + g,
  // g = 0..7), k quad j / 2 (+ 2kk): n0 is that row's byte offset in the
  // stage (KOff<true>), t the quad's, 16 (j / 2).
  static __device__ __forceinline__ int FragN(int tid) {
    if constexpr (TB) {
      return KOff<true>(
          (tid / 128) * 64 + 16 * ((tid % 128) / 32) + 2 * (tid % 8) + (tid / 8) % 2, 0);
    } else {
      return ColN0(tid);
    }
  }
  static __device__ __forceinline__ int FragT(int tid) {
    if constexpr (TB) {
      return 16 * ((tid / 16) % 2);
    } else {
      return tid % 4;
    }
  }

  // This thread's B^T fragments of the stage (m64k8 .tf32: a0 (row g, k
  // t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4) of the warp's 16
  // rows: columns n0 and n0 + 1 of the block's BN, ColN0), rounded or split.
  // A quarter-warp's 8-byte loads (rows t, t + 1, .. 8 floats apart in the
  // banks, PB = BN + 8) hit 32 banks.
  // TB: one ldmatrix.x4 a k8 step (32 bytes on) from B^T's K-major tile
  // (KOff<true>): matrix j's row g (8 rows of 16 bytes, lane 8j + g's address) is row
  // n0 + j % 2 (ColN0), k quad 2kk + j / 2, and a thread's register j its
  // row g, float t: a0 .. a3 as above.
  // `stage` and `addr`: the stage's generic pointer (NN) and shared address (TB).
  static __device__ __forceinline__ void Fragments(const unsigned char* stage, unsigned addr,
                                                   int n0, int t,
                                                   unsigned (&big)[BK / 8][4],
                                                   unsigned (&small)[BK / 8][4]) {
    if constexpr (TB) {  // n0, t: FragN, FragT
      const unsigned row = addr + n0 + t;
#pragma unroll
      for (int kk = 0; kk < BK / 8; ++kk) {
        unsigned d[4];
        LdMatrix4(row + 32 * kk, d);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          SplitOperand<PASSES>(__uint_as_float(d[j]), big[kk][j], small[kk][j]);
        }
      }
      return;
    }
    const float* bs = reinterpret_cast<const float*>(stage + B_OFF);
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const float2 r0 = *reinterpret_cast<const float2*>(bs + (kk * 8 + t) * PB + n0);
      const float2 r4 = *reinterpret_cast<const float2*>(bs + (kk * 8 + t + 4) * PB + n0);
      SplitOperand<PASSES>(r0.x, big[kk][0], small[kk][0]);
      SplitOperand<PASSES>(r0.y, big[kk][1], small[kk][1]);
      SplitOperand<PASSES>(r4.x, big[kk][2], small[kk][2]);
      SplitOperand<PASSES>(r4.y, big[kk][3], small[kk][3]);
    }
  }

  // K tiles kt0 .. kt1 - 1 into acc (D = C^T: acc[4i + j] is row
  // 8i + 2t + j % 2 of the block's BM, column n0 + j / 2, ColN0; see the
  // epilogue). Tile i's wgmmas run under the work
  // of tile i + 1: this thread's split of tile i + 1's A (3xTF32), the
  // barrier, the copies of tile i + AHEAD, and tile i + 1's B^T fragments
  // into the other fragment set; then wgmma.wait_group (3xTF32: 0, and acc
  // += the fresh accumulators; TF32: before the barrier, 1, so that tile
  // i - 1's group, which read the other set, is done; 3xTF32 with PROMOTE
  // 2: the wait and the add after odd tiles only, a wait for 1 before the
  // barrier of the others). The one barrier a K tile makes tile i + 1's
  // stage whole and frees tile i - 1's. AHEAD K tiles are copied ahead:
  // STAGES - 1 on the 16-byte path, issued after the barrier into tile
  // i - 1's stage; STAGES - 2 on the 4-byte path (VEC false), issued
  // before it into tile i - 2's stage, where the copies' four times as many
  // instructions held up the fragments less.
  // On the H100 (bench/RESULTS.md wgmma-ahead-promote
  // probe_ahead.txt) STAGES - 1 ran 2-7% faster on the 16-byte path (3xTF32
  // at 2048^3 to 8192^3, 1000^3 split in 2, 16 to 8192 rows by 4096 or
  // 128 split in 2 or 4), 3% slower at 4096x4096x64 and 14% slower on the
  // 4-byte path (4097^3). On the H100 the order of split, barrier and
  // fragments under the wgmmas ran 3-4% faster than doing that work between
  // the wgmma groups.
  template <bool VEC, bool FULL>
  static __device__ __forceinline__ void KLoop(unsigned char* smem, unsigned base,
                                               const float* __restrict__ A,
                                               const float* __restrict__ B, int rows, int cols,
                                               int ldb, int K, int kt0, int kt1, int tid,
                                               float (&acc)[ACC]) {
    constexpr int AHEAD = VEC ? STAGES - 1 : STAGES - 2;
    const int nk = kt1 - kt0;
    // K tile kt0 + t (issued in order of t) into stage s.
    FullCopier<> copier(A, B, ldb, K, kt0 * BK, tid);
    auto load = [&](int s, int t) {
      if constexpr (FULL) {
        copier.Issue(base + s * STAGE_BYTES);
      } else {
        Load<VEC>(smem + s * STAGE_BYTES, A, B, rows, cols, ldb, K, (kt0 + t) * BK, tid);
      }
    };
#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
      if (s < nk) load(s, s);
      sgemm_detail::CpAsyncCommit();
    }
    const int t = FragT(tid), n0 = FragN(tid);
    float part[ACC];
    unsigned big0[BK / 8][4], small0[BK / 8][4], big1[BK / 8][4], small1[BK / 8][4];
    if (nk <= 0) return;
    sgemm_detail::CpAsyncWait<AHEAD - 1>();  // tile 0 landed
    if constexpr (PASSES == 3) {
      SplitA(smem, tid);
      FenceProxyAsync();
    }
    __syncthreads();
    Fragments(smem, base, n0, t, big0, small0);
    // Tile i, its fragments in (big, small); tile i + 1's into (nbig, nsmall).
    auto step = [&](int i, unsigned (&big)[BK / 8][4], unsigned (&small)[BK / 8][4],
                    unsigned (&nbig)[BK / 8][4], unsigned (&nsmall)[BK / 8][4]) {
      const unsigned a_tile = base + (i % STAGES) * STAGE_BYTES;
      // k8 step kk starts kk * 32 bytes further: its descriptor's address
      // field (bytes / 16, 14 bits, no carry within the stages) 2 * kk more.
      const unsigned long long d_big0 = Descriptor<ROWB>(a_tile);
      [[maybe_unused]] const unsigned long long d_small0 = Descriptor<ROWB>(a_tile + A_BYTES);
      // 3xTF32: tile i's products start a fresh part (i % PROMOTE == 0),
      // and part is added into acc after tile i's group (promote).
      const bool fresh = i % PROMOTE == 0;
      const bool promote = (i + 1) % PROMOTE == 0 || i + 1 == nk;
      if constexpr (PASSES == 3) {
        Pin(part);
      } else {
        Pin(acc);
      }
      WgmmaFence();
#pragma unroll
      for (int kk = 0; kk < BK / 8; ++kk) {
        const unsigned long long d_big = d_big0 + 2ull * kk;
        if constexpr (PASSES == 3) {
          const unsigned long long d_small = d_small0 + 2ull * kk;
          WgmmaRs<BM>::Run(part, small[kk], d_big, kk > 0 || !fresh ? 1 : 0);
          WgmmaRs<BM>::Run(part, big[kk], d_small, 1);
          WgmmaRs<BM>::Run(part, big[kk], d_big, 1);
        } else {
          WgmmaRs<BM>::Run(acc, big[kk], d_big, 1);
        }
      }
      WgmmaCommit();
      // Tile i + AHEAD's copies into the stage of tile i + AHEAD - STAGES,
      // whose wgmmas every warpgroup waited for before the barrier of tile
      // i + AHEAD - STAGES + 1: i - 2 here (AHEAD STAGES - 2), i - 1 after
      // this step's barrier (AHEAD STAGES - 1).
      auto copy_ahead = [&]() {
        if (i + AHEAD < nk) load((i + AHEAD) % STAGES, i + AHEAD);
        sgemm_detail::CpAsyncCommit();
      };
      if constexpr (AHEAD == STAGES - 2) copy_ahead();
      unsigned char* next = smem + ((i + 1) % STAGES) * STAGE_BYTES;
      if (i + 1 < nk) {
        // This thread's copies of tile i + 1 landed: of the groups
        // committed, those of tiles i + 2 .. i + STAGES - 2 may be pending.
        sgemm_detail::CpAsyncWait<STAGES - 3>();
        if constexpr (PASSES == 3) {
          SplitA(next, tid);
          FenceProxyAsync();
        }
      }
      // Tile i - 1's group (unless it was waited for: 3xTF32's promotion):
      // the other fragment set is free.
      if (PASSES == 1 || !fresh) WgmmaWait<1>();
      __syncthreads();  // tile i + 1 split and landed in every thread
      if constexpr (AHEAD == STAGES - 1) copy_ahead();
      if (i + 1 < nk) {
        Fragments(next, base + ((i + 1) % STAGES) * STAGE_BYTES, n0, t, nbig, nsmall);
      }
      if (PASSES == 3 && promote) {
        WgmmaWait<0>();
        Pin(part);
#pragma unroll
        for (int e = 0; e < ACC; ++e) acc[e] += part[e];
      }
    };
    for (int i = 0; i < nk; i += 2) {
      step(i, big0, small0, big1, small1);
      if (i + 1 < nk) step(i + 1, big1, small1, big0, small0);
    }
    WgmmaWait<0>();
    Pin(acc);
  }

  // The warp-specialized form (WS, TF32; a probe ran it 3-6% faster than
  // KLoop on the large shapes): a producer warpgroup (its registers cut to 40 with setmaxnreg) issues every copy of a K tile,
  // WS_PRODUCERS threads, and arrives on the stage's "full" mbarrier through
  // cp.async.mbarrier.arrive; the THREADS consumer threads (registers raised
  // to 232) wait for it, read their fragments, issue the wgmmas, and after
  // wgmma.wait_group 1 arrive (a lane a warp) on the previous tile's
  // "empty" mbarrier, which the producer waits for before refilling it. No
  // CTA barrier in the K loop: each warpgroup runs at its own pace. The
  // mbarriers lie after the stages: full[STAGES], empty[STAGES].
  enum : int { WS_PRODUCERS = 128, WS_BARS = STAGES * STAGE_BYTES };

  // The producer (ptid: its thread in the producer warpgroup). TMA (A by
  // the tensor map `tma`, see RsGemm): thread 0 arrives on the stage's
  // "full" with A's BM x BK x 4 bytes of transactions expected and issues
  // one 2-D bulk tensor copy, which writes the 128-byte swizzle itself (the
  // layout Swizzle<128> gives the cp.async) and zero-fills rows beyond M and
  // columns beyond K; the producer warpgroup copies B alone. On the H100
  // that made the probe's WS 7-12% faster on 4096^3 and 8192^3 (128
  // threads' cp.async of A could not keep enough bytes in flight).
  template <bool VEC, bool FULL, bool TMA>
  static __device__ __forceinline__ void Produce(unsigned char* smem, unsigned base,
                                                 const float* __restrict__ A,
                                                 const float* __restrict__ B, int rows, int cols,
                                                 int ldb, int K, int kt0, int kt1, int ptid,
                                                 const TensorMap* tma, int m0) {
    const unsigned full = base + WS_BARS, empty = full + 8 * STAGES;
    FullCopier<WS_PRODUCERS> copier(A, B, ldb, K, kt0 * BK, ptid);
    const int nk = kt1 - kt0;
    for (int t = 0; t < nk; ++t) {
      const int st = t % STAGES;
      if (t >= STAGES) MbarWait(empty + 8 * st, ((t / STAGES) - 1) & 1);
      if constexpr (TMA) {
        if (ptid == 0) {
          MbarArriveTx(full + 8 * st, BM * BK * 4);
          TmaLoad2d(base + st * STAGE_BYTES, tma, (kt0 + t) * BK, m0, full + 8 * st);
        }
      }
      if constexpr (FULL) {
        copier.template Issue<!TMA>(base + st * STAGE_BYTES);
      } else {
        Load<VEC, WS_PRODUCERS, !TMA>(smem + st * STAGE_BYTES, A, B, rows, cols, ldb, K,
                                      (kt0 + t) * BK, ptid);
      }
      CpAsyncArrive(full + 8 * st);
    }
  }

  // Produce on the path the block's tile takes (see RsGemm's vec, whole).
  template <bool TMA>
  static __device__ __forceinline__ void ProduceAny(bool vec, bool whole, unsigned char* smem,
                                                    unsigned base, const float* __restrict__ A,
                                                    const float* __restrict__ B, int rows,
                                                    int cols, int ldb, int K, int kt0, int kt1,
                                                    int ptid, const TensorMap* tma, int m0) {
    if (vec && whole) {
      Produce<true, true, TMA>(smem, base, A, B, rows, cols, ldb, K, kt0, kt1, ptid, tma, m0);
    } else if (vec) {
      Produce<true, false, TMA>(smem, base, A, B, rows, cols, ldb, K, kt0, kt1, ptid, tma, m0);
    } else {
      Produce<false, false, TMA>(smem, base, A, B, rows, cols, ldb, K, kt0, kt1, ptid, tma, m0);
    }
  }

  // A consumer (tid < THREADS): K tiles kt0 .. kt0 + nk - 1 into acc, as
  // KLoop's (the same fragments, wgmmas and accumulator layout).
  static __device__ __forceinline__ void Consume(unsigned char* smem, unsigned base, int nk,
                                                 int tid, float (&acc)[ACC]) {
    static_assert(PASSES == 1, "WS: TF32");
    const unsigned full = base + WS_BARS, empty = full + 8 * STAGES;
    const int t = FragT(tid), n0 = FragN(tid);
    const bool lane0 = tid % 32 == 0;
    unsigned f0[BK / 8][4], f1[BK / 8][4], unused[BK / 8][4];
    MbarWait(full, 0);
    Fragments(smem, base, n0, t, f0, unused);
    auto step = [&](int i, unsigned (&f)[BK / 8][4], unsigned (&nf)[BK / 8][4]) {
      const unsigned long long d0 = Descriptor<ROWB>(base + (i % STAGES) * STAGE_BYTES);
      Pin(acc);
      WgmmaFence();
#pragma unroll
      for (int kk = 0; kk < BK / 8; ++kk) WgmmaRs<BM>::Run(acc, f[kk], d0 + 2ull * kk, 1);
      WgmmaCommit();
      if (i + 1 < nk) MbarWait(full + 8 * ((i + 1) % STAGES), ((i + 1) / STAGES) & 1);
      WgmmaWait<1>();  // tile i - 1's wgmmas: its stage is free here
      if (i >= 1 && lane0) MbarArrive(empty + 8 * ((i - 1) % STAGES));
      if (i + 1 < nk) {
        Fragments(smem + ((i + 1) % STAGES) * STAGE_BYTES, base + ((i + 1) % STAGES) * STAGE_BYTES,
                  n0, t, nf, unused);
      }
    };
    for (int i = 0; i < nk; i += 2) {
      step(i, f0, f1);
      if (i + 1 < nk) step(i + 1, f1, f0);
    }
    WgmmaWait<0>();
    Pin(acc);
  }
};

// The LA = 0 kernel body (sgemm_wgmma's signature, its shared memory):
// the output tile, the split's K tiles, RsTile's K loop, then C = alpha *
// acc + beta * C (SPLITK > 1: atomicAdd of alpha * acc, C prescaled).
// WS: `tma` is A's tensor map (dims K, M; box 32 x BM; 128-byte swizzle),
// used where the launcher encoded it (MapEncoded): over A where K % 4 == 0
// and A is 16-byte aligned (TMA's rules), else over A's staged copy
// (TensorMap.stage); where it is zeros the producer copies A with cp.async.
// `tma_b`, B's map, is never read by TMA: encoded, it says that B comes at
// a pitch of a multiple of 4 floats and 16-byte aligned, B itself or its
// staged copy (whose rows the launcher pads with zeros, and whose address
// it passes as B), so the producer copies B with 16-byte cp.async.
template <int BM, int BN, int STAGES, int SPLITK, int PASSES, int GROUP, int PROMOTE, int WS,
          int LAYOUT = 0>
__device__ __forceinline__ void RsGemm(int M, int N, int K, float alpha,
                                       const float* __restrict__ A, const float* __restrict__ B,
                                       float beta, float* __restrict__ C, unsigned char* smem_raw,
                                       const TensorMap* tma = nullptr,
                                       const TensorMap* tma_b = nullptr) {
  // TT (SWAP): C^T = B * A is this body's NN problem, of N x M: B (N x K, k
  // contiguous) in A's place, A (K x M, m contiguous) in B's, and C^T's
  // tile written to C transposed (the epilogue); the launch's grid and A's
  // tensor map are the swapped problem's (WgmmaGeometry).
  constexpr bool SWAP = LAYOUT == 3;
  static_assert(LAYOUT != 2, "LA=0: op(A) = A^T only with op(B) = B^T (TT)");
  const int ldc = N;  // C's row pitch
  if constexpr (SWAP) {
    const int m = M;
    M = N;
    N = m;
    const float* a = A;
    A = B;
    B = a;
  }
  using T = RsTile<BM, BN, STAGES, PASSES, PROMOTE, SWAP ? 0 : LAYOUT>;
  const int tiles_m = CeilDiv(M, BM), tiles_n = CeilDiv(N, BN);
  int tile_m, tile_n;
  sgemm_detail::RasterTile<GROUP>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
  if (tile_m >= tiles_m) return;
  int kt0, kt1;
  if (!sgemm_detail::SplitKRange<SPLITK>(CeilDiv(K, T::BK), kt0, kt1)) return;
  const unsigned raw = SmemAddr(smem_raw);
  const unsigned pad = (1024u - (raw & 1023u)) & 1023u;
  const int tid = threadIdx.x;
  const int bm = tile_m * BM, bn = tile_n * BN;
  const int rows = M - bm, cols = N - bn;
  // B's row pitch: its own, or where B's map is encoded (WS) rounded up
  // to 4 floats (a staged copy's; B's own where it is a multiple of 4).
  const bool b16 = WS && tma_b != nullptr && MapEncoded(tma_b);
  const int ldb = b16 ? ((T::TB ? K : N) + 3) & ~3 : T::TB ? K : N;
  const bool by_tma = WS && tma != nullptr && MapEncoded(tma);  // A by TMA
  A += static_cast<long long>(bm) * K;
  B += T::TB ? static_cast<long long>(bn) * ldb : static_cast<long long>(bn);
  C += SWAP ? static_cast<long long>(bn) * ldc + bm : static_cast<long long>(bm) * ldc + bn;
  // 16-byte copies of what cp.async copies: B alone where A goes by TMA.
  const bool vec = by_tma ? (ldb & 3) == 0 && Aligned16(B)
                          : ((K | ldb) & 3) == 0 && Aligned16(A) && Aligned16(B);
  const bool whole = rows >= BM && cols >= BN && K % T::BK == 0;
  if constexpr (WS) {
    const unsigned full = raw + pad + T::WS_BARS;
    if (tid < STAGES) {  // full: the producers' cp.async arrivals (and TMA's expect_tx one)
      MbarInit(full + 8 * tid, T::WS_PRODUCERS + (by_tma ? 1 : 0));
      MbarInit(full + 8 * STAGES + 8 * tid, T::THREADS / 32);
    }
    FenceMbarInit();
    __syncthreads();
    if (tid >= T::THREADS) {  // the producer warpgroup
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
      const int ptid = tid - T::THREADS;
      if (by_tma) {
        T::template ProduceAny<true>(vec, whole, smem_raw + pad, raw + pad, A, B, rows, cols, ldb,
                                     K, kt0, kt1, ptid, tma, bm);
      } else {
        T::template ProduceAny<false>(vec, whole, smem_raw + pad, raw + pad, A, B, rows, cols, ldb,
                                      K, kt0, kt1, ptid, tma, bm);
      }
      return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  }
  float acc[T::ACC];
#pragma unroll
  for (int e = 0; e < T::ACC; ++e) acc[e] = 0.0f;
  if constexpr (WS) {
    T::Consume(smem_raw + pad, raw + pad, kt1 - kt0, tid, acc);
  } else if (vec) {
    if (whole) {
      T::template KLoop<true, true>(smem_raw + pad, raw + pad, A, B, rows, cols, ldb, K, kt0, kt1,
                                    tid, acc);
    } else {
      T::template KLoop<true, false>(smem_raw + pad, raw + pad, A, B, rows, cols, ldb, K, kt0, kt1,
                                     tid, acc);
    }
  } else {
    T::template KLoop<false, false>(smem_raw + pad, raw + pad, A, B, rows, cols, ldb, K, kt0, kt1,
                                    tid, acc);
  }
  // The epilogue through shared memory (the stages are free once every
  // warpgroup's wgmmas are done): acc[4i + j], row 8i + 2t + j % 2 of the
  // block's BM and column n0 + j / 2 (RsTile::ColN0), goes to Cs[m][n] (a
  // pitch of BN + 4 floats: a half-warp's 8-byte stores of both columns hit
  // 32 banks), then each warp writes whole rows of C, 4 floats a thread
  // (float4 where N % 4 == 0 and C is 16-byte aligned, else one by one).
  // Stored straight from acc, a warp's stores were 4 rows of 8 floats.
  // (WS: the consumers alone, at named barrier 1.) SWAP: the tile is C^T's,
  // stored as Cs[n][m] (C's orientation; pitch BM + 4, float2s along m),
  // and written likewise.
  auto sync = [&]() {
    if constexpr (WS) {
      asm volatile("bar.sync 1, %0;\n" ::"r"(static_cast<int>(T::THREADS)) : "memory");
    } else {
      __syncthreads();
    }
  };
  // The tile in C's orientation: CR rows of CW columns (r_lim, c_lim left).
  constexpr int CR = SWAP ? BN : BM, CW = SWAP ? BM : BN, PC = CW + 4;
  const int r_lim = SWAP ? cols : rows, c_lim = SWAP ? rows : cols;
  static_assert(CR * PC * 4 <= STAGES * T::STAGE_BYTES, "the C tile fits in the stages");
  sync();
  float* cs = reinterpret_cast<float*>(smem_raw + pad);
  {
    const int t = tid % 4, n0 = T::ColN0(tid);
#pragma unroll
    for (int i = 0; i < BM / 8; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if constexpr (SWAP) {
          *reinterpret_cast<float2*>(cs + (n0 + h) * PC + 8 * i + 2 * t) =
              make_float2(acc[4 * i + 2 * h], acc[4 * i + 2 * h + 1]);
        } else {
          *reinterpret_cast<float2*>(cs + (8 * i + 2 * t + h) * PC + n0) =
              make_float2(acc[4 * i + h], acc[4 * i + 2 + h]);
        }
      }
    }
  }
  sync();
  const bool cvec = (ldc & 3) == 0 && Aligned16(C);
#pragma unroll 4
  for (int q = tid; q < BM * BN / 4; q += T::THREADS) {
    const int m = q / (CW / 4), n = (q % (CW / 4)) * 4;
    if (m >= r_lim || n >= c_lim) continue;
    const float4 a = *reinterpret_cast<const float4*>(cs + m * PC + n);
    float v[4] = {alpha * a.x, alpha * a.y, alpha * a.z, alpha * a.w};
    float* c = C + static_cast<long long>(m) * ldc + n;
    if constexpr (SPLITK > 1) {
      if (cvec && n + 3 < c_lim) {  // 4 times fewer atomics than scalar ones
        sgemm_detail::RedAdd4(c, v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (n + e < c_lim) atomicAdd(c + e, v[e]);
        }
      }
    } else if (cvec && n + 3 < c_lim) {
      if (beta != 0.0f) {
        const float4 old = *reinterpret_cast<const float4*>(c);
        v[0] = fmaf(beta, old.x, v[0]);
        v[1] = fmaf(beta, old.y, v[1]);
        v[2] = fmaf(beta, old.z, v[2]);
        v[3] = fmaf(beta, old.w, v[3]);
      }
      *reinterpret_cast<float4*>(c) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (n + e < c_lim) c[e] = beta != 0.0f ? fmaf(beta, c[e], v[e]) : v[e];
      }
    }
  }
}

}  // namespace sgemm_wgmma_detail
