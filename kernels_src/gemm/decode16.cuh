// Row-major BF16 / FP16 GEMM for a few rows of A (decode: M up to 64
// tokens), on tensor cores (mma.sync m16n8k16), streaming B at the memory
// limit:
//
//   C(MxN) = alpha * op(A) * op(B) + beta * C,   ldc = N,
//
// types, rounding and beta == 0 as mma16.cuh (DTYPE 2..5, half16::Elem).
// The product is computed as C^T = op(B)^T op(A)^T: B's N rows (a model's
// weight W, stored N x K in layout NT) are the m16 side of the mma and the
// tokens the n8 side, so that one token costs no more loads of B than
// eight. Each lane reads 8 consecutive k of a row of B with one 16-byte
// load and 8 of a token with another; a k16 step of the mma takes 4 of each
// (the sum over k does not care which k a lane holds, so long as A and B
// agree). In layouts NT and TT, B's rows are K-contiguous (16-byte loads
// where K is a multiple of 8 and B is 16-byte aligned; element loads
// otherwise); in NN and TN they are gathered element by element (correct,
// slow: the family does not measure the kind there, Family::SuitsShape).
// A's tokens are K-contiguous in NN and NT, gathered in TN and TT.
//
// Block: BN / WN warps along N (WN rows of B a warp: WN / 16 m16 tiles) times
// KWARPS warps along K; each warp holds the partial sums of its WN rows for
// the block's BM tokens (BM / 8 n8 tiles) over its share of K, KBLOCKS
// blocks of 32 k loaded ahead per step. The partial sums meet in shared
// memory (KWARPS * BM * BN floats), and with SPLITK > 1 the SPLITK blocks
// of a cluster along z add theirs through distributed shared memory
// (mma16.cuh's LdCluster); each block then writes C for its share of the
// tile. No workspace, no atomics, no prescaling of C.
//
// Grid: x = ceil(N / BN), y = ceil(M / BM), z = SPLITK (one cluster along z,
// __cluster_dims__(1, 1, SPLITK): sm_90; SPLITK <= 8). __launch_bounds__
// names 1 block an SM as the minimum: without it ptxas held some configs to
// 80 registers and spilled, with it they take 91-128 and do not.
//
// Compiled after sgemm/sgemm.cuh, sgemm/half16.cuh and sgemm/mma16.cuh (its
// mma, cluster and alignment helpers), no #include. The entry point, through
// a name expression such as "gemm16_decode<2,8,64,16,2,2,4,1>":
//
//   template <int DTYPE, int BM, int BN, int WN, int KWARPS, int KBLOCKS, int SPLITK,
//             int LAYOUT>
//   __global__ void gemm16_decode(int M, int N, int K, float alpha, const unsigned short* A,
//                                 const unsigned short* B, float beta,
//                                 half16::CType<DTYPE>* C);  // DTYPE 4, 5: float*

namespace decode16_detail {

__device__ __forceinline__ unsigned Word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Elements k..k+7 of a row whose element j is row[j * stride], zero from
// `len` on. CONTIGUOUS (stride 1) with `vec` (row 16-byte aligned, K a
// multiple of 8) and all 8 inside: one 16-byte load, which for the
// STREAMed operand (B, read once) does not allocate in L1.
template <bool CONTIGUOUS, bool STREAM>
__device__ __forceinline__ uint4 Load8(const unsigned short* row, int k, int len, bool vec,
                                       int stride) {
  uint4 v;
  if (CONTIGUOUS && vec && k + 8 <= len) {
    const unsigned short* p = row + k;
    if constexpr (STREAM) {
      asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
          : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
          : "l"(p));
    } else {
      v = __ldg(reinterpret_cast<const uint4*>(p));
    }
    return v;
  }
  unsigned w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int k0 = k + 2 * i, k1 = k0 + 1;
    const long long s = CONTIGUOUS ? 1 : stride;
    const unsigned lo = k0 < len ? __ldg(row + k0 * s) : 0u;
    const unsigned hi = k1 < len ? __ldg(row + k1 * s) : 0u;
    w[i] = lo | (hi << 16);
  }
  v.x = w[0];
  v.y = w[1];
  v.z = w[2];
  v.w = w[3];
  return v;
}

enum OwnSum { kZero, kAddAndClear, kAdd, kStore };

// This thread's elements of a warp's partial sums `part` ([token][row of
// B], BN rows), as its accumulators hold them: c0, c1 of an mma are row g of
// its m16 tile and tokens 2t and 2t + 1; c2, c3 row g + 8. kZero zeroes
// them, kStore writes the accumulators, kAdd adds them, kAddAndClear adds
// them and zeroes the accumulators.
template <int OP, int BN, int WN, int WR, int MT>
__device__ __forceinline__ void OwnSums(float* part, float (&acc)[WR][MT][4], int wn, int g,
                                        int t) {
#pragma unroll
  for (int r = 0; r < WR; ++r) {
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int token = 8 * i + 2 * t + (e & 1);
        const int row = wn * WN + 16 * r + g + 8 * (e >> 1);
        float& p = part[token * BN + row];
        if constexpr (OP == kZero) p = 0.0f;
        if constexpr (OP == kStore) p = acc[r][i][e];
        if constexpr (OP == kAdd || OP == kAddAndClear) p += acc[r][i][e];
        if constexpr (OP == kAddAndClear) acc[r][i][e] = 0.0f;
      }
    }
  }
}

template <int DTYPE, int BM, int BN, int WN, int KWARPS, int KBLOCKS, int SPLITK, int LAYOUT,
          int EPILOGUE>
__device__ __forceinline__ void Decode(int M, int N, int K, float alpha,
                                       const unsigned short* __restrict__ A,
                                       const unsigned short* __restrict__ B, float beta,
                                       half16::CType<DTYPE>* __restrict__ C,
                                       const half16::CType<DTYPE>* __restrict__ bias) {
  constexpr int kIn = half16::Elem<DTYPE>::kIn;
  constexpr int NWARPS = BN / WN;  // warps along N
  constexpr int THREADS = 32 * NWARPS * KWARPS;
  constexpr int WR = WN / 16;  // m16 tiles (16 rows of B) a warp
  constexpr int MT = BM / 8;   // n8 tiles (8 tokens) a warp
  constexpr bool kBRows = (LAYOUT & 1) != 0;  // B stored N x K (NT, TT)
  constexpr bool kARows = LAYOUT < 2;         // A stored M x K (NN, NT)
  constexpr int TILE = BM * BN;
  static_assert(DTYPE >= 2 && DTYPE <= 5, "DTYPE: 2..5");
  static_assert(BM % 8 == 0 && BM >= 8 && BM <= 64, "BM: 8, 16, ..., 64 tokens");
  static_assert(WN % 16 == 0 && BN % WN == 0, "WN: a multiple of 16 dividing BN");
  static_assert(KWARPS >= 1 && KBLOCKS >= 1, "KWARPS, KBLOCKS >= 1");
  static_assert(THREADS <= 1024, "threads: at most 1024");
  static_assert(SPLITK >= 1 && SPLITK <= 8, "SPLITK: 1..8 (portable cluster size)");
  __shared__ __align__(16) float red[KWARPS * TILE];  // [k-warp][token][row of B]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wn = warp % NWARPS, wk = warp / NWARPS;
  const int g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
  const int rank = SPLITK > 1 ? static_cast<int>(blockIdx.z) : 0;

  // This warp's share of K: whole blocks of 32, slice rank * KWARPS + wk.
  const int kblocks = sgemm_detail::CeilDiv(K, 32);
  const int per = sgemm_detail::CeilDiv(kblocks, SPLITK * KWARPS);
  const int kbeg = (rank * KWARPS + wk) * per * 32;
  const int kend = min(K, kbeg + per * 32);
  const bool vec_b = kBRows && K % 8 == 0 && mma16_detail::Aligned(B, 16);
  const bool vec_a = kARows && K % 8 == 0 && mma16_detail::Aligned(A, 16);

  // Rows g and g + 8 of each m16 tile; tokens g of each n8 tile.
  const unsigned short* brow[WR][2];
  bool bok[WR][2];
#pragma unroll
  for (int r = 0; r < WR; ++r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = n0 + wn * WN + 16 * r + g + 8 * h;
      bok[r][h] = n < N;
      brow[r][h] = B + (bok[r][h] ? (kBRows ? static_cast<long long>(n) * K : n) : 0);
    }
  }
  const unsigned short* arow[MT];
  bool aok[MT];
#pragma unroll
  for (int i = 0; i < MT; ++i) {
    const int m = m0 + 8 * i + g;
    aok[i] = m < M;
    arow[i] = A + (aok[i] ? (kARows ? static_cast<long long>(m) * K : m) : 0);
  }

  float acc[WR][MT][4];
#pragma unroll
  for (int r = 0; r < WR; ++r) {
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[r][i][e] = 0.0f;
    }
  }

  // Where one warp alone sums all of K (one k-warp, no split-K) into an fp32
  // C, its accumulators are added into its own elements of the shared
  // partial sums every 512 k and start again from zero: a sum in two levels,
  // whose rounding error stays within the bound of the fp64 check (twice
  // cuBLAS's) at K of 4096 and more, where one chain of K / 16 mmas did not.
  // Shared memory holds the first level, so no register is added. A 16-bit
  // C rounds far coarser than the chain, and split sums already run in
  // parallel chains.
  constexpr bool kTwoLevel = DTYPE >= 4 && KWARPS == 1 && SPLITK == 1;
  float* part = red + wk * TILE;
  if constexpr (kTwoLevel) OwnSums<kZero, BN, WN>(part, acc, wn, g, t);

  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  for (int k0 = kbeg; k0 < kend; k0 += 32 * KBLOCKS) {
    uint4 bv[KBLOCKS][WR][2], av[KBLOCKS][MT];
#pragma unroll
    for (int q = 0; q < KBLOCKS; ++q) {
      const int k = k0 + 32 * q + 8 * t;  // this lane's 8 k of the block
#pragma unroll
      for (int r = 0; r < WR; ++r) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          bv[q][r][h] = bok[r][h] ? Load8<kBRows, true>(brow[r][h], k, kend, vec_b, N) : zero;
        }
      }
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        av[q][i] = aok[i] ? Load8<kARows, false>(arow[i], k, kend, vec_a, M) : zero;
      }
    }
#pragma unroll
    for (int q = 0; q < KBLOCKS; ++q) {
#pragma unroll
      for (int s = 0; s < 2; ++s) {  // k16 step s: words 2s and 2s + 1 of each load
#pragma unroll
        for (int r = 0; r < WR; ++r) {
          const unsigned a[4] = {Word(bv[q][r][0], 2 * s), Word(bv[q][r][1], 2 * s),
                                 Word(bv[q][r][0], 2 * s + 1), Word(bv[q][r][1], 2 * s + 1)};
#pragma unroll
          for (int i = 0; i < MT; ++i) {
            mma16_detail::Mma<kIn>(acc[r][i], a, Word(av[q][i], 2 * s), Word(av[q][i], 2 * s + 1));
          }
        }
      }
    }
    if constexpr (kTwoLevel) {
      if ((k0 - kbeg + 32 * KBLOCKS) % 512 == 0) {
        OwnSums<kAddAndClear, BN, WN>(part, acc, wn, g, t);
      }
    }
  }

  OwnSums<kTwoLevel ? kAdd : kStore, BN, WN>(part, acc, wn, g, t);
  __syncthreads();
  if constexpr (KWARPS > 1) {  // each thread adds the k-warps' sums of its own elements
    for (int idx = tid; idx < TILE; idx += THREADS) {
      float sum = red[idx];
#pragma unroll
      for (int q = 1; q < KWARPS; ++q) sum += red[q * TILE + idx];
      red[idx] = sum;
    }
  }
  if constexpr (SPLITK > 1) {
    mma16_detail::ClusterSync();  // every block's sums are complete
  } else if constexpr (KWARPS > 1) {
    __syncthreads();  // the groups below were added by other threads
  }

  // Block `rank` of the cluster writes the groups of 4 elements q4 = rank (mod SPLITK).
  const bool read_c = beta != 0.0f;
  for (int q4 = tid * SPLITK + rank; q4 < TILE / 4; q4 += THREADS * SPLITK) {
    float4 sum;
    if constexpr (SPLITK > 1) {
      sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      const unsigned addr = mma16_detail::SmemAddr(red + 4 * q4);
#pragma unroll
      for (int src = 0; src < SPLITK; ++src) {
        const float4 v = mma16_detail::LdCluster(addr, src);
        sum.x += v.x;
        sum.y += v.y;
        sum.z += v.z;
        sum.w += v.w;
      }
    } else {
      sum = *reinterpret_cast<const float4*>(red + 4 * q4);
    }
    const float v[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int idx = 4 * q4 + e;
      const int m = m0 + idx / BN, n = n0 + idx % BN;
      if (m >= M || n >= N) continue;
      half16::CType<DTYPE>* c = C + static_cast<long long>(m) * N + n;
      float out = alpha * v[e];
      if (read_c) out = fmaf(beta, half16::FromC<DTYPE>(*c), out);
      *c = half16::ToC<DTYPE>(half16::Fuse<DTYPE, EPILOGUE>(out, bias, n, N));
    }
  }
  if constexpr (SPLITK > 1) mma16_detail::ClusterSync();  // no block leaves while others read it
}

}  // namespace decode16_detail

// The entry point (see the file comment): SPLITK == 1, no cluster.
template <int DTYPE, int BM, int BN, int WN, int KWARPS, int KBLOCKS, int SPLITK, int LAYOUT,
          typename sgemm_detail::EnableIf<(SPLITK == 1), int>::type = 0>
__global__ void __launch_bounds__(32 * (BN / WN) * KWARPS, 1)
    gemm16_decode(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
                  const unsigned short* __restrict__ B, float beta,
                  half16::CType<DTYPE>* __restrict__ C) {
  decode16_detail::Decode<DTYPE, BM, BN, WN, KWARPS, KBLOCKS, 1, LAYOUT, 0>(M, N, K, alpha, A, B,
                                                                            beta, C, nullptr);
}

// The fused entry (EPILOGUE 1..4, half16::Fuse): the bias after C.
template <int EPILOGUE, int DTYPE, int BM, int BN, int WN, int KWARPS, int KBLOCKS, int SPLITK,
          int LAYOUT, typename sgemm_detail::EnableIf<(SPLITK == 1), int>::type = 0>
__global__ void __launch_bounds__(32 * (BN / WN) * KWARPS, 1)
    gemm16_decode_fused(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
                        const unsigned short* __restrict__ B, float beta,
                        half16::CType<DTYPE>* __restrict__ C,
                        const half16::CType<DTYPE>* __restrict__ bias) {
  decode16_detail::Decode<DTYPE, BM, BN, WN, KWARPS, KBLOCKS, 1, LAYOUT, EPILOGUE>(
      M, N, K, alpha, A, B, beta, C, bias);
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// SPLITK > 1: the SPLITK blocks of an output tile are one cluster along z.
template <int DTYPE, int BM, int BN, int WN, int KWARPS, int KBLOCKS, int SPLITK, int LAYOUT,
          typename sgemm_detail::EnableIf<(SPLITK > 1), int>::type = 0>
__global__ void __cluster_dims__(1, 1, SPLITK) __launch_bounds__(32 * (BN / WN) * KWARPS, 1)
    gemm16_decode(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
                  const unsigned short* __restrict__ B, float beta,
                  half16::CType<DTYPE>* __restrict__ C) {
  decode16_detail::Decode<DTYPE, BM, BN, WN, KWARPS, KBLOCKS, SPLITK, LAYOUT, 0>(
      M, N, K, alpha, A, B, beta, C, nullptr);
}

template <int EPILOGUE, int DTYPE, int BM, int BN, int WN, int KWARPS, int KBLOCKS, int SPLITK,
          int LAYOUT, typename sgemm_detail::EnableIf<(SPLITK > 1), int>::type = 0>
__global__ void __cluster_dims__(1, 1, SPLITK) __launch_bounds__(32 * (BN / WN) * KWARPS, 1)
    gemm16_decode_fused(int M, int N, int K, float alpha, const unsigned short* __restrict__ A,
                        const unsigned short* __restrict__ B, float beta,
                        half16::CType<DTYPE>* __restrict__ C,
                        const half16::CType<DTYPE>* __restrict__ bias) {
  decode16_detail::Decode<DTYPE, BM, BN, WN, KWARPS, KBLOCKS, SPLITK, LAYOUT, EPILOGUE>(
      M, N, K, alpha, A, B, beta, C, bias);
}
#endif
