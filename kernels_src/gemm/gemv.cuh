// Matrix-vector kernels of the sgemm family (KIND=4, "gemv", families/
// sgemm.cc), for shapes with M or N of 1 to 8: row-major
//
//   C(MxN) = alpha * op(A) * op(B) + beta * C,   ldc = N,
//
// in the operand layout LAYOUT (the templates' last argument, sgemm.cuh),
// with the signature and guarantees of sgemm.cuh (correct for every M, N, K
// >= 1; beta == 0 never reads C; SPLITK > 1 adds into C, which the launcher
// sets to beta * C first: LaunchGeometry.prescale_output). This text is
// compiled appended to sgemm.cuh (it uses sgemm_detail's helpers).
//
// Two algorithms stream the big operand (A for small N, B for small M),
// each coalesced where that operand's storage suits it: the rows algorithm
// (threads along K) a K-contiguous one, the cols algorithm (lanes along M or
// N) an MN-contiguous one. Below, in NN's terms, the rows algorithm is
// sgemm_gemv_rows and the cols algorithm sgemm_gemv_cols. In other layouts:
//  - sgemm_gemv_rows (small N) runs the rows algorithm on A unless op(A) =
//    A^T; op(B) = B^T makes B's columns K-contiguous (a float4 of each of
//    the N columns per k-quad). With op(A) = A^T (A stored K x M,
//    M-contiguous) it runs the cols algorithm on C^T = op(B)^T * A: lanes
//    along M, op(B)^T the small operand, C written transposed (CT).
//  - sgemm_gemv_cols (small M) runs the cols algorithm on B unless op(B) =
//    B^T (op(A) = A^T: A's rows strided by M, four loads per k-quad,
//    broadcast over the warp). With op(B) = B^T (B stored N x K,
//    K-contiguous) it runs the rows algorithm on C^T = B * op(A)^T: threads
//    along K of B's rows, C written transposed.
//
// Such shapes are memory-bound: each element of the big operand (A for small
// N, B for small M) is read once and used for at most 8 outputs, so the
// kernels stream it with 16-byte loads that bypass L1 (which keeps the small
// operand), many in flight per thread (GU), and split K over the warps of a
// block (GW) and over blocks (SPLITK) so that every SM has loads in flight.
//
//  sgemm_gemv_rows<GW, GR, GU, GC, SPLITK, MINB> (GSIDE 0, small N): a block of
//    GW warps computes GR rows of C; its 32*GW threads take the k-quads (4
//    consecutive k) of the rows in turn, thread t the quads t, t + 32*GW, ...,
//    GU quads at a time: per quad a float4 of each of the GR rows of A and
//    the 4 x N floats of B (contiguous: N float4, L1 hits), GR*N FMAs per k.
//    Sums are reduced by warp shuffles, then across the warps through shared
//    memory. grid = (ceil(M / GR), SPLITK).
//  sgemm_gemv_cols<GW, GR, GU, GC, SPLITK, MINB> (GSIDE 1, small M): a block
//    computes the M rows of 128*GR columns of C; lane l of each warp owns the
//    columns 4*(l + 32*g) + 0..3, g < GR (a float4 of each row of B: the
//    warp's loads are coalesced), and warp w the k-quads w, w + GW, ... of
//    the block's K range, GU quads at a time: per quad 4 x GR float4 of B and
//    a float4 of each row of A (the same for the whole warp: a broadcast),
//    M*4*GR FMAs per k. The warps' sums are reduced through shared memory,
//    one row at a time. grid = (ceil(N / (128*GR)), SPLITK).
//
//  GC: the small dimension (N for rows, M for cols) runs in chunks of up to
//  GC, each chunk size 1..GC its own instantiation (RowsChunks,
//  ColsChunks), so that N (M)
//  <= GC is one pass over the big operand with no bounds checks on the small
//  one, and the registers are those of GC outputs per row (column); larger
//  N (M) take several passes (correct, not fast: Family::SuitsShape admits
//  the gemv kind only where M or N is at most 8).
//  Vector path (decided at run time, uniform over the grid): rows: float4
//  loads of A and B when K % 4 == 0, N <= GC and A and B are 16-byte
//  aligned; cols: when N % 4 == 0, K % 4 == 0 and both are aligned.
//  Otherwise scalar loads, one k at a time (rows: thread t takes k = t, t +
//  32*GW, ...; cols: warp w takes k = w, w + GW, ..., lane l the columns l +
//  32*c, c < 4*GR).
//  SPLITK > 1: blockIdx.y takes a contiguous K range of ceil(K / SPLITK)
//  rounded up to a multiple of 4, and the block atomically adds alpha * its
//  sums into C.
//  MINB: __launch_bounds__(32*GW, MINB), set by sgemm.cc from its register
//  estimate: the blocks per SM whose registers the estimate fills. (With
//  the threads alone, ptxas 13.0 chose 32 to 64 registers for occupancy and
//  spilled a few bytes; with MINB 1, up to 228 registers.)

namespace gemv_detail {

// Component i (a compile-time constant after unrolling) of v.
__device__ __forceinline__ float Lane4(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// 16 (4) bytes of the streamed operand, read once: through the non-coherent
// path without allocating in L1, so that L1 keeps the small operand.
__device__ __forceinline__ float4 Stream4(const float* p) {
  float4 v;
  asm("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(p));
  return v;
}
__device__ __forceinline__ float Stream1(const float* p) {
  float v;
  asm("ld.global.nc.L1::no_allocate.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The 16-byte aligned float4 of k = 4q .. 4q+3 of K-contiguous row `n` of
// `x` (row stride K, K % 4 == 0, x 16-byte aligned).
__device__ __forceinline__ const float4* QuadOf(const float* x, int n, int K, int q) {
  return reinterpret_cast<const float4*>(x + static_cast<size_t>(n) * K) + q;
}

// The small operand's k = k0 .. k0+3 of one row, `a` pointing at its k = 0:
// YK (K-contiguous): one float4 (16-byte aligned); else its elements are
// strided by `ld` (four loads).
template <bool YK>
__device__ __forceinline__ float4 SmallQuad(const float* a, int k0, int ld) {
  if constexpr (YK) {
    return __ldg(reinterpret_cast<const float4*>(a + k0));
  } else {
    return make_float4(__ldg(a + static_cast<size_t>(k0) * ld),
                       __ldg(a + static_cast<size_t>(k0 + 1) * ld),
                       __ldg(a + static_cast<size_t>(k0 + 2) * ld),
                       __ldg(a + static_cast<size_t>(k0 + 3) * ld));
  }
}

// C[i][j] = alpha * sum + beta * C[i][j] (SPLITK == 1), else C[i][j] +=
// alpha * sum (C was set to beta * C).
template <int SPLITK>
__device__ __forceinline__ void Store(float* c, float sum, float alpha, float beta) {
  if (SPLITK > 1) {
    atomicAdd(c, alpha * sum);
  } else {
    *c = sgemm_detail::Blend(sum, alpha, beta, c);
  }
}

// This block's K range [*kb, *ke) for SPLITK > 1 (a multiple of 4 long, but
// the last); false when it is empty (K < SPLITK * 4, say).
template <int SPLITK>
__device__ __forceinline__ bool KRange(int K, int* kb, int* ke) {
  *kb = 0;
  *ke = K;
  if (SPLITK == 1) return true;
  const long long per = (sgemm_detail::CeilDiv(K, SPLITK) + 3) & ~3;
  const long long begin = per * blockIdx.y;
  if (begin >= K) return false;
  *kb = static_cast<int>(begin);
  *ke = static_cast<int>(begin + per < K ? begin + per : K);
  return true;
}

// The rows algorithm's work on columns [j0, j0 + NC) of rows [row0, row0 +
// GR) over k in [kb, ke): A is the big operand, M x K and K-contiguous (lda
// = K); B the small one, K x N, its element (k, n) at B[k * N + n] or, YK
// (K-contiguous), at B[n * K + k]; C's element (m, n) at C[m * N + n] or, CT,
// at C[n * M + m]. VEC: K % 4 == 0 (so kb and ke are too), A and B 16-byte
// aligned, and (unless YK) j0 == 0 and NC == N. Rows past M repeat row M-1
// (read, not stored).
template <int GW, int GR, int GU, int GC, int SPLITK, int NC, bool VEC, bool YK, bool CT>
__device__ __forceinline__ void RowsChunk(int M, int N, int K, float alpha,
                                          const float* __restrict__ A,
                                          const float* __restrict__ B, float beta,
                                          float* __restrict__ C, int row0, int j0, int kb, int ke,
                                          float* red) {
  constexpr int THREADS = 32 * GW;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const float* a[GR];
#pragma unroll
  for (int r = 0; r < GR; ++r) a[r] = A + static_cast<size_t>(min(row0 + r, M - 1)) * K;
  float acc[GR][NC];
#pragma unroll
  for (int r = 0; r < GR; ++r) {
#pragma unroll
    for (int c = 0; c < NC; ++c) acc[r][c] = 0.0f;
  }
  if (VEC) {
    // Quad q: k = 4q .. 4q+3; B's 4 x NC floats at 4q*N (16-byte aligned),
    // or, YK, a float4 of each of its NC columns at (j0 + c)*K + 4q.
    const int q1 = ke >> 2;
    int q = (kb >> 2) + tid;
    // GU quads at a time (all loads issued first), then one at a time.
    for (; q + (GU - 1) * THREADS < q1; q += GU * THREADS) {
      float4 av[GU][GR], bv[GU][NC];
#pragma unroll
      for (int u = 0; u < GU; ++u) {
#pragma unroll
        for (int r = 0; r < GR; ++r) av[u][r] = Stream4(a[r] + 4 * (q + u * THREADS));
        if constexpr (YK) {
#pragma unroll
          for (int c = 0; c < NC; ++c) bv[u][c] = __ldg(QuadOf(B, j0 + c, K, q + u * THREADS));
        } else {
          const float4* b =
              reinterpret_cast<const float4*>(B + static_cast<size_t>(q + u * THREADS) * 4 * NC);
#pragma unroll
          for (int c = 0; c < NC; ++c) bv[u][c] = __ldg(b + c);
        }
      }
#pragma unroll
      for (int u = 0; u < GU; ++u) {
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
          for (int r = 0; r < GR; ++r) {
#pragma unroll
            for (int c = 0; c < NC; ++c) {
              const int f = kk * NC + c;  // B[4q + kk][c] among the quad's 4*NC floats
              const float b = YK ? Lane4(bv[u][c], kk) : Lane4(bv[u][f / 4], f % 4);
              acc[r][c] = fmaf(Lane4(av[u][r], kk), b, acc[r][c]);
            }
          }
        }
      }
    }
    for (; q < q1; q += THREADS) {
      float4 av[GR], bv[NC];
#pragma unroll
      for (int r = 0; r < GR; ++r) av[r] = Stream4(a[r] + 4 * q);
      if constexpr (YK) {
#pragma unroll
        for (int c = 0; c < NC; ++c) bv[c] = __ldg(QuadOf(B, j0 + c, K, q));
      } else {
        const float4* b = reinterpret_cast<const float4*>(B + static_cast<size_t>(q) * 4 * NC);
#pragma unroll
        for (int c = 0; c < NC; ++c) bv[c] = __ldg(b + c);
      }
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
        for (int r = 0; r < GR; ++r) {
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            const int f = kk * NC + c;
            const float b = YK ? Lane4(bv[c], kk) : Lane4(bv[f / 4], f % 4);
            acc[r][c] = fmaf(Lane4(av[r], kk), b, acc[r][c]);
          }
        }
      }
    }
  } else {
    // One k at a time: thread t takes k = kb + t, kb + t + THREADS, ...
    // (unsigned: k + GU*THREADS stays below 2^32 for K near 2^31)
    unsigned k = kb + tid;
    for (; k + (GU - 1) * THREADS < unsigned(ke); k += GU * THREADS) {
      float av[GU][GR], bv[GU][NC];
#pragma unroll
      for (int u = 0; u < GU; ++u) {
#pragma unroll
        for (int r = 0; r < GR; ++r) av[u][r] = Stream1(a[r] + k + u * THREADS);
        if constexpr (YK) {
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            bv[u][c] = __ldg(B + static_cast<size_t>(j0 + c) * K + k + u * THREADS);
          }
        } else {
          const float* b = B + static_cast<size_t>(k + u * THREADS) * N + j0;
#pragma unroll
          for (int c = 0; c < NC; ++c) bv[u][c] = __ldg(b + c);
        }
      }
#pragma unroll
      for (int u = 0; u < GU; ++u) {
#pragma unroll
        for (int r = 0; r < GR; ++r) {
#pragma unroll
          for (int c = 0; c < NC; ++c) acc[r][c] = fmaf(av[u][r], bv[u][c], acc[r][c]);
        }
      }
    }
    for (; k < unsigned(ke); k += THREADS) {
      // B's element (k, j0 + c): b[c] (YK: b[c * K]).
      const float* b = YK ? B + static_cast<size_t>(j0) * K + k : B + static_cast<size_t>(k) * N + j0;
#pragma unroll
      for (int r = 0; r < GR; ++r) {
        const float av = Stream1(a[r] + k);
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          acc[r][c] = fmaf(av, __ldg(YK ? b + static_cast<size_t>(c) * K : b + c), acc[r][c]);
        }
      }
    }
  }
  // Warp sums, then the warps' sums through shared memory (red: GW x GR*GC).
#pragma unroll
  for (int r = 0; r < GR; ++r) {
#pragma unroll
    for (int c = 0; c < NC; ++c) acc[r][c] = WarpSum(acc[r][c]);
  }
  if constexpr (GW == 1) {
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < GR; ++r) {
        if (r < M - row0) {
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            Store<SPLITK>(CT ? C + static_cast<size_t>(j0 + c) * M + row0 + r
                             : C + static_cast<size_t>(row0 + r) * N + j0 + c,
                          acc[r][c], alpha, beta);
          }
        }
      }
    }
  } else {
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < GR; ++r) {
#pragma unroll
        for (int c = 0; c < NC; ++c) red[warp * GR * GC + r * NC + c] = acc[r][c];
      }
    }
    __syncthreads();
    if (tid < GR * NC) {
      const int r = tid / NC, c = tid % NC;
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < GW; ++w) sum += red[w * GR * GC + tid];
      if (r < M - row0) {
        Store<SPLITK>(CT ? C + static_cast<size_t>(j0 + c) * M + row0 + r
                         : C + static_cast<size_t>(row0 + r) * N + j0 + c,
                      sum, alpha, beta);
      }
    }
    __syncthreads();  // red is reused by the next chunk
  }
}

// Column c (0 .. 4*GR-1) of a lane within its block: VEC 4*(lane + 32*(c/4))
// + c%4 (float4 c/4), else lane + 32*c.
template <bool VEC>
__device__ __forceinline__ int ColsColumn(int lane, int c) {
  return VEC ? 4 * (lane + 32 * (c / 4)) + c % 4 : lane + 32 * c;
}

// Whether the lane's float4 g (VEC) or column g (else) is among the `left`
// columns of its block inside N.
template <bool VEC>
__device__ __forceinline__ bool ColsIn(int lane, int g, int left) {
  return ColsColumn<VEC>(lane, VEC ? 4 * g : g) < left;
}

// The lane's float4 g (VEC) of B's row `b` (from the block's first column),
// zeros outside N.
__device__ __forceinline__ float4 ColsLoad4(const float* b, int lane, int g, int left) {
  return ColsIn<true>(lane, g, left) ? Stream4(b + ColsColumn<true>(lane, 4 * g))
                                     : make_float4(0.f, 0.f, 0.f, 0.f);
}

// The lane's column c (scalar path) of B's row `b`, zero outside N.
__device__ __forceinline__ float ColsLoad1(const float* b, int lane, int c, int left) {
  return ColsIn<false>(lane, c, left) ? Stream1(b + ColsColumn<false>(lane, c)) : 0.0f;
}

// The cols algorithm's work on rows [i0, i0 + MC) and the block's columns
// from col0 over k in [kb, ke): B is the big operand, K x N and
// N-contiguous (ldb = N); A the small one, M x K, its element (m, k) at A[m *
// K + k] (YK, K-contiguous) or else at A[k * M + m]; C's element (m, n) at
// C[m * N + n] or, CT, at C[n * M + m]. VEC: N % 4 == 0 and K % 4 == 0 (so kb
// and ke are too), B and (YK) A 16-byte aligned.
template <int GW, int GR, int GU, int SPLITK, int MC, bool VEC, bool YK, bool CT>
__device__ __forceinline__ void ColsChunk(int M, int N, int K, float alpha,
                                          const float* __restrict__ A,
                                          const float* __restrict__ B, float beta,
                                          float* __restrict__ C, int i0, int col0, int kb, int ke,
                                          float* red) {
  constexpr int CB = 128 * GR;  // columns per block
  constexpr int THREADS = 32 * GW;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const float* a[MC];
#pragma unroll
  for (int i = 0; i < MC; ++i) a[i] = YK ? A + static_cast<size_t>(i0 + i) * K : A + i0 + i;
  const int left = N - col0;  // columns of the block inside N
  const float* bcol = B + col0;
  float acc[MC][4 * GR];
#pragma unroll
  for (int i = 0; i < MC; ++i) {
#pragma unroll
    for (int c = 0; c < 4 * GR; ++c) acc[i][c] = 0.0f;
  }
  if (VEC) {
    const int q1 = ke >> 2;
    int q = (kb >> 2) + warp;
    // GU quads at a time (all loads issued first), then one at a time.
    for (; q + (GU - 1) * GW < q1; q += GU * GW) {
      float4 av[GU][MC], bv[GU][4][GR];
#pragma unroll
      for (int u = 0; u < GU; ++u) {
        const int k = 4 * (q + u * GW);
#pragma unroll
        for (int i = 0; i < MC; ++i) av[u][i] = SmallQuad<YK>(a[i], k, M);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const float* b = bcol + static_cast<size_t>(k + kk) * N;
#pragma unroll
          for (int g = 0; g < GR; ++g) {
            bv[u][kk][g] = ColsLoad4(b, lane, g, left);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < GU; ++u) {
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
          for (int i = 0; i < MC; ++i) {
#pragma unroll
            for (int c = 0; c < 4 * GR; ++c) {
              acc[i][c] = fmaf(Lane4(av[u][i], kk), Lane4(bv[u][kk][c / 4], c % 4), acc[i][c]);
            }
          }
        }
      }
    }
    for (; q < q1; q += GW) {
      const int k = 4 * q;
      float4 av[MC], bv[4][GR];
#pragma unroll
      for (int i = 0; i < MC; ++i) av[i] = SmallQuad<YK>(a[i], k, M);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const float* b = bcol + static_cast<size_t>(k + kk) * N;
#pragma unroll
        for (int g = 0; g < GR; ++g) {
          bv[kk][g] = ColsLoad4(b, lane, g, left);
        }
      }
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
        for (int i = 0; i < MC; ++i) {
#pragma unroll
          for (int c = 0; c < 4 * GR; ++c) {
            acc[i][c] = fmaf(Lane4(av[i], kk), Lane4(bv[kk][c / 4], c % 4), acc[i][c]);
          }
        }
      }
    }
  } else {
    // One k at a time: warp w takes k = kb + w, kb + w + GW, ...
    unsigned k = kb + warp;  // unsigned: see RowsChunk
    for (; k + (GU - 1) * GW < unsigned(ke); k += GU * GW) {
      float av[GU][MC], bv[GU][4 * GR];
#pragma unroll
      for (int u = 0; u < GU; ++u) {
#pragma unroll
        for (int i = 0; i < MC; ++i) {
          av[u][i] = __ldg(YK ? a[i] + k + u * GW : a[i] + static_cast<size_t>(k + u * GW) * M);
        }
        const float* b = bcol + static_cast<size_t>(k + u * GW) * N;
#pragma unroll
        for (int c = 0; c < 4 * GR; ++c) bv[u][c] = ColsLoad1(b, lane, c, left);
      }
#pragma unroll
      for (int u = 0; u < GU; ++u) {
#pragma unroll
        for (int i = 0; i < MC; ++i) {
#pragma unroll
          for (int c = 0; c < 4 * GR; ++c) acc[i][c] = fmaf(av[u][i], bv[u][c], acc[i][c]);
        }
      }
    }
    for (; k < unsigned(ke); k += GW) {
      const float* b = bcol + static_cast<size_t>(k) * N;
      float bv[4 * GR];
#pragma unroll
      for (int c = 0; c < 4 * GR; ++c) bv[c] = ColsLoad1(b, lane, c, left);
#pragma unroll
      for (int i = 0; i < MC; ++i) {
        const float av = __ldg(YK ? a[i] + k : a[i] + static_cast<size_t>(k) * M);
#pragma unroll
        for (int c = 0; c < 4 * GR; ++c) acc[i][c] = fmaf(av, bv[c], acc[i][c]);
      }
    }
  }
  float* crow = C + static_cast<size_t>(i0) * N + col0;
  if constexpr (GW == 1) {
#pragma unroll
    for (int i = 0; i < MC; ++i) {
#pragma unroll
      for (int c = 0; c < 4 * GR; ++c) {
        if (ColsIn<VEC>(lane, VEC ? c / 4 : c, left)) {
          Store<SPLITK>(CT ? C + static_cast<size_t>(col0 + ColsColumn<VEC>(lane, c)) * M + i0 + i
                           : crow + static_cast<size_t>(i) * N + ColsColumn<VEC>(lane, c),
                        acc[i][c], alpha, beta);
        }
      }
    }
  } else {
    // The warps' sums, one row at a time through shared memory (red: GW x CB).
#pragma unroll
    for (int i = 0; i < MC; ++i) {
#pragma unroll
      for (int c = 0; c < 4 * GR; ++c) red[warp * CB + ColsColumn<VEC>(lane, c)] = acc[i][c];
      __syncthreads();
      for (int c = tid; c < CB && c < N - col0; c += THREADS) {
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < GW; ++w) sum += red[w * CB + c];
        Store<SPLITK>(CT ? C + static_cast<size_t>(col0 + c) * M + i0 + i
                         : crow + static_cast<size_t>(i) * N + c,
                      sum, alpha, beta);
      }
      __syncthreads();
    }
  }
}

// RowsChunk<..., n, VEC, YK, CT> for n = nc in 1..NC (the chunk's exact size).
template <int GW, int GR, int GU, int GC, int SPLITK, bool VEC, bool YK, bool CT, int NC = GC>
__device__ __forceinline__ void RowsChunks(int nc, int M, int N, int K, float alpha,
                                           const float* __restrict__ A,
                                           const float* __restrict__ B, float beta,
                                           float* __restrict__ C, int row0, int j0, int kb,
                                           int ke, float* red) {
  if constexpr (NC > 1) {
    if (nc < NC) {
      RowsChunks<GW, GR, GU, GC, SPLITK, VEC, YK, CT, NC - 1>(nc, M, N, K, alpha, A, B, beta, C,
                                                              row0, j0, kb, ke, red);
      return;
    }
  }
  RowsChunk<GW, GR, GU, GC, SPLITK, NC, VEC, YK, CT>(M, N, K, alpha, A, B, beta, C, row0, j0, kb,
                                                     ke, red);
}

// ColsChunk<..., m, VEC, YK, CT> for m = mc in 1..MC (the chunk's exact size).
template <int GW, int GR, int GU, int SPLITK, bool VEC, bool YK, bool CT, int MC>
__device__ __forceinline__ void ColsChunks(int mc, int M, int N, int K, float alpha,
                                           const float* __restrict__ A,
                                           const float* __restrict__ B, float beta,
                                           float* __restrict__ C, int i0, int col0, int kb,
                                           int ke, float* red) {
  if constexpr (MC > 1) {
    if (mc < MC) {
      ColsChunks<GW, GR, GU, SPLITK, VEC, YK, CT, MC - 1>(mc, M, N, K, alpha, A, B, beta, C, i0,
                                                          col0, kb, ke, red);
      return;
    }
  }
  ColsChunk<GW, GR, GU, SPLITK, MC, VEC, YK, CT>(M, N, K, alpha, A, B, beta, C, i0, col0, kb, ke,
                                                 red);
}

// The rows algorithm (see the file comment; RowsChunk for A, B, C, YK, CT).
template <int GW, int GR, int GU, int GC, int SPLITK, bool YK, bool CT>
__device__ __forceinline__ void Rows(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta,
                                     float* __restrict__ C, float* red) {
  int kb, ke;
  if (!KRange<SPLITK>(K, &kb, &ke)) return;
  const int row0 = blockIdx.x * GR;
  if ((YK || N <= GC) && K % 4 == 0 && sgemm_detail::Aligned16(A) &&
      sgemm_detail::Aligned16(B)) {
    if constexpr (YK) {
      for (int j0 = 0; j0 < N; j0 = N - j0 > GC ? j0 + GC : N) {
        RowsChunks<GW, GR, GU, GC, SPLITK, true, YK, CT>(min(GC, N - j0), M, N, K, alpha, A, B,
                                                         beta, C, row0, j0, kb, ke, red);
      }
    } else {
      RowsChunks<GW, GR, GU, GC, SPLITK, true, YK, CT>(N, M, N, K, alpha, A, B, beta, C, row0, 0,
                                                       kb, ke, red);
    }
    return;
  }
  for (int j0 = 0; j0 < N; j0 = N - j0 > GC ? j0 + GC : N) {  // no int overflow at N ~ 2^31
    RowsChunks<GW, GR, GU, GC, SPLITK, false, YK, CT>(min(GC, N - j0), M, N, K, alpha, A, B, beta,
                                                      C, row0, j0, kb, ke, red);
  }
}

// The cols algorithm (see the file comment; ColsChunk for A, B, C, YK, CT).
template <int GW, int GR, int GU, int GC, int SPLITK, bool YK, bool CT>
__device__ __forceinline__ void Cols(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta,
                                     float* __restrict__ C, float* red) {
  int kb, ke;
  if (!KRange<SPLITK>(K, &kb, &ke)) return;
  const int col0 = blockIdx.x * (128 * GR);
  const bool vec = N % 4 == 0 && K % 4 == 0 && (!YK || sgemm_detail::Aligned16(A)) &&
                   sgemm_detail::Aligned16(B);
  for (int i0 = 0; i0 < M; i0 = M - i0 > GC ? i0 + GC : M) {
    const int mc = min(GC, M - i0);
    if (vec) {
      ColsChunks<GW, GR, GU, SPLITK, true, YK, CT, GC>(mc, M, N, K, alpha, A, B, beta, C, i0,
                                                       col0, kb, ke, red);
    } else {
      ColsChunks<GW, GR, GU, SPLITK, false, YK, CT, GC>(mc, M, N, K, alpha, A, B, beta, C, i0,
                                                        col0, kb, ke, red);
    }
  }
}

// Floats of the reduction across warps: the rows algorithm's GW x GR*GC,
// the cols algorithm's GW x 128*GR (none with one warp).
template <bool COLS, int GW, int GR, int GC>
struct Reduction {
  enum : int { FLOATS = COLS ? (GW > 1 ? GW * 128 * GR : 1) : GW * GR * GC };
};

}  // namespace gemv_detail

// KIND=4, GSIDE=0 (small N): see the file comment. Block = 32*GW threads;
// grid = (ceil(M / GR), SPLITK), or where op(A) = A^T (the cols algorithm
// over M) (ceil(M / (128*GR)), SPLITK).
template <int GW, int GR, int GU, int GC, int SPLITK, int MINB, int LAYOUT = 0>
__global__ void __launch_bounds__(32 * GW, MINB)
    sgemm_gemv_rows(int M, int N, int K, float alpha, const float* __restrict__ A,
                    const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr bool TA = sgemm_detail::TransA(LAYOUT), TB = sgemm_detail::TransB(LAYOUT);
  __shared__ float red[gemv_detail::Reduction<TA, GW, GR, GC>::FLOATS];
  if constexpr (TA) {
    // A stored K x M is M-contiguous: C^T = op(B)^T * A by the cols
    // algorithm, lanes along M; op(B)^T (N x K) is K-contiguous where op(B)
    // = B^T; C^T's element (n, m) is C[m * N + n].
    gemv_detail::Cols<GW, GR, GU, GC, SPLITK, TB, true>(N, M, K, alpha, B, A, beta, C, red);
  } else {
    gemv_detail::Rows<GW, GR, GU, GC, SPLITK, TB, false>(M, N, K, alpha, A, B, beta, C, red);
  }
}

// KIND=4, GSIDE=1 (small M): see the file comment. Block = 32*GW threads;
// grid = (ceil(N / (128*GR)), SPLITK), or where op(B) = B^T (the rows
// algorithm over N) (ceil(N / GR), SPLITK).
template <int GW, int GR, int GU, int GC, int SPLITK, int MINB, int LAYOUT = 0>
__global__ void __launch_bounds__(32 * GW, MINB)
    sgemm_gemv_cols(int M, int N, int K, float alpha, const float* __restrict__ A,
                    const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr bool TA = sgemm_detail::TransA(LAYOUT), TB = sgemm_detail::TransB(LAYOUT);
  __shared__ float red[gemv_detail::Reduction<!TB, GW, GR, GC>::FLOATS];
  if constexpr (TB) {
    // B stored N x K is K-contiguous: C^T = B * op(A)^T by the rows
    // algorithm, threads along K of B's rows; op(A)^T (K x M) has its
    // columns K-contiguous unless op(A) = A^T; C^T's element (n, m) is C[m * N + n].
    gemv_detail::Rows<GW, GR, GU, GC, SPLITK, !TA, true>(N, M, K, alpha, B, A, beta, C, red);
  } else {
    gemv_detail::Cols<GW, GR, GU, GC, SPLITK, !TA, false>(M, N, K, alpha, A, B, beta, C, red);
  }
}
