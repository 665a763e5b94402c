// Row-major fp32 GEMM kernels for tuned (family "sgemm", families/sgemm/):
//
//   C(MxN) = alpha * op(A) * op(B) + beta * C,   ldc = N,
//
// in the operand layout LAYOUT (tuner.proto Layout, each kernel template's
// last argument, 0 when left out): op(A) = A (A stored M x K, lda = K) or,
// where LAYOUT & 2, A^T (A stored K x M, lda = M); op(B) = B (B stored K x N,
// ldb = N) or, where LAYOUT & 1, B^T (B stored N x K, ldb = K). LAYOUT 0
// (NN) is C = A * B.
//
// Compiled at runtime by NVRTC: this file is self-contained (no #include) and
// every kernel is a template instantiated through a name expression, e.g.
// "sgemm_tiled<128,128,8,8,8,4,4,0,1,0>" (NN) or
// "sgemm_tiled<128,128,8,8,8,4,4,0,1,0,1>" (NT). Every kernel takes
//
//   (int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
//
// and is correct for every M, N, K >= 1 with M*K, K*N, M*N < 2^31 (int indices)
// (split-K kernels, sgemm_warp with SPLITK > 1, add into C: the launcher sets
// C to beta * C first, LaunchGeometry.prescale_output):
//  - every global load and store is bounds-checked (out-of-range tile
//    elements read as 0); offsets within a block are relative to the block's
//    corner and compared with the rows/columns left, so no index exceeds the
//    buffer sizes even for M, N or K near 2^31;
//  - float4 global accesses happen only on a block-uniform path chosen at run
//    time (the length of the operand's contiguous dimension, its ld, % 4 ==
//    0 and 16-byte aligned pointer), else scalar;
//  - beta == 0 never reads C (BLAS semantics: C may hold NaN), it writes alpha*acc;
//  - the block row is blockIdx.z * gridDim.y + blockIdx.y, so that more than
//    65535 row blocks (M > 65535 * BM) spread over grid.z; blocks past the
//    last row block return at once.
//
// Grid of the naive and tiled kernels: x = ceil(N / BN) column blocks; y * z
// >= ceil(M / BM) row blocks, y = ceil(M / BM) and z = 1 unless that exceeds
// 65535 (Geometry in sgemm.cc). sgemm_warp: see its comment.

namespace sgemm_detail {

// std::enable_if without the standard library (NVRTC compiles these files
// bare): EnableIf<C, T>::type is T where C holds, and nothing otherwise.
// The kernels that take one of several definitions by their template
// arguments (mma16.cuh, wgmma16.cuh, wgmma_tf32_tma.cuh) select with it.
template <bool C, class T = void>
struct EnableIf {};
template <class T>
struct EnableIf<true, T> {
  using type = T;
};

// op(A) = A^T (A stored K x M) and op(B) = B^T (B stored N x K) in layout
// `layout` (tuner.proto Layout: NN 0, NT 1, TN 2, TT 3).
__host__ __device__ constexpr bool TransA(int layout) { return (layout & 2) != 0; }
__host__ __device__ constexpr bool TransB(int layout) { return (layout & 1) != 0; }

__device__ __forceinline__ bool Aligned16(const void* p) {
  return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}

// p[0..3] += (a, b, c, d) in global memory, p 16-byte aligned: one 16-byte
// atomic reduction on sm_90 and up (PTX ISA "red", the .v4.f32 vector
// form), four atomicAdds before.
__device__ __forceinline__ void RedAdd4(float* p, float a, float b, float c, float d) {
#if __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(a), "f"(b), "f"(c),
               "f"(d)
               : "memory");
#else
  atomicAdd(p, a);
  atomicAdd(p + 1, b);
  atomicAdd(p + 2, c);
  atomicAdd(p + 3, d);
#endif
}

// alpha * acc + beta * c, reading c only when beta != 0.
__device__ __forceinline__ float Blend(float acc, float alpha, float beta, const float* c) {
  float out = alpha * acc;
  if (beta != 0.0f) out = fmaf(beta, *c, out);
  return out;
}

// c[0..3] = alpha * (a0..a3) + beta * c[0..3] as one float4 store (c 16-byte
// aligned), reading c only when beta != 0.
__device__ __forceinline__ void Blend4(float* c, float a0, float a1, float a2, float a3,
                                       float alpha, float beta) {
  float4* p = reinterpret_cast<float4*>(c);
  float4 out = make_float4(alpha * a0, alpha * a1, alpha * a2, alpha * a3);
  if (beta != 0.0f) {
    const float4 old = *p;
    out.x = fmaf(beta, old.x, out.x);
    out.y = fmaf(beta, old.y, out.y);
    out.z = fmaf(beta, old.z, out.z);
    out.w = fmaf(beta, old.w, out.w);
  }
  *p = out;
}

// Index of this block's row of blocks (see the file comment).
__device__ __forceinline__ int BlockRow() { return blockIdx.z * gridDim.y + blockIdx.y; }

// ceil(m / b) without overflow.
__device__ __forceinline__ int CeilDiv(int m, int b) { return m / b + (m % b != 0); }

// Output tile (tile_m, tile_n) of a tiles_m x tiles_n grid visited in order
// `pid`: GROUP tile-rows at a time, column by column within the group (L2
// reuse of B's columns; GROUP 1: row by row). tile_m >= tiles_m: none.
template <int GROUP>
__device__ __forceinline__ void RasterTile(int pid, int tiles_m, int tiles_n, int& tile_m,
                                           int& tile_n) {
  if constexpr (GROUP > 1) {
    const int per_group = GROUP * tiles_n;
    const int first_m = (pid / per_group) * GROUP;
    const int group_m = min(tiles_m - first_m, GROUP);
    tile_m = first_m + (pid % per_group) % group_m;
    tile_n = (pid % per_group) / group_m;
  } else {
    tile_m = pid / tiles_n;
    tile_n = pid % tiles_n;
  }
}

// K tiles [kt0, kt1) of split blockIdx.y of SPLITK over `ktiles` (SPLITK 1:
// all); false when the split has none (nothing to add).
template <int SPLITK>
__device__ __forceinline__ bool SplitKRange(int ktiles, int& kt0, int& kt1) {
  kt0 = 0;
  kt1 = ktiles;
  if constexpr (SPLITK > 1) {
    const int per = CeilDiv(ktiles, SPLITK);
    kt0 = blockIdx.y * per;
    kt1 = min(ktiles, kt0 + per);
    return kt0 < kt1;
  }
  return true;  // K >= 1
}

// One thread's output C[row0 + dr][col0 + dc] (none when out of range; row0 <
// M and col0 < N): a dot product over K of op(A)'s row and op(B)'s column,
// each read with its stride along K (1 where K is contiguous).
template <int LAYOUT = 0>
__device__ __forceinline__ void NaiveOutput(int M, int N, int K, float alpha,
                                            const float* __restrict__ A,
                                            const float* __restrict__ B, float beta,
                                            float* __restrict__ C, int row0, int dr, int col0,
                                            int dc) {
  if (dr >= M - row0 || dc >= N - col0) return;
  const int row = row0 + dr;
  const int col = col0 + dc;
  const float* a = TransA(LAYOUT) ? A + row : A + row * K;
  const float* b = TransB(LAYOUT) ? B + col * K : B + col;
  const int sa = TransA(LAYOUT) ? M : 1;  // strides along K
  const int sb = TransB(LAYOUT) ? 1 : N;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(a[k * sa], b[k * sb], acc);
  float* c = C + row * N + col;
  *c = Blend(acc, alpha, beta, c);
}

// The tiled kernel's pieces (see sgemm_tiled below), as static members so that
// the K loop can be instantiated for float4 and for scalar global loads.
template <int BM, int BN, int BK, int TM, int TN, int PAD, int VEC, int LOOP, int MAP, int DB,
          int LAYOUT = 0>
struct Tiled {
  // Derived sizes (an enum: no storage is emitted for them).
  enum : int {
    THREADS = (BM / TM) * (BN / TN),
    TROWS = BM / TM,             // threads along M
    TCOLS = BN / TN,             // threads along N
    WM = TM % 4 == 0 ? 4 : 1,    // contiguous rows per chunk
    WN = TN % 4 == 0 ? 4 : 1,    // contiguous columns per chunk
    LDA = BM + PAD,              // shared row strides, in floats
    LDB = BN + PAD,
    NBUF = DB ? 2 : 1,           // shared buffers
    A_PER = BM * BK / THREADS,   // A tile floats per thread
    B_PER = BN * BK / THREADS,   // B tile floats per thread
  };
  static constexpr bool TRANS_A = TransA(LAYOUT);  // op(A) = A^T: A's tile is MN-contiguous
  static constexpr bool TRANS_B = TransB(LAYOUT);  // op(B) = B^T: B's tile is K-contiguous
  static_assert(BM % TM == 0 && BN % TN == 0, "tile not divisible by the micro-tile");
  static_assert(BM % 4 == 0 && BN % 4 == 0 && PAD % 4 == 0,
                "float4 shared rows need 16-byte alignment");
  static_assert(VEC == 1 || VEC == 4, "VEC is 1 or 4");
  static_assert(BK % VEC == 0, "BK must be a multiple of VEC");
  static_assert((BM * BK) % (THREADS * VEC) == 0 && (BN * BK) % (THREADS * VEC) == 0,
                "tile loads must divide evenly among the threads");

  // Row (within the block tile) of micro-tile row i of thread row tr; column likewise.
  static __device__ __forceinline__ int RowOf(int tr, int i) {
    return MAP ? (i / WM) * (TROWS * WM) + tr * WM + i % WM : tr * TM + i;
  }
  static __device__ __forceinline__ int ColOf(int tc, int j) {
    return MAP ? (j / WN) * (TCOLS * WN) + tc * WN + j % WN : tc * TN + j;
  }

  // Global -> registers: the K slice at k0 of one operand's tile, EXT (BM or
  // BN) long along M (N), `left` of it inside the matrix; PER floats per
  // thread; out-of-range elements read as 0. KC (K-contiguous: A where
  // op(A) = A, B where op(B) = B^T): X points at the tile's first row,
  // element (mn, k) at X[mn * ld + k]; else (MN-contiguous: B where op(B) =
  // B, A where op(A) = A^T) at its first column, (mn, k) at X[k * ld + mn].
  // V: float4 loads along the contiguous dimension (ld % 4 == 0, X 16-byte
  // aligned): KC float4 f covers (f / (BK/4), 4 * (f % (BK/4)) .. +3), else
  // (k, mn) = (f / (EXT/4), 4 * (f % (EXT/4)) .. +3); else scalar.
  template <int EXT, int PER, bool KC, bool V>
  static __device__ __forceinline__ void LoadOperand(const float* __restrict__ X, int left,
                                                     int ld, int kleft, int k0, int tid,
                                                     float (&r)[PER]) {
    if constexpr (V) {
#pragma unroll
      for (int it = 0; it < PER / 4; ++it) {
        const int f = tid + it * THREADS;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if constexpr (KC) {
          const int m = f / (BK / 4);
          const int c = (f % (BK / 4)) * 4;
          // K % 4 == 0 and c % 4 == 0: c < kleft means c + 3 < kleft.
          if (m < left && c < kleft) v = *reinterpret_cast<const float4*>(X + m * ld + k0 + c);
        } else {
          const int k = f / (EXT / 4);
          const int c = (f % (EXT / 4)) * 4;
          // ld % 4 == 0 and the tile's first column % 4 == 0: left % 4 == 0 too.
          if (k < kleft && c < left) v = *reinterpret_cast<const float4*>(X + (k0 + k) * ld + c);
        }
        r[4 * it + 0] = v.x;
        r[4 * it + 1] = v.y;
        r[4 * it + 2] = v.z;
        r[4 * it + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int it = 0; it < PER; ++it) {
        const int e = tid + it * THREADS;
        if constexpr (KC) {
          const int m = e / BK;
          const int c = e % BK;
          r[it] = (m < left && c < kleft) ? X[m * ld + k0 + c] : 0.0f;
        } else {
          const int k = e / EXT;
          const int c = e % EXT;
          r[it] = (k < kleft && c < left) ? X[(k0 + k) * ld + c] : 0.0f;
        }
      }
    }
  }

  // Global -> registers: the K slice at k0 of the block's rows of op(A) (A
  // points at the first, `rows` of them are left) and columns of op(B) (B
  // at the first, `cols` left), each operand as LoadOperand.
  template <bool V>
  static __device__ __forceinline__ void Load(const float* __restrict__ A,
                                              const float* __restrict__ B, int rows, int cols,
                                              int lda, int ldb, int K, int k0, int tid,
                                              float (&ra)[A_PER], float (&rb)[B_PER]) {
    const int kleft = K - k0;  // > 0
    LoadOperand<BM, A_PER, !TRANS_A, V>(A, rows, lda, kleft, k0, tid, ra);
    LoadOperand<BN, B_PER, TRANS_B, V>(B, cols, ldb, kleft, k0, tid, rb);
  }

  // Registers -> one operand's shared tile xs[k][mn], with LoadOperand<EXT,
  // PER, KC, V>'s element mapping: a K-contiguous operand is transposed on
  // its way (scalar stores), an MN-contiguous one copied (float4 stores when V).
  template <int EXT, int LD, int PER, bool KC, bool V>
  static __device__ __forceinline__ void StoreOperand(float (*xs)[LD], int tid,
                                                      const float (&r)[PER]) {
    if constexpr (V) {
#pragma unroll
      for (int it = 0; it < PER / 4; ++it) {
        const int f = tid + it * THREADS;
        if constexpr (KC) {
          const int m = f / (BK / 4);
          const int c = (f % (BK / 4)) * 4;
#pragma unroll
          for (int q = 0; q < 4; ++q) xs[c + q][m] = r[4 * it + q];
        } else {
          const int k = f / (EXT / 4);
          const int c = (f % (EXT / 4)) * 4;
          *reinterpret_cast<float4*>(&xs[k][c]) =
              make_float4(r[4 * it + 0], r[4 * it + 1], r[4 * it + 2], r[4 * it + 3]);
        }
      }
    } else {
#pragma unroll
      for (int it = 0; it < PER; ++it) {
        const int e = tid + it * THREADS;
        if constexpr (KC) {
          xs[e % BK][e / BK] = r[it];
        } else {
          xs[e / EXT][e % EXT] = r[it];
        }
      }
    }
  }

  // Registers -> shared tiles As[k][m] and Bs[k][n], as StoreOperand.
  template <bool V>
  static __device__ __forceinline__ void Store(float (*as)[LDA], float (*bs)[LDB], int tid,
                                               const float (&ra)[A_PER],
                                               const float (&rb)[B_PER]) {
    StoreOperand<BM, LDA, A_PER, !TRANS_A, V>(as, tid, ra);
    StoreOperand<BN, LDB, B_PER, TRANS_B, V>(bs, tid, rb);
  }

  // acc += as^T * bs over one BK slice.
  static __device__ __forceinline__ void Compute(const float (*as)[LDA], const float (*bs)[LDB],
                                                 int tr, int tc, float (&acc)[TM][TN]) {
    if constexpr (LOOP == 0) {
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        float a[TM];
        float b[TN];
#pragma unroll
        for (int i = 0; i < TM; i += WM) {
          if constexpr (WM == 4) {
            const float4 v = *reinterpret_cast<const float4*>(&as[k][RowOf(tr, i)]);
            a[i + 0] = v.x;
            a[i + 1] = v.y;
            a[i + 2] = v.z;
            a[i + 3] = v.w;
          } else {
            a[i] = as[k][RowOf(tr, i)];
          }
        }
#pragma unroll
        for (int j = 0; j < TN; j += WN) {
          if constexpr (WN == 4) {
            const float4 v = *reinterpret_cast<const float4*>(&bs[k][ColOf(tc, j)]);
            b[j + 0] = v.x;
            b[j + 1] = v.y;
            b[j + 2] = v.z;
            b[j + 3] = v.w;
          } else {
            b[j] = bs[k][ColOf(tc, j)];
          }
        }
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          float s = acc[i][j];
#pragma unroll
          for (int k = 0; k < BK; ++k) s = fmaf(as[k][RowOf(tr, i)], bs[k][ColOf(tc, j)], s);
          acc[i][j] = s;
        }
      }
    }
  }

  // acc += (the block's rows of op(A)) * (its columns of op(B)) for this
  // thread's micro-tile, loading the K slices with float4 (V) or scalar loads.
  template <bool V>
  static __device__ __forceinline__ void KLoop(const float* __restrict__ A,
                                               const float* __restrict__ B, int rows, int cols,
                                               int lda, int ldb, int K, int tid, int tr, int tc,
                                               float (*as)[BK][LDA], float (*bs)[BK][LDB],
                                               float (&acc)[TM][TN]) {
    float ra[A_PER];
    float rb[B_PER];
    const int ktiles = CeilDiv(K, BK);
    if constexpr (DB != 0) {
      Load<V>(A, B, rows, cols, lda, ldb, K, 0, tid, ra, rb);
      Store<V>(as[0], bs[0], tid, ra, rb);
      __syncthreads();
      for (int t = 0; t < ktiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < ktiles;
        if (more) Load<V>(A, B, rows, cols, lda, ldb, K, (t + 1) * BK, tid, ra, rb);  // in flight
        Compute(as[cur], bs[cur], tr, tc, acc);
        // Nobody reads buffer cur ^ 1 now: its last readers (slice t - 1)
        // passed the barrier that ended slice t - 1.
        if (more) Store<V>(as[cur ^ 1], bs[cur ^ 1], tid, ra, rb);
        __syncthreads();
      }
    } else {
      for (int t = 0; t < ktiles; ++t) {
        Load<V>(A, B, rows, cols, lda, ldb, K, t * BK, tid, ra, rb);
        Store<V>(as[0], bs[0], tid, ra, rb);
        __syncthreads();
        Compute(as[0], bs[0], tr, tc, acc);
        __syncthreads();
      }
    }
  }

  // The block's tile of C (C points at its corner; rows x cols left)
  // = alpha * acc (+ beta * C), bounds-checked; float4 when VEC == 4,
  // TN % 4 == 0, N % 4 == 0 and C is 16-byte aligned.
  static __device__ __forceinline__ void Epilogue(int rows, int cols, int N, float alpha,
                                                  float beta, float* __restrict__ C, int tr,
                                                  int tc, const float (&acc)[TM][TN]) {
    const bool vec_c = VEC == 4 && WN == 4 && (N & 3) == 0 && Aligned16(C);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = RowOf(tr, i);
      if (row >= rows) continue;
      float* crow = C + row * N;
#pragma unroll
      for (int j = 0; j < TN; j += WN) {
        const int col = ColOf(tc, j);
        if constexpr (WN == 4) {
          if (vec_c) {
            // cols % 4 == 0 and col % 4 == 0: col < cols means col + 3 < cols.
            if (col < cols) {
              Blend4(crow + col, acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3], alpha,
                     beta);
            }
            continue;
          }
        }
#pragma unroll
        for (int w = 0; w < WN; ++w) {
          if (col + w < cols) crow[col + w] = Blend(acc[i][j + w], alpha, beta, crow + col + w);
        }
      }
    }
  }
};

}  // namespace sgemm_detail

// KIND=0. One thread per output; block = (BM, BN, 1) threads with threadIdx.x
// along the rows of C, so a warp reads 32 different rows of A and writes a
// column of C (uncoalesced; with op(A) = A^T, A's reads coalesce).
template <int BM, int BN, int LAYOUT = 0>
__global__ void __launch_bounds__(BM * BN)
    sgemm_naive(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int by = sgemm_detail::BlockRow();
  if (by >= sgemm_detail::CeilDiv(M, BM)) return;
  sgemm_detail::NaiveOutput<LAYOUT>(M, N, K, alpha, A, B, beta, C, by * BM, threadIdx.x,
                                    blockIdx.x * BN, threadIdx.y);
}

// KIND=1. As sgemm_naive, but block = (BN, BM, 1) with threadIdx.x along the
// columns of C: a warp broadcasts one A element and reads/writes consecutive
// B/C elements (coalesced; with op(B) = B^T, B's columns are K-contiguous
// and a warp's reads of B are strided by K).
template <int BM, int BN, int LAYOUT = 0>
__global__ void __launch_bounds__(BM * BN)
    sgemm_coalesced(int M, int N, int K, float alpha, const float* __restrict__ A,
                    const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int by = sgemm_detail::BlockRow();
  if (by >= sgemm_detail::CeilDiv(M, BM)) return;
  sgemm_detail::NaiveOutput<LAYOUT>(M, N, K, alpha, A, B, beta, C, by * BM, threadIdx.y,
                                    blockIdx.x * BN, threadIdx.x);
}

// KIND=2. Shared-memory tiled SGEMM (siboehm's kernels 3-6 in one template).
//
// A block computes a BM x BN tile of C with THREADS = (BM/TM) * (BN/TN) threads
// (1-D block); each thread owns a TM x TN micro-tile held in registers. Per
// BK-deep slice of K the block stages op(A)'s BM x BK tile in As[BK][BM + PAD]
// and op(B)'s BK x BN tile in Bs[BK][BN + PAD], both k-major. A K-contiguous
// operand's tile (A where op(A) = A, B where op(B) = B^T) is read along K and
// transposed on its way into shared memory (PAD floats of padding against
// bank conflicts in its transposed store); an MN-contiguous one (B where
// op(B) = B, A where op(A) = A^T) is read along M (N) and copied as is: the
// global loads coalesce in every layout (Tiled::LoadOperand).
//
//  VEC  1: scalar global loads and stores; 4: float4 global loads of A and B
//       when lda % 4 == ldb % 4 == 0 and both pointers are 16-byte aligned,
//       and float4 stores of C when TN % 4 == 0, N % 4 == 0 and C is aligned
//       (decided at run time, block-uniform), else scalar.
//  LOOP 0: k outermost: TM values of A and TN of B into registers, then their
//       outer product (TM*TN FMAs per TM+TN shared loads);
//       1: for each output (i, j), the k loop reads shared memory directly.
//  MAP  0: a thread owns TM consecutive rows and TN consecutive columns;
//       1: its rows/columns are strided by BM/TM (BN/TN) in chunks of 4 when
//       TM (TN) % 4 == 0, else of 1, so neighbouring lanes read neighbouring
//       shared-memory words (no bank conflicts) and C stores coalesce.
//  DB   0: one shared buffer, two barriers per K slice;
//       1: two shared buffers; the next slice's global loads are issued into
//       registers before computing the current one, one barrier per slice.
//
// Shared-memory reads are float4 when TM (TN) % 4 == 0. Requires (checked by
// sgemm.cc): BM % TM == BN % TN == 0, BM % 4 == BN % 4 == 0, PAD % 4 == 0,
// BK % VEC == 0, BM*BK and BN*BK multiples of THREADS*VEC.
template <int BM, int BN, int BK, int TM, int TN, int PAD, int VEC, int LOOP, int MAP, int DB,
          int LAYOUT = 0>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    sgemm_tiled(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C) {
  using T = sgemm_detail::Tiled<BM, BN, BK, TM, TN, PAD, VEC, LOOP, MAP, DB, LAYOUT>;
  const int by = sgemm_detail::BlockRow();
  if (by >= sgemm_detail::CeilDiv(M, BM)) return;  // past the last row block: whole block
  __shared__ __align__(16) float As[T::NBUF][BK][T::LDA];
  __shared__ __align__(16) float Bs[T::NBUF][BK][T::LDB];

  const int tid = threadIdx.x;
  const int tr = tid / T::TCOLS;
  const int tc = tid % T::TCOLS;
  const int lda = T::TRANS_A ? M : K;
  const int ldb = T::TRANS_B ? K : N;
  // float4 loads of A and B need lda % 4 == ldb % 4 == 0 and 16-byte aligned
  // pointers: one decision for both, so that only one K loop is live.
  const bool vec_ab = VEC == 4 && ((lda | ldb) & 3) == 0 && sgemm_detail::Aligned16(A) &&
                      sgemm_detail::Aligned16(B);
  const int bm = by * BM;
  const int bn = blockIdx.x * BN;
  const int rows = M - bm;  // rows and columns of C left from the block's corner
  const int cols = N - bn;
  A += T::TRANS_A ? static_cast<long long>(bm) : static_cast<long long>(bm) * K;
  B += T::TRANS_B ? static_cast<long long>(bn) * K : static_cast<long long>(bn);
  C += static_cast<long long>(bm) * N + bn;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }
  if (VEC == 4 && vec_ab) {
    T::template KLoop<VEC == 4>(A, B, rows, cols, lda, ldb, K, tid, tr, tc, As, Bs, acc);
  } else {
    T::template KLoop<false>(A, B, rows, cols, lda, ldb, K, tid, tr, tc, As, Bs, acc);
  }
  T::Epilogue(rows, cols, N, alpha, beta, C, tr, tc, acc);
}
