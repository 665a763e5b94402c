// Row-major BF16 / FP16 GEMM on tensor cores (mma.sync m16n8k16), sm_80 and
// up (split-K through a thread-block cluster: sm_90 and up):
//
//   C(MxN) = alpha * op(A) * op(B) + beta * C,   ldc = N,
//
// A, B and C 16-bit (DTYPE 2 = BF16, 3 = FP16: tuner.proto DTYPE_BF16 and
// DTYPE_F16), stored as raw `unsigned short`; fp32 accumulation; the result
// alpha * acc + beta * C is formed in fp32 and rounded to nearest even once
// (cvt.rn). DTYPE 4 and 5 (DTYPE_BF16_F32, DTYPE_F16_F32): A and B as 2 and
// 3, C float, never rounded (half16::Elem). beta == 0 never reads C (C may
// hold NaN).
//
// Operand layout LAYOUT (tuner.proto Layout, cuBLAS's op(A), op(B)):
//   0 NN: A M x K (lda = K),              B K x N (ldb = N)
//   1 NT: A M x K (lda = K),              B stored N x K (ldb = K), op(B) = B^T
//   2 TN: A stored K x M (lda = M), op(A) = A^T,  B K x N (ldb = N)
//   3 TT: A stored K x M (lda = M),       B stored N x K (ldb = K)
//
// Compiled after sgemm/sgemm.cuh (its sgemm_detail::RasterTile) and
// sgemm/half16.cuh (the 16-bit conversions), no #include
// (NVRTC with --gpu-architecture=sm_90 or sm_80 and -std=c++17); helpers live
// in namespace mma16_detail. The entry
// point, instantiated through a name expression such as
// "gemm16_mma<2,128,128,32,64,32,4,1,8,0>":
//
//   template <int DTYPE, int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK,
//             int GROUP, int LAYOUT, int MINB = 1>
//   __global__ void gemm16_mma(int M, int N, int K, float alpha, const unsigned short* A,
//                              const unsigned short* B, float beta,
//                              half16::CType<DTYPE>* C);  // DTYPE 4, 5: float*
//
// (two function templates of that name and parameter list, one for SPLITK == 1 and one,
// carrying __cluster_dims__(1, 1, SPLITK), for SPLITK > 1, told apart by a trailing
// defaulted template parameter that name expressions and <<<>>> never spell).
//
// ---------------------------------------------------------------- launch rules
// MINB: __launch_bounds__ minimum blocks per SM (caps registers at 65536 / (threads * MINB)).
// Block: (BM / WM) * (BN / WN) * 32 threads, 1-D (blockDim = (threads, 1, 1)).
// Dynamic shared memory, bytes:
//   PIPE = STAGES * (A_STAGE + B_STAGE) * 2, where
//     A_STAGE = (LAYOUT & 2) ? BK * (BM + 8) : BM * (BK + 8)
//     B_STAGE = (LAYOUT & 1) ? BN * (BK + 8) : BK * (BN + 8)
//   SMEM = SPLITK > 1 ? max(PIPE, BM * BN * 4) : PIPE
// (mma16_detail::Tile<...>::SMEM_BYTES; above 48 KiB the launcher sets
// cudaFuncAttributeMaxDynamicSharedMemorySize / CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
// Grid: x = ceil(M / BM) * ceil(N / BN) (the output tiles), y = 1, z = SPLITK.
//   blockIdx.x = pid is mapped to the output tile (tile_m, tile_n) GROUP tile-rows at
//   a time (sgemm_detail::RasterTile): with G = GROUP * tiles_n,
//   first_m = (pid / G) * GROUP, group_m = min(tiles_m - first_m, GROUP),
//   tile_m = first_m + (pid % G) % group_m, tile_n = (pid % G) / group_m
//   (GROUP 1: row-major, tile_m = pid / tiles_n, tile_n = pid % tiles_n).
//   blockIdx.z = the K split: split z takes K tiles [z * per, min(kt, (z + 1) * per)),
//   kt = ceil(K / BK), per = ceil(kt / SPLITK) (an empty split adds zero).
// SPLITK > 1: the kernel carries __cluster_dims__(1, 1, SPLITK) itself, so a plain
//   launch (<<<>>>, cuLaunchKernel) makes each output tile's SPLITK blocks one
//   cluster; no cluster launch attribute, no workspace, no atomics, no prescaling
//   of C. Needs sm_90; SPLITK <= 8 (the portable cluster size). Compiled for sm_80, only
//   the SPLITK == 1 template exists (a SPLITK > 1 name expression does not resolve).
// Sizes: every M, N, K >= 1 with M*K, K*N, M*N < 2^31 (int element offsets within a
//   row; the row offsets are 64-bit), any 2-byte-aligned A, B, C.
// static_assert refuses: BM % WM, BN % WN, WM % 16, WN % 16, BK % 16 != 0;
//   STAGES < 2; DTYPE not 2 to 5; threads > 1024; SPLITK < 1 or > 8;
//   GROUP < 1; LAYOUT outside 0..3; SMEM > 227 KiB (232448 bytes).
// Not refused but to keep out of a search space: register use above 255 per thread
//   (spills) where WM * WN / 32 accumulators + fragments get large: WM * WN <= 64 * 64
//   stays spill-free; (BM / WM) * (BN / WN) * 32 * regs <= 65536 for MINB blocks/SM.
// ----------------------------------------------------------------------------
//
// Tiling: a block computes a BM x BN tile of C with (BM/WM) x (BN/WN) warps, each a
// WM x WN warp tile of (WM/16) x (WN/8) m16n8k16 tiles. K advances BK at a time.
// Each operand's tile is kept in shared memory as it is stored in global memory
// (A: [BM][BK+8] k contiguous, or [BK][BM+8] m contiguous where op(A) = A^T;
// B: [BK][BN+8] n contiguous, or [BN][BK+8] k contiguous where op(B) = B^T) and
// turned into mma fragments by ldmatrix.x4 (k-contiguous tiles) or ldmatrix.x4.trans
// (m- or n-contiguous tiles): no transposing copies. The 8-element (16-byte) row
// padding makes each row pitch an odd number of 16-byte units, so the eight rows an
// ldmatrix phase reads fall in eight distinct bank groups (conflict-free).
//
// Global -> shared, two block-uniform paths chosen at run time:
//  - lda and ldb multiples of 8 and A, B 16-byte aligned: a STAGES-deep cp.async
//    pipeline of 16-byte copies (an 8-element chunk is all in or all out of the
//    matrix; out-of-range chunks are zero-filled with a source size of 0);
//  - otherwise (odd pitches, K % 8 != 0 for a k-contiguous operand, misaligned
//    pointers): bounds-checked 16-bit loads into registers, issued before the MMAs of
//    the current K tile and stored to the other of two shared buffers after them
//    (register double buffering).
// Out-of-range elements read as zero, so partial tiles need no special MMA code.
//
// Split-K (SPLITK > 1): the SPLITK blocks of an output tile form a cluster along z.
// Each writes its fp32 accumulators to its own shared memory (fragment order, one
// float4 per thread and m16n8 tile), barrier.cluster, then block r adds, for the
// m16n8 tiles t with t % SPLITK == r, the other blocks' partial sums read through
// distributed shared memory (mapa + ld.shared::cluster) to its own and writes those
// C elements; a second barrier.cluster keeps every block's shared memory alive until
// all reads are done.

namespace mma16_detail {

__device__ __forceinline__ int CeilDiv(int m, int b) { return m / b + (m % b != 0); }

__device__ __forceinline__ unsigned SmemAddr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ bool Aligned(const void* p, unsigned long long bytes) {
  return (reinterpret_cast<unsigned long long>(p) & (bytes - 1)) == 0;
}

// 16-byte global -> shared copy; zero-fill (reading nothing) when !pred.
__device__ __forceinline__ void CpAsync16(unsigned dst, const void* src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(pred ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// *p when pred, else 0: a 16-bit load issued where it stands (volatile asm keeps it
// ahead of the MMAs of the current K tile, so its latency overlaps them).
__device__ __forceinline__ unsigned LoadU16(const unsigned short* p, bool pred) {
  unsigned short x = 0;
  asm volatile(
      "{\n .reg .pred q;\n setp.ne.b32 q, %2, 0;\n @q ld.global.nc.u16 %0, [%1];\n}\n"
      : "+h"(x)
      : "l"(p), "r"(static_cast<int>(pred)));
  return x;
}

// Four 8x8 b16 matrices; lanes 8j..8j+7 give the row addresses of matrix j.
__device__ __forceinline__ void Ldm4(unsigned (&d)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(addr));
}
__device__ __forceinline__ void Ldm4T(unsigned (&d)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(addr));
}

// d += a * b, one m16n8k16 tile, fp32 accumulation (not volatile: a register-only
// operation the compiler may interleave with the next k16 step's ldmatrix).
template <int DTYPE>
__device__ __forceinline__ void Mma(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                    unsigned b1) {
  if constexpr (DTYPE == 2) {
    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Cluster helpers (sm_90).
__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ float4 LdCluster(unsigned local_addr, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local_addr), "r"(rank));
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}

template <int DTYPE, int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK, int LAYOUT>
struct Tile {
  enum : int {
    WARPS_M = BM / WM,
    WARPS_N = BN / WN,
    THREADS = WARPS_M * WARPS_N * 32,
    MI = WM / 16,  // m16 tiles of a warp tile
    NI = WN / 8,   // n8 tiles
    TA = (LAYOUT & 2) != 0,
    TB = (LAYOUT & 1) != 0,
    // Shared tiles as stored in global memory, rows padded by 8 elements.
    A_ROWS = TA ? BK : BM,
    A_COLS = TA ? BM : BK,
    B_ROWS = TB ? BN : BK,
    B_COLS = TB ? BK : BN,
    SA = A_COLS + 8,
    SB = B_COLS + 8,
    A_STAGE = A_ROWS * SA,  // elements
    B_STAGE = B_ROWS * SB,
    PIPE_BYTES = STAGES * (A_STAGE + B_STAGE) * 2,
    RED_BYTES = SPLITK > 1 ? BM * BN * 4 : 0,
    SMEM_BYTES = PIPE_BYTES > RED_BYTES ? PIPE_BYTES : RED_BYTES,
    // Register path: element pairs per thread.
    A_PAIRS = (A_ROWS * A_COLS / 2 + THREADS - 1) / THREADS,
    B_PAIRS = (B_ROWS * B_COLS / 2 + THREADS - 1) / THREADS,
  };
  static_assert(DTYPE == 2 || DTYPE == 3, "DTYPE: 2 (BF16) or 3 (FP16)");
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0, "warp tiling");
  static_assert(BK % 16 == 0 && STAGES >= 2, "BK, STAGES");
  static_assert(THREADS <= 1024, "threads");
  static_assert(SPLITK >= 1 && SPLITK <= 8, "SPLITK: 1..8 (portable cluster size)");
  static_assert(LAYOUT >= 0 && LAYOUT <= 3, "LAYOUT");
  static_assert(SMEM_BYTES <= 232448, "shared memory");

  // dst (row pitch S) <- the R x C tile at src (row pitch ld), rows < r_lim and
  // columns < c_lim, zeros elsewhere; 16-byte cp.async (ld % 8 == 0, src aligned).
  template <int R, int C, int S>
  static __device__ __forceinline__ void Copy16(unsigned dst, const unsigned short* src, int ld,
                                                int r_lim, int c_lim, int tid) {
    constexpr int CH = R * C / 8, PER = (CH + THREADS - 1) / THREADS;
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = tid + i * THREADS;
      if (CH % THREADS == 0 || c < CH) {
        const int r = c / (C / 8), cc = (c % (C / 8)) * 8;
        const bool p = r < r_lim && cc < c_lim;
        CpAsync16(dst + (r * S + cc) * 2, p ? src + static_cast<long long>(r) * ld + cc : src, p);
      }
    }
  }

  // Register path: thread tid holds element pairs (r, cc), (r, cc + 1) of the R x C
  // tile, rows r0, r0 + RS, ... at one column pair cc where a row's C / 2 pairs
  // divide THREADS, else rows 0 .. R - 1 at pairs tid, tid + THREADS, ...
  template <int R, int C>
  static __device__ __forceinline__ void LoadPairs(unsigned* regs, const unsigned short* src,
                                                   int ld, int r_lim, int c_lim, int tid) {
    constexpr int CP = C / 2;
    static_assert(THREADS % CP == 0 || CP % THREADS == 0, "register path: pairs per row");
    if constexpr (THREADS % CP == 0) {
      constexpr int RS = THREADS / CP, PER = (R + RS - 1) / RS;
      const int r0 = tid / CP, cc = (tid % CP) * 2;
      const bool ok0 = cc < c_lim, ok1 = cc + 1 < c_lim;
      const unsigned short* p = src + static_cast<long long>(r0) * ld + cc;
      const long long step = static_cast<long long>(RS) * ld;
#pragma unroll
      for (int i = 0; i < PER; ++i) {
        const int r = r0 + i * RS;
        unsigned v;
        const bool in = (R % RS == 0 || r < R) && r < r_lim;
        v = LoadU16(p, in && ok0) | (LoadU16(p + 1, in && ok1) << 16);
        regs[i] = v;
        p += step;
      }
    } else {
      constexpr int PC = CP / THREADS;
      const unsigned short* p = src;
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int j = 0; j < PC; ++j) {
          const int cc = (tid + j * THREADS) * 2;
          regs[r * PC + j] = LoadU16(p + cc, r < r_lim && cc < c_lim) |
                             (LoadU16(p + cc + 1, r < r_lim && cc + 1 < c_lim) << 16);
        }
        p += ld;
      }
    }
  }

  template <int R, int C, int S>
  static __device__ __forceinline__ void StorePairs(unsigned short* dst, const unsigned* regs,
                                                    int tid) {
    constexpr int CP = C / 2;
    if constexpr (THREADS % CP == 0) {
      constexpr int RS = THREADS / CP, PER = (R + RS - 1) / RS;
      const int r0 = tid / CP, cc = (tid % CP) * 2;
#pragma unroll
      for (int i = 0; i < PER; ++i) {
        const int r = r0 + i * RS;
        if (R % RS == 0 || r < R) *reinterpret_cast<unsigned*>(dst + r * S + cc) = regs[i];
      }
    } else {
      constexpr int PC = CP / THREADS;
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int j = 0; j < PC; ++j) {
          const int cc = (tid + j * THREADS) * 2;
          *reinterpret_cast<unsigned*>(dst + r * S + cc) = regs[r * PC + j];
        }
      }
    }
  }

  // The corners of K tile kt's A and B tiles and their limits (A at the block's
  // first row/column of op(A), B likewise; rows, cols left in M and N).
  struct Src {
    const unsigned short* a;
    const unsigned short* b;
    int ar, ac, br, bc;
  };
  static __device__ __forceinline__ Src Corner(int kt, const unsigned short* A,
                                               const unsigned short* B, int rows, int cols,
                                               int lda, int ldb, int K) {
    const int k0 = kt * BK;
    Src s;
    if constexpr (TA) {
      s.a = A + static_cast<long long>(k0) * lda;
      s.ar = K - k0;
      s.ac = rows;
    } else {
      s.a = A + k0;
      s.ar = rows;
      s.ac = K - k0;
    }
    if constexpr (TB) {
      s.b = B + k0;
      s.br = cols;
      s.bc = K - k0;
    } else {
      s.b = B + static_cast<long long>(k0) * ldb;
      s.br = K - k0;
      s.bc = cols;
    }
    return s;
  }

  static __device__ __forceinline__ void Load16(unsigned short* smem, int stage, int kt,
                                                const unsigned short* A, const unsigned short* B,
                                                int rows, int cols, int lda, int ldb, int K,
                                                int tid) {
    const Src s = Corner(kt, A, B, rows, cols, lda, ldb, K);
    const unsigned base = SmemAddr(smem);
    Copy16<A_ROWS, A_COLS, SA>(base + stage * A_STAGE * 2, s.a, lda, s.ar, s.ac, tid);
    Copy16<B_ROWS, B_COLS, SB>(base + (STAGES * A_STAGE + stage * B_STAGE) * 2, s.b, ldb, s.br,
                               s.bc, tid);
  }

  // acc += the stage's BK slice for the warp tile at (wm, wn).
  static __device__ __forceinline__ void Compute(const unsigned short* smem, int stage, int wm,
                                                 int wn, int lane, float (&acc)[MI][NI][4]) {
    const unsigned a_base = SmemAddr(smem) + stage * A_STAGE * 2;
    const unsigned b_base = SmemAddr(smem) + (STAGES * A_STAGE + stage * B_STAGE) * 2;
    const int j = lane / 8, r = lane % 8;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[MI][4], bf[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        if constexpr (TA) {  // stored [k][m]: matrices (m0,k0) (m8,k0) (m0,k8) (m8,k8)
          const int k = kk + (j / 2) * 8 + r, m = wm + mi * 16 + (j % 2) * 8;
          Ldm4T(af[mi], a_base + (k * SA + m) * 2);
        } else {  // stored [m][k]
          const int m = wm + mi * 16 + (lane % 16), k = kk + (lane / 16) * 8;
          Ldm4(af[mi], a_base + (m * SA + k) * 2);
        }
      }
#pragma unroll
      for (int nj = 0; nj < NI / 2; ++nj) {
        unsigned d[4];  // matrices (n0,k0) (n0,k8) (n8,k0) (n8,k8)
        if constexpr (TB) {  // stored [n][k]
          const int n = wn + nj * 16 + (j / 2) * 8 + r, k = kk + (j % 2) * 8;
          Ldm4(d, b_base + (n * SB + k) * 2);
        } else {  // stored [k][n]
          const int k = kk + (j % 2) * 8 + r, n = wn + nj * 16 + (j / 2) * 8;
          Ldm4T(d, b_base + (k * SB + n) * 2);
        }
        bf[2 * nj][0] = d[0];
        bf[2 * nj][1] = d[1];
        bf[2 * nj + 1][0] = d[2];
        bf[2 * nj + 1][1] = d[3];
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) Mma<DTYPE>(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
      }
    }
  }

  // K tiles [kt0, kt1), 16-byte cp.async pipeline of STAGES stages.
  static __device__ __forceinline__ void KLoop16(unsigned short* smem, const unsigned short* A,
                                                 const unsigned short* B, int rows, int cols,
                                                 int lda, int ldb, int K, int kt0, int kt1,
                                                 int tid, int wm, int wn, int lane,
                                                 float (&acc)[MI][NI][4]) {
    const int nk = kt1 - kt0;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < nk) Load16(smem, s, kt0 + s, A, B, rows, cols, lda, ldb, K, tid);
      CpAsyncCommit();
    }
    int read = 0, write = STAGES - 1;
    for (int i = 0; i < nk; ++i) {
      CpAsyncWait<STAGES - 2>();  // K tile i has landed (this thread's copies)
      __syncthreads();            // everyone's, and stage (i - 1) % STAGES is free
      const int next = i + STAGES - 1;
      if (next < nk) Load16(smem, write, kt0 + next, A, B, rows, cols, lda, ldb, K, tid);
      CpAsyncCommit();
      Compute(smem, read, wm, wn, lane, acc);
      read = read == STAGES - 1 ? 0 : read + 1;
      write = write == STAGES - 1 ? 0 : write + 1;
    }
    CpAsyncWait<0>();
  }

  // K tiles [kt0, kt1), bounds-checked 16-bit loads through registers, two buffers.
  static __device__ __forceinline__ void KLoopRegs(unsigned short* smem, const unsigned short* A,
                                                   const unsigned short* B, int rows, int cols,
                                                   int lda, int ldb, int K, int kt0, int kt1,
                                                   int tid, int wm, int wn, int lane,
                                                   float (&acc)[MI][NI][4]) {
    unsigned ra[A_PAIRS], rb[B_PAIRS];
    auto load = [&](int kt) {
      const Src s = Corner(kt, A, B, rows, cols, lda, ldb, K);
      LoadPairs<A_ROWS, A_COLS>(ra, s.a, lda, s.ar, s.ac, tid);
      LoadPairs<B_ROWS, B_COLS>(rb, s.b, ldb, s.br, s.bc, tid);
    };
    auto store = [&](int stage) {
      StorePairs<A_ROWS, A_COLS, SA>(smem + stage * A_STAGE, ra, tid);
      StorePairs<B_ROWS, B_COLS, SB>(smem + STAGES * A_STAGE + stage * B_STAGE, rb, tid);
    };
    load(kt0);
    store(0);
    __syncthreads();
    for (int kt = kt0; kt < kt1; ++kt) {
      const int stage = (kt - kt0) & 1;
      const bool more = kt + 1 < kt1;
      if (more) load(kt + 1);
      Compute(smem, stage, wm, wn, lane, acc);
      if (more) store(stage ^ 1);
      __syncthreads();
    }
  }
};

template <int DTYPE, int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK, int GROUP,
          int LAYOUT, int EPILOGUE>
__device__ __forceinline__ void Gemm(int M, int N, int K, float alpha,
                                     const unsigned short* __restrict__ A,
                                     const unsigned short* __restrict__ B, float beta,
                                     half16::CType<DTYPE>* __restrict__ C,
                                     const half16::CType<DTYPE>* __restrict__ bias) {
  // The inputs' type (2 or 3) for the tiles and the MMAs; DTYPE for C.
  using T = Tile<half16::Elem<DTYPE>::kIn, BM, BN, BK, WM, WN, STAGES, SPLITK, LAYOUT>;
  static_assert(GROUP >= 1, "GROUP");
  extern __shared__ __align__(16) unsigned short mma16_smem[];
  unsigned short* smem = mma16_smem;
  const int tiles_m = CeilDiv(M, BM), tiles_n = CeilDiv(N, BN);
  int tile_m, tile_n;
  sgemm_detail::RasterTile<GROUP>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
  if (tile_m >= tiles_m) return;  // the same for a whole cluster (it spans z only)
  const int ktiles = CeilDiv(K, BK);
  int kt0 = 0, kt1 = ktiles;
  if constexpr (SPLITK > 1) {
    const int per = CeilDiv(ktiles, SPLITK);
    kt0 = min(ktiles, static_cast<int>(blockIdx.z) * per);
    kt1 = min(ktiles, kt0 + per);
  }

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp / T::WARPS_N) * WM, wn = (warp % T::WARPS_N) * WN;
  const int bm = tile_m * BM, bn = tile_n * BN;
  const int rows = M - bm, cols = N - bn;
  const int lda = T::TA ? M : K, ldb = T::TB ? K : N;
  A += T::TA ? static_cast<long long>(bm) : static_cast<long long>(bm) * lda;
  B += T::TB ? static_cast<long long>(bn) * ldb : static_cast<long long>(bn);

  float acc[T::MI][T::NI][4];
#pragma unroll
  for (int mi = 0; mi < T::MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < T::NI; ++ni) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;
    }
  }
  if (kt0 < kt1) {
    const bool vec = ((lda | ldb) & 7) == 0 && Aligned(A, 16) && Aligned(B, 16);
    if (vec) {
      T::KLoop16(smem, A, B, rows, cols, lda, ldb, K, kt0, kt1, tid, wm, wn, lane, acc);
    } else {
      T::KLoopRegs(smem, A, B, rows, cols, lda, ldb, K, kt0, kt1, tid, wm, wn, lane, acc);
    }
  }

  int rank = 0;
  if constexpr (SPLITK > 1) {  // reduce the partial sums over the cluster
    rank = blockIdx.z;
    __syncthreads();  // the pipeline's shared memory is free
    float4* red = reinterpret_cast<float4*>(smem);
#pragma unroll
    for (int mi = 0; mi < T::MI; ++mi) {
#pragma unroll
      for (int ni = 0; ni < T::NI; ++ni) {
        red[(mi * T::NI + ni) * T::THREADS + tid] =
            make_float4(acc[mi][ni][0], acc[mi][ni][1], acc[mi][ni][2], acc[mi][ni][3]);
      }
    }
    ClusterSync();
#pragma unroll
    for (int mi = 0; mi < T::MI; ++mi) {
#pragma unroll
      for (int ni = 0; ni < T::NI; ++ni) {
        if ((mi * T::NI + ni) % SPLITK != rank) continue;
        const unsigned addr = SmemAddr(red + (mi * T::NI + ni) * T::THREADS + tid);
#pragma unroll
        for (int q = 1; q < SPLITK; ++q) {
          int src = rank + q;
          if (src >= SPLITK) src -= SPLITK;
          const float4 v = LdCluster(addr, src);
          acc[mi][ni][0] += v.x;
          acc[mi][ni][1] += v.y;
          acc[mi][ni][2] += v.z;
          acc[mi][ni][3] += v.w;
        }
      }
    }
  }

  // Epilogue: c0, c1 at row g, c2, c3 at row g + 8, columns 2t and 2t + 1.
  half16::CType<DTYPE>* cb = C + static_cast<long long>(bm) * N + bn;
  // Stores of column pairs (32 bits; fp32 C: 64 bits).
  const bool pairs = (N & 1) == 0 && Aligned(C, 2 * sizeof(half16::CType<DTYPE>));
  const bool read_c = beta != 0.0f;
#pragma unroll
  for (int mi = 0; mi < T::MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < T::NI; ++ni) {
      if (SPLITK > 1 && (mi * T::NI + ni) % SPLITK != rank) continue;
      const int col = wn + ni * 8 + 2 * t;
      if (col >= cols) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wm + mi * 16 + g + 8 * h;
        if (row >= rows) continue;
        half16::CType<DTYPE>* c = cb + static_cast<long long>(row) * N + col;
        float v0 = alpha * acc[mi][ni][2 * h], v1 = alpha * acc[mi][ni][2 * h + 1];
        if (pairs && col + 1 < cols) {
          if (read_c) {
            float o0, o1;
            half16::LoadC2<DTYPE>(c, o0, o1);
            v0 = fmaf(beta, o0, v0);
            v1 = fmaf(beta, o1, v1);
          }
          half16::StoreC2<DTYPE>(c, half16::Fuse<DTYPE, EPILOGUE>(v0, bias, bn + col, N),
                                 half16::Fuse<DTYPE, EPILOGUE>(v1, bias, bn + col + 1, N));
        } else {
          if (read_c) v0 = fmaf(beta, half16::FromC<DTYPE>(c[0]), v0);
          c[0] = half16::ToC<DTYPE>(half16::Fuse<DTYPE, EPILOGUE>(v0, bias, bn + col, N));
          if (col + 1 < cols) {
            if (read_c) v1 = fmaf(beta, half16::FromC<DTYPE>(c[1]), v1);
            c[1] = half16::ToC<DTYPE>(half16::Fuse<DTYPE, EPILOGUE>(v1, bias, bn + col + 1, N));
          }
        }
      }
    }
  }

  if constexpr (SPLITK > 1) ClusterSync();  // no block leaves while others read its partials
}

}  // namespace mma16_detail

// The entry point (see the file comment): SPLITK == 1, no cluster.
template <int DTYPE, int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK, int GROUP,
          int LAYOUT, int MINB = 1,
          typename sgemm_detail::EnableIf<(SPLITK == 1), int>::type = 0>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
    gemm16_mma(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
               const unsigned short* __restrict__ B, float beta,
               half16::CType<DTYPE>* __restrict__ C) {
  mma16_detail::Gemm<DTYPE, BM, BN, BK, WM, WN, STAGES, 1, GROUP, LAYOUT, 0>(M, N, K, alpha, A, B,
                                                                             beta, C, nullptr);
}

// The fused entry (EPILOGUE 1..4, half16::Fuse): the bias after C.
template <int EPILOGUE, int DTYPE, int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK,
          int GROUP, int LAYOUT, int MINB = 1,
          typename sgemm_detail::EnableIf<(SPLITK == 1), int>::type = 0>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
    gemm16_mma_fused(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
                     const unsigned short* __restrict__ B, float beta,
                     half16::CType<DTYPE>* __restrict__ C,
                     const half16::CType<DTYPE>* __restrict__ bias) {
  mma16_detail::Gemm<DTYPE, BM, BN, BK, WM, WN, STAGES, 1, GROUP, LAYOUT, EPILOGUE>(
      M, N, K, alpha, A, B, beta, C, bias);
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// SPLITK > 1: the SPLITK blocks of an output tile are one cluster along z.
template <int DTYPE, int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK, int GROUP,
          int LAYOUT, int MINB = 1,
          typename sgemm_detail::EnableIf<(SPLITK > 1), int>::type = 0>
__global__ void __cluster_dims__(1, 1, SPLITK) __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
    gemm16_mma(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
               const unsigned short* __restrict__ B, float beta,
               half16::CType<DTYPE>* __restrict__ C) {
  mma16_detail::Gemm<DTYPE, BM, BN, BK, WM, WN, STAGES, SPLITK, GROUP, LAYOUT, 0>(
      M, N, K, alpha, A, B, beta, C, nullptr);
}

template <int EPILOGUE, int DTYPE, int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK,
          int GROUP, int LAYOUT, int MINB = 1,
          typename sgemm_detail::EnableIf<(SPLITK > 1), int>::type = 0>
__global__ void __cluster_dims__(1, 1, SPLITK) __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
    gemm16_mma_fused(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
                     const unsigned short* __restrict__ B, float beta,
                     half16::CType<DTYPE>* __restrict__ C,
                     const half16::CType<DTYPE>* __restrict__ bias) {
  mma16_detail::Gemm<DTYPE, BM, BN, BK, WM, WN, STAGES, SPLITK, GROUP, LAYOUT, EPILOGUE>(
      M, N, K, alpha, A, B, beta, C, bias);
}
#endif
