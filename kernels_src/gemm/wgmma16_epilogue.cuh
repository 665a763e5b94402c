// The epilogue of gemm16_wgmma (wgmma16.cuh): a consumer warpgroup's rows
// of one output tile from its accumulators into C, by EPI's way. From
// registers (EPI 0, and EPI 1 and 2 where beta is not 0): per row, the quad
// of threads holding it exchanges column pairs (shuffles) so that each
// thread holds 8 consecutive columns; alpha, beta * C_old (read as 16
// bytes), one rounding, one 16-byte store where N % 8 == 0 and C is 16-byte
// aligned, else element stores with bounds checks.
//
// Compiled after sgemm/wgmma16_ops.cuh (the shared-memory and TMA-store
// helpers, Sel4) and before sgemm/wgmma16.cuh, no #include; NVRTC with
// --gpu-architecture=sm_90a. Names: namespace gemm16_detail.

namespace gemm16_detail {

/// Writes columns 64 c .. 64 c + 63 of m64 block mi of a warp's
/// accumulators (warp w of the warpgroup, g = lane / 4, tq = lane % 4),
/// alpha * acc rounded to DTYPE's 16-bit type, into the 64 x 64 box at
/// shared address `box`: 128-byte rows in the 128-byte swizzle (16-byte
/// unit u of row r at u ^ (r % 8)). The warp's 16 rows are 16 matrices of
/// 8 x 8 (8-row half h, 8-column unit i), whose D fragments are
/// stmatrix's: four stmatrix.x4 a warp (matrix j of one: unit 2 q + j / 2,
/// half j % 2), each lane addressing one 16-byte row; the swizzle spreads
/// each matrix's 8 rows over all banks. TMA stores the box as written.
/// In place of sixteen 4-byte stores a lane: 1.0065x geomean over the
/// probe's EPI set, 1.05x at 4096x4096x64 in bf16 (H100,
/// bench/RESULTS.md gemm16-cluster2d).
template <int DTYPE, int MI, int BN>
__device__ __forceinline__ void StoreBox(unsigned box, const float (&acc)[MI][BN / 2], int mi,
                                         int c, float alpha, int w, int lane) {
  const int lj = lane / 8, lr = lane % 8;  // the matrix and row this lane addresses
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    unsigned r[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = 8 * c + 2 * q + j / 2, h = j % 2;
      r[j] = half16::Pack<DTYPE>(alpha * acc[mi][4 * i + 2 * h], alpha * acc[mi][4 * i + 2 * h + 1]);
    }
    const int u = 2 * q + lj / 2, row = 16 * w + 8 * (lj % 2) + lr;  // row % 8 = lr
    StMatrix4(box + row * 128 + ((u ^ lr) * 16), r[0], r[1], r[2], r[3]);
  }
}

/// Stores consumer warpgroup wg's rows (wg * WM .. + WM, WM = BM /
/// CONSUMERS, MI = WM / 64 m64 blocks) of the output tile at row bm and
/// column bn: C = alpha * acc + beta * C_old in fp32, rounded once to
/// DTYPE's C type (half16), where the element lies within M x N. acc[mi][4i
/// + j] is the wgmma D fragment of m64 block mi (PTX ISA wgmma .m64nNk16):
/// row 16w + g + 8 (j / 2), column 8i + 2t + j % 2 (w the warp in the
/// warpgroup, g = lane / 4, t = lane % 4). With SPLITK > 1, rank's column
/// groups only (g % SPLITK == rank of the BN / 32 groups). EPI 1 and 2
/// (a 16-bit C, beta 0) stage C in shared memory at `cbuf` (EPI 1: the
/// warpgroup's WM x BN tile; EPI 2: its two 64 x 64 boxes, `ebox` counting
/// the boxes it has stored across its tiles) and store it by TMA through
/// `tma_c` where C suits TMA; the stores drain while the next tile's
/// mainloop runs (the kernel waits for them before it exits). EPILOGUE
/// (half16::Fuse, with `bias`) applies to each element before its rounding.
template <int DTYPE, int BM, int BN, int CONSUMERS, int SPLITK, int EPI, int EPILOGUE>
__device__ __forceinline__ void StoreTile(float (&acc)[BM / CONSUMERS / 64][BN / 2], int M, int N,
                                          float alpha, float beta,
                                          half16::CType<DTYPE>* __restrict__ C,
                                          const half16::CType<DTYPE>* __restrict__ bias,
                                          const TensorMap* tma_c, unsigned cbuf, int wg, int tid,
                                          int bm, int bn, unsigned rank, unsigned& ebox) {
  constexpr int IN = half16::Elem<DTYPE>::kIn;
  constexpr int WM = BM / CONSUMERS, MI = WM / 64;
  const int lane = tid % 32, w = (tid % 128) / 32;
  // The epilogue where beta is 0: applied to the accumulators in place,
  // element by element, before any store path (1 in alpha's place after):
  // fused into the stores, the GELUs of BN 256 spilled registers. With
  // beta != 0 it follows beta * C_old in the stores from registers.
  const bool prefused = EPILOGUE != 0 && beta == 0.0f;
  if constexpr (EPILOGUE != 0) {
    if (prefused) {
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            acc[mi][4 * i + j] = half16::Fuse<DTYPE, EPILOGUE>(alpha * acc[mi][4 * i + j], bias,
                                                               bn + 8 * i + 2 * (lane % 4) + j % 2, N);
          }
        }
      }
      alpha = 1.0f;
    }
  }
  // C's rows in whole 16-byte units: the epilogue's 16-byte stores, and
  // TMA's rules for C's map (the launcher's test) that EPI needs.
  const bool vec = (N & 7) == 0 && (reinterpret_cast<unsigned long long>(C) & 15ull) == 0;
  if constexpr (EPI == 2 && DTYPE == IN) {
    // EPI 2 (a 16-bit C that suits TMA, beta 0): the warpgroup's MI x
    // BN / 64 boxes of 64 x 64 in turn, box e through buffer e % 2 of its
    // two (the swizzled layout and stores of EPI 1). Before writing one,
    // thread 0 waits until at most one of its stores still reads shared
    // memory: the store that last read this buffer, two boxes back, is
    // done. Each box is stored by TMA while the next is written, and the
    // last ones while the next tile's mainloop runs.
    if (beta == 0.0f && vec) {
      const int wtid = tid % 128;
      const unsigned mine = cbuf + wg * 16384;
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int c = 0; c < BN / 64; ++c, ++ebox) {
          const unsigned box = mine + (ebox & 1u) * 8192;
          if (wtid == 0) BulkWaitRead1();
          NamedSync(4 + wg, 128);
          StoreBox<DTYPE, MI, BN>(box, acc, mi, c, alpha, w, lane);
          FenceProxyAsync();
          NamedSync(4 + wg, 128);
          if (wtid == 0) {
            TmaStore2d(tma_c, bn + 64 * c, bm + wg * WM + mi * 64, box);
            BulkCommit();
          }
        }
      }
      return;
    }
  }
  if constexpr (EPI == 1 && DTYPE == IN) {
    // EPI (a 16-bit C): where beta is 0, each consumer warpgroup writes
    // alpha * acc, rounded, into its rows of the C tile in shared memory
    // (64 x 64 boxes, StoreBox). Where C suits TMA, its thread 0
    // stores the boxes by TMA (what lies past M or N clipped) while the
    // next tile's mainloop runs; that thread first waits until the
    // previous tile's stores have read the buffer. Where it does not (N
    // not a multiple of 8, or C not 16-byte aligned), the warpgroup's
    // warps copy the tile out a row at a time, each lane a pair of
    // columns: coalesced, where the registers' 8-column stores would
    // write each 32-byte sector 8 times over (1024x50257x1024 went from
    // 172 to 347 TFLOPS, bench/RESULTS.md gemm16-stage-rows).
    if (beta == 0.0f) {
      const int wtid = tid % 128;
      const unsigned mine = cbuf + wg * (WM * BN * 2);
      if (wtid == 0) BulkWait0<true>();
      NamedSync(4 + wg, 128);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int c = 0; c < BN / 64; ++c) {
          StoreBox<DTYPE, MI, BN>(mine + (mi * (BN / 64) + c) * 8192, acc, mi, c, alpha, w, lane);
        }
      }
      FenceProxyAsync();
      NamedSync(4 + wg, 128);
      if (vec) {
        if (wtid == 0) {
#pragma unroll
          for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
            for (int c = 0; c < BN / 64; ++c) {
              TmaStore2d(tma_c, bn + 64 * c, bm + wg * WM + mi * 64, mine + (mi * (BN / 64) + c) * 8192);
            }
          }
          BulkCommit();
        }
        return;
      }
      // Row rr of the warpgroup's WM, columns 2 lane, 2 lane + 1 of box c:
      // 16-byte unit lane / 4 of the row, swizzled by the row (rr % 8).
      // The next tile's first NamedSync keeps the buffer until every
      // warp has copied its rows out.
#pragma unroll 1
      for (int rr = w; rr < WM; rr += 4) {
        const int row = bm + wg * WM + rr;
        if (row >= M) break;
        half16::CType<DTYPE>* crow = C + static_cast<long long>(row) * N;
        const unsigned src = mine + ((rr / 64) * (BN / 64)) * 8192 + (rr % 64) * 128 +
                             (((lane / 4) ^ (rr % 8)) * 16) + 4 * (lane % 4);
#pragma unroll
        for (int c = 0; c < BN / 64; ++c) {
          const int col = bn + 64 * c + 2 * lane;
          if (col >= N) break;
          const unsigned v = LdShared32(src + c * 8192);
          unsigned short* p = reinterpret_cast<unsigned short*>(crow + col);
          if (col + 1 < N && (reinterpret_cast<unsigned long long>(p) & 3ull) == 0) {
            *reinterpret_cast<unsigned*>(p) = v;
          } else {
            p[0] = static_cast<unsigned short>(v & 0xffffu);
            if (col + 1 < N) p[1] = static_cast<unsigned short>(v >> 16);
          }
        }
      }
      return;
    }
  }

  // Epilogue. d[4i + j] of m64 block mi is row 16w + g + 8 (j / 2), column
  // 8i + 2t + j % 2 (PTX ISA wgmma .m64nNk16 D fragment): the quad (t =
  // 0..3) of a row holds 8 consecutive columns per i; a 4 x 4 exchange of
  // column pairs (shuffles) over i0..i0+3 gives thread t the 8 columns of
  // block i0 + t, stored as 16 bytes (8 rows x 64 bytes a warp).
  const int g = lane / 4, tq = lane % 4;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = bm + wg * WM + mi * 64 + 16 * w + g + 8 * h;
      half16::CType<DTYPE>* crow = C + static_cast<long long>(row) * N;
#pragma unroll
      for (int i0 = 0; i0 < BN / 8; i0 += 4) {
        if (SPLITK > 1 && (i0 / 4) % SPLITK != static_cast<int>(rank)) continue;
        float ox[4], oy[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int j = (tq - k) & 3;
          const float sx = Sel4(acc[mi][4 * i0 + 2 * h], acc[mi][4 * i0 + 4 + 2 * h],
                                acc[mi][4 * i0 + 8 + 2 * h], acc[mi][4 * i0 + 12 + 2 * h], j);
          const float sy = Sel4(acc[mi][4 * i0 + 2 * h + 1], acc[mi][4 * i0 + 4 + 2 * h + 1],
                                acc[mi][4 * i0 + 8 + 2 * h + 1], acc[mi][4 * i0 + 12 + 2 * h + 1], j);
          const int src = (lane & ~3) | ((tq + k) & 3);
          ox[k] = __shfl_sync(0xffffffffu, sx, src);
          oy[k] = __shfl_sync(0xffffffffu, sy, src);
        }
        float f[8];
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const int k = (p - tq) & 3;
          f[2 * p] = alpha * Sel4(ox[0], ox[1], ox[2], ox[3], k);
          f[2 * p + 1] = alpha * Sel4(oy[0], oy[1], oy[2], oy[3], k);
        }
        const int col = bn + 8 * (i0 + tq);
        if (row >= M || col >= N) continue;
        if (vec && col + 8 <= N) {
          if (beta != 0.0f) {
            float o[8];
            half16::LoadC8<DTYPE>(crow + col, o);
#pragma unroll
            for (int e = 0; e < 8; ++e) f[e] = fmaf(beta, o[e], f[e]);
          }
          if (!prefused) {
#pragma unroll
            for (int e = 0; e < 8; ++e) f[e] = half16::Fuse<DTYPE, EPILOGUE>(f[e], bias, col + e, N);
          }
          half16::StoreC8<DTYPE>(crow + col, f);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            if (col + e < N) {
              crow[col + e] = half16::ToC<DTYPE>(
                  prefused ? f[e]
                           : half16::Fuse<DTYPE, EPILOGUE>(
                                 beta != 0.0f ? fmaf(beta, half16::FromC<DTYPE>(crow[col + e]), f[e])
                                              : f[e],
                                 bias, col + e, N));
            }
          }
        }
      }
    }
  }
}

}  // namespace gemm16_detail
