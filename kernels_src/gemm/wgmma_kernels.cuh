// KIND 6's kernels: sgemm_wgmma (Tile, wgmma_tile.cuh, for LA 1 and 2;
// RsGemm, wgmma_rs.cuh, for LA 0) and sgemm_wgmma_ws (RsGemm, WS).
// Compiled appended to wgmma_rs.cuh.

// KIND=6: see wgmma_tf32.cuh's comment. Parameters: BM x BN block tile, BK K tile,
// WM x WN warpgroup tile, STAGES shared-memory stages, SPLITK blocks along K
// per output tile, PASSES 1 (TF32) or 3 (3xTF32), GROUP tile-rows per
// raster group, MINB __launch_bounds__ minimum blocks per SM, LA K tiles
// loaded ahead into registers (1 or 2; the 16-byte path only), or 0: the
// register-A form (RsTile; BK 32, WM = BM, WN 64); PROMOTE (LA 0, 3xTF32)
// K tiles per tensor-core partial sum (1 or 2); LAYOUT the operand layout
// (tuner.proto Layout; LA 0: NN, NT and TT, see RsTile). WS = 1 is
// sgemm_wgmma_ws.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int SPLITK, int PASSES, int GROUP,
          int MINB, int LA, int PROMOTE = 1, int LAYOUT = 0>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 128, MINB)
    sgemm_wgmma(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C) {
  extern __shared__ __align__(1024) unsigned char sgemm_wgmma_smem[];
  if constexpr (LA == 0) {
    static_assert(BK == 32 && WM == BM && WN == 64, "LA=0: BK 32, WM = BM, WN 64");
    sgemm_wgmma_detail::RsGemm<BM, BN, STAGES, SPLITK, PASSES, GROUP, PROMOTE, 0, LAYOUT>(
        M, N, K, alpha, A, B, beta, C, sgemm_wgmma_smem);
  } else {
    using T = sgemm_wgmma_detail::Tile<BM, BN, BK, WM, WN, STAGES, PASSES, LAYOUT>;
    const int tiles_m = sgemm_wgmma_detail::CeilDiv(M, BM);
    const int tiles_n = sgemm_wgmma_detail::CeilDiv(N, BN);
    int tile_m, tile_n;
    sgemm_detail::RasterTile<GROUP>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
    if (tile_m >= tiles_m) return;
    int kt0, kt1;  // K tiles of this split
    if (!sgemm_detail::SplitKRange<SPLITK>(sgemm_detail::CeilDiv(K, BK), kt0, kt1)) return;

    // The stages start on a 1024-byte boundary (the swizzle's period).
    const unsigned raw = sgemm_wgmma_detail::SmemAddr(sgemm_wgmma_smem);
    const unsigned pad = (1024u - (raw & 1023u)) & 1023u;
    unsigned char* smem = sgemm_wgmma_smem + pad;

    const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32;
    const int wm = (wg / T::WGS_N) * WM, wn = (wg % T::WGS_N) * WN;
    const int bm = tile_m * BM, bn = tile_n * BN;
    const int rows = M - bm, cols = N - bn;
    const int lda = T::TA ? M : K, ldb = T::TB ? K : N;  // the operands' row pitches
    A += T::TA ? static_cast<long long>(bm) : static_cast<long long>(bm) * lda;
    B += T::TB ? static_cast<long long>(bn) * ldb : static_cast<long long>(bn);
    C += static_cast<long long>(bm) * N + bn;

    float acc[T::MI][T::ACC];
  #pragma unroll
    for (int mi = 0; mi < T::MI; ++mi) {
  #pragma unroll
      for (int e = 0; e < T::ACC; ++e) acc[mi][e] = 0.0f;
    }
    const bool vec = ((lda | ldb) & 3) == 0 && sgemm_wgmma_detail::Aligned16(A) &&
                     sgemm_wgmma_detail::Aligned16(B);
    static_assert(LA == 1 || LA == 2, "LA");
    if constexpr (LA == 2) {
      if (vec) {
        T::template KLoop2<true>(smem, raw + pad, A, B, rows, cols, lda, ldb, K, kt0, kt1,
                                 tid, wm, wn, acc);
      } else {
        T::template KLoop<false>(smem, raw + pad, A, B, rows, cols, lda, ldb, K, kt0, kt1,
                                 tid, wm, wn, acc);
      }
    } else if (vec) {
      T::template KLoop<true>(smem, raw + pad, A, B, rows, cols, lda, ldb, K, kt0, kt1, tid, wm,
                              wn, acc);
    } else {
      T::template KLoop<false>(smem, raw + pad, A, B, rows, cols, lda, ldb, K, kt0, kt1, tid, wm,
                               wn, acc);
    }

    // Epilogue: d[4i + j] at row 16w + g + 8 * (j / 2), column 8i + 2t + j % 2
    // of each m64 block (w: the warp in the warpgroup).
    const int g = lane / 4, t = lane % 4, w = (tid % 128) / 32;
    const bool pairs = (N & 1) == 0 && (reinterpret_cast<unsigned long long>(C) & 7ull) == 0;
  #pragma unroll
    for (int mi = 0; mi < T::MI; ++mi) {
  #pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wm + mi * 64 + 16 * w + g + 8 * h;
        if (row >= rows) continue;
        float* crow = C + static_cast<long long>(row) * N;
  #pragma unroll
        for (int i = 0; i < WN / 8; ++i) {
          const int col = wn + 8 * i + 2 * t;
          const float v0 = alpha * acc[mi][4 * i + 2 * h], v1 = alpha * acc[mi][4 * i + 2 * h + 1];
          if constexpr (SPLITK > 1) {
            if (col < cols) atomicAdd(crow + col, v0);
            if (col + 1 < cols) atomicAdd(crow + col + 1, v1);
          } else if (pairs && col + 1 < cols) {
            float2* c2 = reinterpret_cast<float2*>(crow + col);
            float2 v = make_float2(v0, v1);
            if (beta != 0.0f) {
              const float2 old = *c2;
              v.x = fmaf(beta, old.x, v0);
              v.y = fmaf(beta, old.y, v1);
            }
            *c2 = v;
          } else {
            if (col < cols) crow[col] = beta != 0.0f ? fmaf(beta, crow[col], v0) : v0;
            if (col + 1 < cols) crow[col + 1] = beta != 0.0f ? fmaf(beta, crow[col + 1], v1) : v1;
          }
        }
      }
    }
  }
}

// KIND=6 with WS = 1: the warp-specialized LA = 0 TF32 (BN 128, BK 32, WM
// = BM, WN 64, MINB 1), a producer warpgroup more (RsTile::Produce /
// Consume; dynamic shared memory 16 x STAGES bytes more for its
// mbarriers), A by TMA through `tma_a`, which the launcher encodes
// (LaunchGeometry.tensor_maps: dims K, M; box 32 x BM; 128-byte swizzle)
// and passes after C, then B's map `tma_b` (never read by TMA: whether B
// comes at a pitch of a multiple of 4 floats, RsGemm). Both are staged
// where TMA's rules fail (TensorMap.stage). LAYOUT: NN, NT or TT (TT: the
// maps are the swapped problem's, A's over B, dims K, N; RsGemm's SWAP).
template <int BM, int STAGES, int SPLITK, int GROUP, int LAYOUT = 0>
__global__ void __launch_bounds__(384, 1)  // two consumer warpgroups (BN 128 / WN 64) and the producer
    sgemm_wgmma_ws(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C,
                   const __grid_constant__ sgemm_wgmma_detail::TensorMap tma_a,
                   const __grid_constant__ sgemm_wgmma_detail::TensorMap tma_b) {
  extern __shared__ __align__(1024) unsigned char sgemm_wgmma_smem[];
  sgemm_wgmma_detail::RsGemm<BM, 128, STAGES, SPLITK, 1, GROUP, 1, 1, LAYOUT>(
      M, N, K, alpha, A, B, beta, C, sgemm_wgmma_smem, &tma_a, &tma_b);
}
