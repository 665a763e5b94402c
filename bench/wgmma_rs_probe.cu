// Probe of issue 18's next TF32 / 3xTF32 design (not part of the space, not
// built by CMake): C = A * B (row-major, fp32) computed as C^T = B^T * A^T
// on Hopper's warpgroup tensor cores, with the register form of
// wgmma.mma_async (PTX ISA 9.7.15.5.2: "d, a, b-desc, ..."):
//  - wgmma's A operand (M = 64 columns of C, K = 8) is B^T, read from B's
//    natural layout in shared memory (k rows, n contiguous, a row pitch of
//    BN + 8 floats so that a warp's fragment loads hit 32 banks) into
//    registers, and rounded (TF32) or split (3xTF32) there;
//  - wgmma's B operand (K = 8, N = BM rows of C) is A^T, i.e. A's rows as
//    they are in memory: K-major, as .tf32 wgmma needs, so it is copied with
//    16-byte cp.async straight into the 128-byte-swizzled layout and only
//    rounded (or split) in place, with no transposing store (the copy of
//    KIND 6, kernels_src/gemm/wgmma_tf32.cuh, that Nsight Compute found to
//    be its bottleneck:
//    bench/RESULTS.md judge-order-ncu).
// rs_gemm and ws_gemm need M % 256 == 0, N % 128 == 0 and K % 32 == 0
// (skipped otherwise). First runs on an H100
// (bench/RESULTS.md race-places): correct,
// 3xTF32 1.46-1.55x cuBLAS fp32 on the large shapes, TF32 under half of
// cuBLAS TF32; the warp-specialized ws_gemm 20-25% slower than rs_gemm.
// The space's LA=0 kernel (the la0_* entries) runs 3-12%
// faster than rs_gemm (bench/RESULTS.md wgmma-pipeline):
// rs_gemm stays as it was, the reference those changes were measured by.
// la0ws_256x128_s4_tf32 (rs::wsr::ws_tf32): LA=0 TF32 with
// a producer warpgroup (setmaxnreg 40) issuing every cp.async of a K tile and
// two consumer warpgroups (setmaxnreg 232) that meet it through mbarriers
// and never at a CTA barrier: 3-6% faster than the space's LA=0 on the
// large shapes (bench/RESULTS.md wgmma-sass-clock).
// tma_rs_* (sgemm_wgmma_tma, kernels_src/gemm/wgmma_tf32_tma.cuh): both
// operands by TMA (B in 32-column boxes, 128-byte swizzle, fragments by
// 8-byte loads free of bank conflicts), warp-specialized, persistent (_p)
// or not, B multicast to a cluster of two along M (_m2) or not; any shape
// with K and N multiples of 4.
//
// Build here (no GPU needed; the CUDA toolkit): TUNED_BUILD_BENCH=ON bash scripts/build.sh
// (build/bin/wgmma_rs_probe), or
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I. -o .bundle/bin/wgmma_rs_probe bench/wgmma_rs_probe.cu -lcublas
// Run there:
//   .bundle/bin/wgmma_rs_probe 8192 8192 8192
// It prints, per kernel, its median time interleaved with cuBLAS pure fp32
// and cuBLAS TF32 (L2 flushed before each run, 20 rounds), TFLOPS, and its
// relative Frobenius error against an fp64 cuBLAS DGEMM next to cuBLAS's.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "probe_check.h"  // CK, CB

// The kernels' files, in the order NVRTC compiles them appended (the
// helpers CpAsync16, SmemAddr, Split, Swizzle, Descriptor, the wgmma fences;
// RsTile; the space's sgemm_wgmma_ws, timed beside the probes).
#include "kernels_src/gemm/sgemm.cuh"
#include "kernels_src/gemm/warp.cuh"
#include "kernels_src/gemm/mma_tf32.cuh"
#include "kernels_src/gemm/hopper.cuh"
#include "kernels_src/gemm/wgmma_tf32.cuh"
#include "kernels_src/gemm/wgmma_tile.cuh"
#include "kernels_src/gemm/wgmma_rs.cuh"
#include "kernels_src/gemm/wgmma_kernels.cuh"
#include "kernels_src/gemm/wgmma16_ops.cuh"
#include "kernels_src/gemm/wgmma_tf32_tma.cuh"

namespace rs {

using sgemm_detail::CpAsync16;
using sgemm_detail::CpAsyncCommit;
using sgemm_detail::CpAsyncWait;
using sgemm_detail::SmemAddr;
using sgemm_mma_detail::Split;
using sgemm_wgmma_detail::Descriptor;
using sgemm_wgmma_detail::FenceProxyAsync;
using sgemm_wgmma_detail::Pin;
using sgemm_wgmma_detail::Swizzle;
using sgemm_wgmma_detail::WgmmaCommit;
using sgemm_wgmma_detail::WgmmaFence;
using sgemm_wgmma_detail::WgmmaRs;  // the register form of wgmma, m64n128k8 and m64n256k8
using sgemm_wgmma_detail::WgmmaWait;

constexpr int BK = 32;           // K tile: rows of 128 bytes, the 128-byte swizzle
constexpr int ROWB = BK * 4;

// BM rows of C per block (wgmma's N: 128 or 256), BN columns (64 per
// warpgroup: wgmma's M), STAGES shared-memory stages (STAGES - 2 K tiles in
// flight), PASSES 1 (TF32) or 3 (3xTF32: each K tile into fresh
// accumulators, added in fp32 as KIND 6 does); the kernel's LAG: wgmma
// groups left in flight at the end of a K tile (0 or 1).
template <int BM, int BN, int STAGES, int PASSES>
struct Tile {
  enum : int {
    WGS = BN / 64,
    THREADS = WGS * 128,
    ACC = BM / 2,                    // accumulators per thread of one m64 x BM wgmma
    A_BYTES = BM * ROWB,             // one copy of the A tile (1024-byte multiple)
    PB = BN + 8,                     // B's row pitch, floats
    B_OFF = (PASSES == 3 ? 2 : 1) * A_BYTES,
    B_BYTES = BK * PB * 4,
    STAGE_BYTES = (B_OFF + B_BYTES + 1023) / 1024 * 1024,
    A_CHUNKS = BM * (BK / 4) / THREADS,  // 16-byte copies per thread per K tile
    B_CHUNKS = BK * (BN / 4) / THREADS,
    SMEM = STAGES * STAGE_BYTES + 1024,
  };
  static_assert((BM == 128 || BM == 256) && BN % 64 == 0 && STAGES >= 3, "tile");
  static_assert(A_CHUNKS * THREADS == BM * BK / 4 && B_CHUNKS * THREADS == BK * BN / 4, "copies");
  static_assert(PB % 32 == 8, "B's pitch: 8 mod 32 floats (conflict-free fragments)");

  // K tile kt of the block (A at its first row, B at its first column) into
  // the stage at `stage`: A rows swizzled, B rows padded to PB.
  static __device__ __forceinline__ void Load(unsigned char* stage, const float* A, const float* B,
                                              int N, int K, int kt, int tid) {
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int c = tid + i * THREADS, row = c / (BK / 4), q = c % (BK / 4);
      CpAsync16(reinterpret_cast<float*>(stage + Swizzle<ROWB>(row * ROWB + q * 16)),
                A + static_cast<long long>(row) * K + kt * BK + q * 4, true);
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i) {
      const int c = tid + i * THREADS, k = c / (BN / 4), q = c % (BN / 4);
      CpAsync16(reinterpret_cast<float*>(stage + B_OFF) + k * PB + q * 4,
                B + static_cast<long long>(kt * BK + k) * N + q * 4, true);
    }
  }

  // This thread's A chunks of the stage, as Load copied them, rounded to
  // TF32 in place (PASSES 3: big in place, small A_BYTES further).
  static __device__ __forceinline__ void Round(unsigned char* stage, int tid) {
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int c = tid + i * THREADS, row = c / (BK / 4), q = c % (BK / 4);
      uint4* p = reinterpret_cast<uint4*>(stage + Swizzle<ROWB>(row * ROWB + q * 16));
      const uint4 v = *p;
      uint4 big, small;
      Split<PASSES>(__uint_as_float(v.x), big.x, small.x);
      Split<PASSES>(__uint_as_float(v.y), big.y, small.y);
      Split<PASSES>(__uint_as_float(v.z), big.z, small.z);
      Split<PASSES>(__uint_as_float(v.w), big.w, small.w);
      *p = big;
      if constexpr (PASSES == 3) *reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(p) + A_BYTES) = small;
    }
  }
};

// G: blocks rastered in groups of G rows of tiles (for L2 reuse of B's columns), 1: row by row.
template <int BM, int BN, int STAGES, int PASSES, int LAG, int G>
__global__ void __launch_bounds__(Tile<BM, BN, STAGES, PASSES>::THREADS, 1)
    rs_gemm(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C) {
  using T = Tile<BM, BN, STAGES, PASSES>;
  static_assert(LAG == 0 || (LAG == 1 && PASSES == 1), "LAG 1: TF32 only (3xTF32 adds each tile)");
  extern __shared__ __align__(1024) unsigned char rs_smem[];
  const unsigned raw = SmemAddr(rs_smem);
  const unsigned pad = (1024u - (raw & 1023u)) & 1023u;
  unsigned char* smem = rs_smem + pad;
  const unsigned base = raw + pad;

  const int tiles_n = N / BN, tiles_m = M / BM;
  const int group = blockIdx.x / (G * tiles_n), first = group * G;
  const int rows = min(tiles_m - first, G), in_group = blockIdx.x % (G * tiles_n);
  const int bm = (first + in_group % rows) * BM, bn = (in_group / rows) * BN;
  const int tid = threadIdx.x, wg = tid / 128, w = (tid % 128) / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  A += static_cast<long long>(bm) * K;
  B += bn;
  const int nk = K / BK;

  float acc[T::ACC], part[T::ACC];
#pragma unroll
  for (int e = 0; e < T::ACC; ++e) acc[e] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 2; ++s) {
    if (s < nk) T::Load(smem + s * T::STAGE_BYTES, A, B, N, K, s, tid);
    CpAsyncCommit();
  }
  // This warp's rows of B^T (columns of C): 16w + g and + 8 of its warpgroup's 64.
  const int n0 = wg * 64 + 16 * w + g;
  // K tile i with the fragment set (big, small): LAG 0 waits for its wgmmas
  // at its end; LAG 1 (TF32 only) for the tile before's, so that the next
  // tile's rounding, copies and fragment loads run under this tile's
  // wgmmas, in the other fragment set (the loop below alternates the two).
  auto step = [&](int i, unsigned (&big)[BK / 8][4], unsigned (&small)[BK / 8][4]) {
    unsigned char* stage = smem + (i % STAGES) * T::STAGE_BYTES;
    CpAsyncWait<STAGES - 3>();  // this thread's copies of tile i have landed
    T::Round(stage, tid);
    FenceProxyAsync();
    // tile i rounded, visible to wgmma; every warpgroup past its wait at the
    // end of tile i - 1, so tile i - 2's wgmmas (LAG 1; i - 1's, LAG 0) are done
    __syncthreads();
    if (i + STAGES - 2 < nk) {  // into the stage of tile i - 2
      T::Load(smem + ((i + STAGES - 2) % STAGES) * T::STAGE_BYTES, A, B, N, K, i + STAGES - 2, tid);
    }
    CpAsyncCommit();
    // B^T fragments of the K tile (m64k8 .tf32: a0 (row g, k t), a1 (g + 8, t),
    // a2 (g, t + 4), a3 (g + 8, t + 4) of the warp's 16 rows)
    const float* bs = reinterpret_cast<const float*>(stage + T::B_OFF);
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const float* r0 = bs + (kk * 8 + t) * T::PB + n0;
      const float* r4 = r0 + 4 * T::PB;
      Split<PASSES>(r0[0], big[kk][0], small[kk][0]);
      Split<PASSES>(r0[8], big[kk][1], small[kk][1]);
      Split<PASSES>(r4[0], big[kk][2], small[kk][2]);
      Split<PASSES>(r4[8], big[kk][3], small[kk][3]);
    }
    const unsigned a_tile = base + (i % STAGES) * T::STAGE_BYTES;
    if constexpr (PASSES == 3) {
      Pin(part);
    } else {
      Pin(acc);
    }
    WgmmaFence();
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const unsigned long long d_big = Descriptor<ROWB>(a_tile + kk * 32);
      if constexpr (PASSES == 3) {
        const unsigned long long d_small = Descriptor<ROWB>(a_tile + T::A_BYTES + kk * 32);
        WgmmaRs<BM>::Run(part, small[kk], d_big, kk > 0 ? 1 : 0);
        WgmmaRs<BM>::Run(part, big[kk], d_small, 1);
        WgmmaRs<BM>::Run(part, big[kk], d_big, 1);
      } else {
        WgmmaRs<BM>::Run(acc, big[kk], d_big, 1);
      }
    }
    WgmmaCommit();
    // the fragments are read by the wgmmas in flight: a set is written again
    // only after the wgmmas that read it are done
    WgmmaWait<LAG>();
    if constexpr (PASSES == 3) {
      Pin(part);
#pragma unroll
      for (int e = 0; e < T::ACC; ++e) acc[e] += part[e];
    } else {
      Pin(acc);
    }
  };
  unsigned big0[BK / 8][4], small0[BK / 8][4], big1[BK / 8][4], small1[BK / 8][4];
  for (int i = 0; i < nk; i += 2) {
    step(i, big0, small0);
    if (i + 1 < nk) step(i + 1, big1, small1);
  }
  WgmmaWait<0>();
  Pin(acc);

  // acc[4i + j]: row 16w + g + 8 (j / 2) of the warpgroup's 64 columns of C,
  // column 8i + 2t + j % 2 of the BM rows of C (D = C^T).
  float* c = C + static_cast<long long>(bm) * N + bn + wg * 64;
#pragma unroll
  for (int i = 0; i < BM / 8; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = 16 * w + g + 8 * (j / 2), m = 8 * i + 2 * t + (j % 2);
      c[static_cast<long long>(m) * N + n] = acc[4 * i + j];
    }
  }
}


// Warp-specialized 3xTF32 (negative: 20-25% slower than rs_gemm,
// bench/RESULTS.md race-places): one producer warpgroup and two
// consumer warpgroups per block, handing the STAGES stages over with
// mbarriers instead of __syncthreads, so that the consumers' wgmmas never
// wait for the copies or the split of A, nor for each other:
//  - producer (warpgroup 0, 40 registers after setmaxnreg.dec): keeps
//    STAGES - 1 K tiles of cp.async copies in flight; per tile t, after
//    cp.async.wait_group, splits the A chunks it copied itself into big (in
//    place) and small (A_BYTES further), fence.proxy.async, arrives on
//    full[s] (128 arrivals), then, once the consumers released tile t - 1
//    (empty), copies tile t + STAGES - 1 into that stage;
//  - consumers (warpgroups 1 and 2, 232 registers after setmaxnreg.inc):
//    wait on full[s], load their 64 rows of B^T from the padded B tile and
//    split them in registers, 3 x BK/8 wgmmas into fresh accumulators,
//    wgmma.wait_group 0, arrive on empty[s] (256 arrivals), acc += part.
// mbarrier: PTX ISA 9.7.13.15 (init, arrive, try_wait.parity); setmaxnreg:
// 9.7.17.1 (the block's 3 x 128 x 168 registers: 128 x 40 + 256 x 232 fit).
__device__ __forceinline__ void MbarInit(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void MbarArrive(unsigned bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void MbarWait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

template <int STAGES>
__global__ void __launch_bounds__(384, 1)
    ws_gemm(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C) {
  constexpr int BM = 128, BN = 128;
  using T = Tile<BM, BN, STAGES, 3>;  // THREADS = 256: the consumers; the producer copies alone
  constexpr int A_CHUNKS = BM * (BK / 4) / 128, B_CHUNKS = BK * (BN / 4) / 128;
  static_assert(STAGES >= 3, "STAGES - 1 tiles in flight");
  extern __shared__ __align__(1024) unsigned char rs_smem[];
  const unsigned raw = SmemAddr(rs_smem);
  const unsigned pad = (1024u - (raw & 1023u)) & 1023u;
  unsigned char* smem = rs_smem + pad;
  const unsigned base = raw + pad;
  // the barriers after the stages: full[s] at STAGES * STAGE_BYTES + 8 s, empty[s] 8 STAGES further
  const unsigned full = base + STAGES * T::STAGE_BYTES, empty = full + 8 * STAGES;

  const int tiles_n = N / BN;
  const int bm = (blockIdx.x / tiles_n) * BM, bn = (blockIdx.x % tiles_n) * BN;
  const int tid = threadIdx.x, wg = tid / 128;
  A += static_cast<long long>(bm) * K;
  B += bn;
  const int nk = K / BK;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      MbarInit(full + 8 * s, 128);
      MbarInit(empty + 8 * s, 256);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {  // the producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    const int p = tid;
    auto copy = [&](int j) {  // K tile j into stage j % STAGES
      unsigned char* stage = smem + (j % STAGES) * T::STAGE_BYTES;
#pragma unroll 1
      for (int i = 0; i < A_CHUNKS; ++i) {
        const int c = p + i * 128, row = c / (BK / 4), q = c % (BK / 4);
        CpAsync16(reinterpret_cast<float*>(stage + Swizzle<ROWB>(row * ROWB + q * 16)),
                  A + static_cast<long long>(row) * K + j * BK + q * 4, true);
      }
#pragma unroll 1
      for (int i = 0; i < B_CHUNKS; ++i) {
        const int c = p + i * 128, k = c / (BN / 4), q = c % (BN / 4);
        CpAsync16(reinterpret_cast<float*>(stage + T::B_OFF) + k * T::PB + q * 4,
                  B + static_cast<long long>(j * BK + k) * N + q * 4, true);
      }
    };
    // tiles 0 .. STAGES - 2 in flight; then per tile t: wait for its copies,
    // split, hand it over; once the consumers are done with tile t - 1, copy
    // tile t + STAGES - 1 into its stage (so the split of tile t + 1 runs
    // under the consumers' tile t, and each copy has STAGES - 2 tiles to land)
    for (int j = 0; j < STAGES - 1; ++j) {
      if (j < nk) copy(j);
      CpAsyncCommit();
    }
    for (int t = 0; t < nk; ++t) {
      const int s = t % STAGES;
      CpAsyncWait<STAGES - 2>();  // this thread's copies of tile t have landed
      unsigned char* stage = smem + s * T::STAGE_BYTES;
#pragma unroll 1
      for (int i = 0; i < A_CHUNKS; ++i) {
        const int c = p + i * 128, row = c / (BK / 4), q = c % (BK / 4);
        uint4* ptr = reinterpret_cast<uint4*>(stage + Swizzle<ROWB>(row * ROWB + q * 16));
        const uint4 v = *ptr;
        uint4 big, small;
        Split<3>(__uint_as_float(v.x), big.x, small.x);
        Split<3>(__uint_as_float(v.y), big.y, small.y);
        Split<3>(__uint_as_float(v.z), big.z, small.z);
        Split<3>(__uint_as_float(v.w), big.w, small.w);
        *ptr = big;
        *reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(ptr) + T::A_BYTES) = small;
      }
      FenceProxyAsync();
      MbarArrive(full + 8 * s);
      const int j = t + STAGES - 1;
      if (j < nk) {
        if (t >= 1) MbarWait(empty + 8 * ((t - 1) % STAGES), ((t - 1) / STAGES) & 1);
        copy(j);
      }
      CpAsyncCommit();
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int cw = wg - 1, w = (tid % 128) / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  const int n0 = cw * 64 + 16 * w + g;
  float acc[64], part[64];
#pragma unroll
  for (int e = 0; e < 64; ++e) acc[e] = 0.0f;
  for (int t = 0; t < nk; ++t) {
    const int s = t % STAGES;
    MbarWait(full + 8 * s, (t / STAGES) & 1);
    unsigned char* stage = smem + s * T::STAGE_BYTES;
    const float* bs = reinterpret_cast<const float*>(stage + T::B_OFF);
    unsigned big[BK / 8][4], small[BK / 8][4];
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const float* r0 = bs + (kk * 8 + t4) * T::PB + n0;
      const float* r4 = r0 + 4 * T::PB;
      Split<3>(r0[0], big[kk][0], small[kk][0]);
      Split<3>(r0[8], big[kk][1], small[kk][1]);
      Split<3>(r4[0], big[kk][2], small[kk][2]);
      Split<3>(r4[8], big[kk][3], small[kk][3]);
    }
    const unsigned a_tile = base + s * T::STAGE_BYTES;
    Pin(part);
    WgmmaFence();
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
      const unsigned long long d_big = Descriptor<ROWB>(a_tile + kk * 32);
      const unsigned long long d_small = Descriptor<ROWB>(a_tile + T::A_BYTES + kk * 32);
      WgmmaRs<BM>::Run(part, small[kk], d_big, kk > 0 ? 1 : 0);
      WgmmaRs<BM>::Run(part, big[kk], d_small, 1);
      WgmmaRs<BM>::Run(part, big[kk], d_big, 1);
    }
    WgmmaCommit();
    WgmmaWait<0>();
    Pin(part);
    MbarArrive(empty + 8 * s);
#pragma unroll
    for (int e = 0; e < 64; ++e) acc[e] += part[e];
  }
  float* c = C + static_cast<long long>(bm) * N + bn + cw * 64;
#pragma unroll
  for (int i = 0; i < BM / 8; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = 16 * w + g + 8 * (j / 2), m = 8 * i + 2 * t4 + (j % 2);
      c[static_cast<long long>(m) * N + n] = acc[4 * i + j];
    }
  }
}

// LA=0 TF32 warp-specialized (3-6% faster than the space's LA=0,
// bench/RESULTS.md wgmma-sass-clock). A producer warpgroup issues every
// cp.async of a K tile (A swizzled, B padded as RsTile lays them out) and
// signals the stage's "full" mbarrier through cp.async.mbarrier.arrive; the
// two consumer warpgroups wait for it on their own (no CTA barrier), load
// B^T fragments, issue the wgmmas, and free a stage ("empty", 8 warp
// arrivals) once its wgmmas are done. M % 256, N % 128, K % 32 == 0.
namespace wsr {
using T = sgemm_wgmma_detail::RsTile<256, 128, 4, 1>;
constexpr int S = 4, BK = 32, BM = 256, BN = 128, PB = BN + 8, ROWB = 128;
constexpr int SMEM = S * T::STAGE_BYTES + 1024 + 2 * S * 8;

using sgemm_wgmma_detail::CpAsyncArrive;
using sgemm_wgmma_detail::MbarArrive;
using sgemm_wgmma_detail::MbarInit;
using sgemm_wgmma_detail::MbarWait;

// cuda.h's CUtensorMap as the header's TensorMap (the same 128 bytes).
__device__ __forceinline__ const sgemm_wgmma_detail::TensorMap* Map(const CUtensorMap* m) {
  return reinterpret_cast<const sgemm_wgmma_detail::TensorMap*>(m);
}

// The two consumer warpgroups of ws_tf32 and ws_tma (tid < 256): the K
// loop through the full/empty mbarriers (empty: also the peer CTA's,
// `peer_empty`, for MC = 2), then C (N columns, at the block's corner)
// straight from the accumulators. TB: B's stage layout is 8 boxes of 16
// columns x 32 k (ws_tma's TMA), else RsTile's padded rows.
template <int MC, bool TB>
__device__ __forceinline__ void Consume(const unsigned char* smem, unsigned base, int nk, int tid,
                                        unsigned peer_empty, float* __restrict__ C, int N) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const unsigned full = base + S * T::STAGE_BYTES, empty = full + 8 * S;
  float acc[128];
#pragma unroll
  for (int e = 0; e < 128; ++e) acc[e] = 0.0f;
  const int t = tid % 4, n0 = T::ColN0(tid), warp_lane0 = tid % 32 == 0;
  unsigned f0[4][4], f1[4][4], dummy[4][4];
  auto frags = [&](const unsigned char* stage, unsigned (&f)[4][4]) {
    if constexpr (TB) {
      const float* bs = reinterpret_cast<const float*>(stage + T::B_OFF) + (n0 / 16) * 512 + n0 % 16;
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const float2 r0 = *reinterpret_cast<const float2*>(bs + (kk * 8 + t) * 16);
        const float2 r4 = *reinterpret_cast<const float2*>(bs + (kk * 8 + t + 4) * 16);
        sgemm_wgmma_detail::SplitOperand<1>(r0.x, f[kk][0], dummy[kk][0]);
        sgemm_wgmma_detail::SplitOperand<1>(r0.y, f[kk][1], dummy[kk][1]);
        sgemm_wgmma_detail::SplitOperand<1>(r4.x, f[kk][2], dummy[kk][2]);
        sgemm_wgmma_detail::SplitOperand<1>(r4.y, f[kk][3], dummy[kk][3]);
      }
    } else {
      T::Fragments(stage, 0u, n0, t, f, dummy);  // RsTile NN: the generic pointer only
    }
  };
  MbarWait(full, 0);
  frags(smem, f0);
  auto step = [&](int i, unsigned (&f)[4][4], unsigned (&nf)[4][4]) {
    const unsigned long long d0 = sgemm_wgmma_detail::Descriptor<ROWB>(base + (i % S) * T::STAGE_BYTES);
    sgemm_wgmma_detail::Pin(acc);
    sgemm_wgmma_detail::WgmmaFence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) sgemm_wgmma_detail::WgmmaRs<256>::Run(acc, f[kk], d0 + 2ull * kk, 1);
    sgemm_wgmma_detail::WgmmaCommit();
    if (i + 1 < nk) MbarWait(full + 8 * ((i + 1) % S), ((i + 1) / S) & 1);
    sgemm_wgmma_detail::WgmmaWait<1>();  // tile i - 1's wgmmas: its stage is free
    if (i >= 1 && warp_lane0) {
      MbarArrive(empty + 8 * ((i - 1) % S));
      if constexpr (MC > 1) {
        asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(
                         peer_empty + 8 * ((i - 1) % S))
                     : "memory");
      }
    }
    if (i + 1 < nk) frags(smem + ((i + 1) % S) * T::STAGE_BYTES, nf);
  };
  for (int i = 0; i < nk; i += 2) {
    step(i, f0, f1);
    if (i + 1 < nk) step(i + 1, f1, f0);
  }
  sgemm_wgmma_detail::WgmmaWait<0>();
  sgemm_wgmma_detail::Pin(acc);
  // acc[4i + j]: row 8i + 2t + j % 2 of the block's 256, column n0 + j / 2.
#pragma unroll
  for (int i = 0; i < 32; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      *reinterpret_cast<float2*>(C + static_cast<long long>(8 * i + 2 * t + h) * N + n0) =
          make_float2(acc[4 * i + h], acc[4 * i + 2 + h]);
    }
  }
}

// Diagnostics (bench/RESULTS.md tf32-tma-probes; MODE != 0 computes a wrong C, for timing only):
// MODE 1 copies only the first S K tiles (the consumers' ceiling with no
// loads), 2 copies A only on even K tiles, 3 B only on even K tiles (half
// of one operand's L2 traffic). GROUP: sgemm_detail::RasterTile's.
template <int MODE = 0, int GROUP = 1>
__global__ void __launch_bounds__(384, 1)
    ws_tf32(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned raw = sgemm_detail::SmemAddr(smem_raw);
  const unsigned base = raw + ((1024u - (raw & 1023u)) & 1023u);
  unsigned char* smem = smem_raw + (base - raw);
  const unsigned full = base + S * T::STAGE_BYTES, empty = full + 8 * S;
  const int tid = threadIdx.x, tiles_n = N / BN;
  int tile_m, tile_n;
  sgemm_detail::RasterTile<GROUP>(blockIdx.x, M / BM, tiles_n, tile_m, tile_n);
  A += static_cast<long long>(tile_m) * BM * K;
  B += tile_n * BN;
  C += static_cast<long long>(tile_m) * BM * N + tile_n * BN;
  const int nk = K / BK;
  if (tid < S) {
    MbarInit(full + 8 * tid, 128);  // the producer's threads (cp.async arrivals)
    MbarInit(empty + 8 * tid, 8);  // the consumers' warps
  }
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  __syncthreads();
  if (tid >= 256) {  // the producer warpgroup copies
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    const int lane = tid - 256;
    // A: chunk c = lane + 128 j: row c / 8 = lane / 8 + 16 j (the same
    // swizzle), 16-byte unit lane % 8.
    const char* a = reinterpret_cast<const char*>(A + static_cast<long long>(lane / 8) * K + (lane % 8) * 4);
    const long long a_step = 16ll * K * 4;
    const unsigned a_dst = sgemm_wgmma_detail::Swizzle<ROWB>((lane / 8) * ROWB + (lane % 8) * 16);
    // B: chunk c = lane + 128 j: row lane / 32 + 4 j, float quad lane % 32.
    const char* b = reinterpret_cast<const char*>(B + static_cast<long long>(lane / 32) * N + (lane % 32) * 4);
    const long long b_step = 4ll * N * 4;
    const unsigned b_dst = T::B_OFF + ((lane / 32) * PB + (lane % 32) * 4) * 4;
    for (int t = 0; t < nk; ++t) {
      const int st = t % S;
      if (t >= S) MbarWait(empty + 8 * st, ((t / S) - 1) & 1);
      const unsigned stage = base + st * T::STAGE_BYTES;
      if (MODE == 1 && t >= S) {
        a += BK * 4;
        b += 8 * b_step;
        MbarArrive(full + 8 * st);
        continue;
      }
      const char* p = a;
      if (MODE != 2 || t % 2 == 0 || t < S) {
#pragma unroll
        for (int j = 0; j < 16; ++j, p += a_step) {
          sgemm_wgmma_detail::CpAsync16Shared(stage + a_dst + j * 16 * ROWB, p);
        }
      }
      a += BK * 4;
      p = b;
      if (MODE != 3 || t % 2 == 0 || t < S) {
#pragma unroll
        for (int j = 0; j < 8; ++j, p += b_step) {
          sgemm_wgmma_detail::CpAsync16Shared(stage + b_dst + j * 4 * PB * 4, p);
        }
      }
      b += 8 * b_step;  // 32 rows on
      CpAsyncArrive(full + 8 * st);
    }
    return;
  }
  // The consumers: warpgroup w, columns 64 w .. 64 w + 63 of the block's BN.
  Consume<1, false>(smem, base, nk, tid, empty, C, N);
}

// TMA form (bench/RESULTS.md tf32-tma-probes): A (256 rows x 32 k, 32 KB a K tile) by TMA (one
// cp.async.bulk.tensor.2d a K tile from one producer thread, the 128-byte
// swizzle done by the TMA unit: the same layout as Swizzle<128>), B by the
// producer warpgroup's cp.async as in ws_tf32. "full" counts the 128
// cp.async arrivals and the expect_tx arrival, and A's 32 KB of
// transactions. MC = 2: a cluster of 2 CTAs along N shares A: each loads
// half its rows (box 32 x 128) and multicasts them to both; a stage is
// refilled when the consumers of both CTAs have freed it ("empty" counts 16
// warps, the peer's arriving remotely), and the CTAs meet at a cluster
// barrier before they exit.
// TB: B by TMA too, 8 boxes of 16 columns x 32 k (no swizzle: a warp's
// fragment pairs, rows t and t + 2 at 64-byte pitch, take 2 wavefronts as
// with the padded pitch), thread 0 issuing every copy of a K tile.
template <int MC, int GROUP, bool TB = false>
__global__ void __launch_bounds__(384, 1)
    ws_tma(int M, int N, int K, const float* __restrict__ B, float* __restrict__ C,
           const __grid_constant__ CUtensorMap tma, const __grid_constant__ CUtensorMap tmb) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned raw = sgemm_detail::SmemAddr(smem_raw);
  const unsigned base = raw + ((1024u - (raw & 1023u)) & 1023u);
  unsigned char* smem = smem_raw + (base - raw);
  const unsigned full = base + S * T::STAGE_BYTES, empty = full + 8 * S;
  const int tid = threadIdx.x, tiles_n = N / BN;
  int tile_m, tile_n;
  sgemm_detail::RasterTile<GROUP>(blockIdx.x, M / BM, tiles_n, tile_m, tile_n);
  unsigned rank = 0;
  if constexpr (MC > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  B += tile_n * BN;
  C += static_cast<long long>(tile_m) * BM * N + tile_n * BN;
  const int nk = K / BK;
  if (tid < S) {
    MbarInit(full + 8 * tid, TB ? 1 : 129);
    MbarInit(empty + 8 * tid, 8 * MC);
  }
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  if constexpr (MC > 1) {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  } else {
    __syncthreads();
  }
  if (tid >= 256) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    const int lane = tid - 256;
    const char* b = reinterpret_cast<const char*>(B + static_cast<long long>(lane / 32) * N + (lane % 32) * 4);
    const long long b_step = 4ll * N * 4;
    const unsigned b_dst = T::B_OFF + ((lane / 32) * PB + (lane % 32) * 4) * 4;
    const int m0 = tile_m * BM + rank * (BM / MC);
    if (TB && lane != 0) return;
    for (int t = 0; t < nk; ++t) {
      const int st = t % S;
      if (t >= S) MbarWait(empty + 8 * st, ((t / S) - 1) & 1);
      const unsigned stage = base + st * T::STAGE_BYTES;
      if (lane == 0) {
        sgemm_wgmma_detail::MbarArriveTx(full + 8 * st, BM * BK * 4 + (TB ? BK * BN * 4 : 0));
        if constexpr (TB) {
#pragma unroll
          for (int j = 0; j < BN / 16; ++j) {
            sgemm_wgmma_detail::TmaLoad2d(stage + T::B_OFF + j * 2048, Map(&tmb), tile_n * BN + 16 * j,
                                          t * BK, full + 8 * st);
          }
        }
        if constexpr (MC > 1) {
          asm volatile(
              "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
              " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(stage + rank * (BM / MC) * ROWB),
              "l"(&tma), "r"(t * BK), "r"(m0), "r"(full + 8 * st), "h"(static_cast<unsigned short>(3))
              : "memory");
        } else {
          sgemm_wgmma_detail::TmaLoad2d(stage, Map(&tma), t * BK, m0, full + 8 * st);
        }
      }
      if constexpr (!TB) {
        const char* p = b;
#pragma unroll
        for (int j = 0; j < 8; ++j, p += b_step) {
          sgemm_wgmma_detail::CpAsync16Shared(stage + b_dst + j * 4 * PB * 4, p);
        }
        b += 8 * b_step;
        CpAsyncArrive(full + 8 * st);
      }
    }
  } else {
    unsigned peer_empty = empty;
    if constexpr (MC > 1) {
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(peer_empty) : "r"(empty), "r"(rank ^ 1u));
    }
    Consume<MC, TB>(smem, base, nk, tid, peer_empty, C, N);
  }
  if constexpr (MC > 1) {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  }
}
}  // namespace wsr

}  // namespace rs

namespace {

struct Kernel {
  const char* name;
  void (*launch)(int, int, int, const float*, const float*, float*, cudaStream_t);
};

template <int BM, int BN, int STAGES, int PASSES, int LAG = 0, int G = 1>
void Launch(int m, int n, int k, const float* a, const float* b, float* c, cudaStream_t s) {
  using T = rs::Tile<BM, BN, STAGES, PASSES>;
  static bool attr = false;
  if (!attr) {
    CK(cudaFuncSetAttribute(rs::rs_gemm<BM, BN, STAGES, PASSES, LAG, G>,
                            cudaFuncAttributeMaxDynamicSharedMemorySize, T::SMEM));
    attr = true;
  }
  rs::rs_gemm<BM, BN, STAGES, PASSES, LAG, G>
      <<<(m / BM) * (n / BN), T::THREADS, T::SMEM, s>>>(m, n, k, a, b, c);
  CK(cudaGetLastError());
}

template <int STAGES>
void LaunchWs(int m, int n, int k, const float* a, const float* b, float* c, cudaStream_t s) {
  using T = rs::Tile<128, 128, STAGES, 3>;
  constexpr int smem = T::SMEM + 16 * STAGES;
  static bool attr = false;
  if (!attr) {
    CK(cudaFuncSetAttribute(rs::ws_gemm<STAGES>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    attr = true;
  }
  rs::ws_gemm<STAGES><<<(m / 128) * (n / 128), 384, smem, s>>>(m, n, k, a, b, c);
  CK(cudaGetLastError());
}


// A's tensor map (as the launcher encodes LaunchGeometry.tensor_maps):
// dims {K, M}, box {32, rows}, 128-byte swizzle.
// A 2-D fp32 tensor map over a row-major rows x cols matrix at p, boxes of
// box_rows x box_cols; exits on failure.
CUtensorMap EncodeMap(const float* p, int rows, int cols, int box_rows, int box_cols,
                      CUtensorMapSwizzle swizzle) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(cols) * 4};
  const cuuint32_t box[2] = {cuuint32_t(box_cols), cuuint32_t(box_rows)}, estr[2] = {1, 1};
  const CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(p), dims,
                                            strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", int(r));
    std::exit(1);
  }
  return map;
}

// A (M x K): boxes of `rows` rows of 32 k, 128-byte swizzle.
CUtensorMap EncodeA(const float* a, int m, int k, int rows) {
  return EncodeMap(a, m, k, rows, 32, CU_TENSOR_MAP_SWIZZLE_128B);
}

// The space's WS=1 kernel (sgemm_wgmma_ws, A by TMA).
template <int BM, int STAGES, int GROUP = 1>
void LaunchLa0Ws(int m, int n, int k, const float* a, const float* b, float* c, cudaStream_t s) {
  using T = sgemm_wgmma_detail::RsTile<BM, 128, STAGES, 1>;
  constexpr int smem = STAGES * T::STAGE_BYTES + 1024 + 16 * STAGES;
  auto kernel = sgemm_wgmma_ws<BM, STAGES, 1, GROUP>;
  static bool attr = false;
  if (!attr) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    attr = true;
  }
  const CUtensorMap map = EncodeA(a, m, k, BM);
  sgemm_wgmma_detail::TensorMap tma;
  static_assert(sizeof(tma) == sizeof(map), "128 bytes");
  std::memcpy(&tma, &map, sizeof(map));
  sgemm_wgmma_detail::TensorMap no_b{};  // zeros: B as it is (RsGemm's tma_b)
  const dim3 grid(((m + BM - 1) / BM) * ((n + 127) / 128));
  kernel<<<grid, T::THREADS + 128, smem, s>>>(m, n, k, 1.0f, a, b, 0.0f, c, tma, no_b);
  CK(cudaGetLastError());
}

// A's tensor map for ws_tma: dims {K, M}, box {32, 256 / MC}, 128-byte swizzle.
template <int MC, int GROUP, bool TB = false>
void LaunchWsTma(int m, int n, int k, const float* a, const float* b, float* c, cudaStream_t s) {
  auto kernel = rs::wsr::ws_tma<MC, GROUP, TB>;
  static bool attr = false;
  if (!attr) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, rs::wsr::SMEM));
    attr = true;
  }
  const CUtensorMap map = EncodeA(a, m, k, 256 / MC);
  // B (K x N): boxes of 32 k rows of 16 columns, no swizzle.
  const CUtensorMap mapb = EncodeMap(b, k, n, 32, 16, CU_TENSOR_MAP_SWIZZLE_NONE);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((m / 256) * (n / 128));
  cfg.blockDim = dim3(384);
  cfg.dynamicSmemBytes = rs::wsr::SMEM;
  cfg.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = MC;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, kernel, m, n, k, b, c, map, mapb));
}

// The space's LA=0 kernel (kernels_src/gemm/wgmma_tf32.cuh, sgemm_wgmma<...,
// LA 0>, bounds, alpha and beta included), built here by nvcc: beside
// rs_gemm it tells the cost of the bounds and the epilogue from that of
// NVRTC or of the daemon's timing.
// SPLITK > 1: C set to 0 first, inside the timing (the launcher
// prescales C in a client likewise).
template <int BM, int BN, int STAGES, int PASSES, int SPLITK = 1, int PROMOTE = 1>
void LaunchLa0(int m, int n, int k, const float* a, const float* b, float* c, cudaStream_t s) {
  using T = sgemm_wgmma_detail::RsTile<BM, BN, STAGES, PASSES>;
  constexpr int smem = STAGES * T::STAGE_BYTES + 1024;
  auto kernel = sgemm_wgmma<BM, BN, 32, BM, 64, STAGES, SPLITK, PASSES, 1, 1, 0, PROMOTE>;
  static bool attr = false;
  if (!attr) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    attr = true;
  }
  if (SPLITK > 1) CK(cudaMemsetAsync(c, 0, size_t(m) * n * 4, s));
  const dim3 grid(((m + BM - 1) / BM) * ((n + BN - 1) / BN), SPLITK);
  kernel<<<grid, T::THREADS, smem, s>>>(m, n, k, 1.0f, a, b, 0.0f, c);
  CK(cudaGetLastError());
}

template <int MODE = 0, int GROUP = 1>
void LaunchWsTf32(int m, int n, int k, const float* a, const float* b, float* c, cudaStream_t s) {
  static bool attr = false;
  if (!attr) {
    CK(cudaFuncSetAttribute(rs::wsr::ws_tf32<MODE, GROUP>, cudaFuncAttributeMaxDynamicSharedMemorySize, rs::wsr::SMEM));
    attr = true;
  }
  rs::wsr::ws_tf32<MODE, GROUP><<<(m / 256) * (n / 128), 384, rs::wsr::SMEM, s>>>(m, n, k, a, b, c);
  CK(cudaGetLastError());
}

double RelFrobenius(const std::vector<float>& c, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    num += (c[i] - ref[i]) * (c[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

// sgemm_wgmma_tma (kernels_src/gemm/wgmma_tf32_tma.cuh): A's map as
// EncodeA, B's dims {N, K}, box {32, 32}, 128-byte swizzle.
template <int BM, int STAGES, int GROUP, int PERSIST, int MCAST = 1>
void LaunchTmaRs(int m, int n, int k, const float* a, const float* b, float* c, cudaStream_t s) {
  auto kernel = sgemm_wgmma_tma<BM, STAGES, GROUP, PERSIST, MCAST>;
  constexpr int smem = STAGES * (BM * 128 + 16384) + 1024 + 16 * STAGES;
  static bool attr = false;
  static int sms = 0;
  if (!attr) {
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    attr = true;
  }
  const CUtensorMap map_a = EncodeA(a, m, k, BM);
  // B (K x N): 32 x 32 boxes, 128-byte swizzle.
  const CUtensorMap map_b = EncodeMap(b, k, n, 32, 32, CU_TENSOR_MAP_SWIZZLE_128B);
  hopper_detail::TensorMap ta, tb;
  static_assert(sizeof(ta) == sizeof(map_a), "128 bytes");
  std::memcpy(&ta, &map_a, sizeof(map_a));
  std::memcpy(&tb, &map_b, sizeof(map_b));
  // MCAST: cluster tiles of MCAST tiles along M; a persistent grid of at
  // most sms / MCAST clusters (correct beyond those that fit at once: no
  // cluster waits on another).
  const int tiles = (((m + BM - 1) / BM + MCAST - 1) / MCAST) * ((n + 127) / 128);
  const int grid = MCAST * (PERSIST ? std::min(tiles, sms / MCAST) : tiles);
  kernel<<<grid, 384, smem, s>>>(m, n, k, 1.0f, a, b, 0.0f, c, ta, tb);
  CK(cudaGetLastError());
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s M N K [KERNEL] (rs_* and ws_*: M %% 256, N %% 256, K %% 32 == 0; KERNEL: "
                 "only the kernels whose name holds it, e.g. for ncu)\n", argv[0]);
    return 2;
  }
  const int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  // rs_* and ws_* need them (N % 256: rs_128x256's grid is empty below 256
  // columns); the la0_* kernels take any shape.
  const bool aligned = m % 256 == 0 && n % 256 == 0 && k % 32 == 0;
  const Kernel kernels[] = {
      {"rs_128x128_s4_tf32", Launch<128, 128, 4, 1>},
      {"rs_256x128_s4_tf32", Launch<256, 128, 4, 1>},
      {"rs_128x256_s3_tf32", Launch<128, 256, 3, 1>},
      {"rs_128x128_s4_tf32_lag1", Launch<128, 128, 4, 1, 1>},
      {"rs_256x128_s4_tf32_lag1", Launch<256, 128, 4, 1, 1>},
      {"rs_128x128_s3_3xtf32", Launch<128, 128, 3, 3>},
      {"rs_128x128_s4_3xtf32", Launch<128, 128, 4, 3>},
      {"rs_128x256_s3_tf32_g8", Launch<128, 256, 3, 1, 0, 8>},
      {"rs_128x128_s3_3xtf32_g8", Launch<128, 128, 3, 3, 0, 8>},
      {"rs_128x128_s4_3xtf32_g8", Launch<128, 128, 4, 3, 0, 8>},
      {"rs_128x128_s4_3xtf32_g4", Launch<128, 128, 4, 3, 0, 4>},
      {"la0_128x128_s4_3xtf32", LaunchLa0<128, 128, 4, 3>},
      {"la0_256x128_s4_tf32", LaunchLa0<256, 128, 4, 1>},
      {"la0ws_256x128_s4_tf32", LaunchWsTf32<>},
      {"la0ws_256x128_s4_tf32_g4", LaunchWsTf32<0, 4>},
      {"tma_ws_256x128_s4_tf32", LaunchWsTma<1, 1>},
      {"tma_ws_256x128_s4_tf32_g4", LaunchWsTma<1, 4>},
      {"tma_mc2_ws_256x128_s4_tf32", LaunchWsTma<2, 1>},
      {"tmab_ws_256x128_s4_tf32", LaunchWsTma<1, 1, true>},
      {"la0ws_256x128_s4_tf32_g8", LaunchWsTf32<0, 8>},
      {"la0ws_256x128_s4_tf32_g16", LaunchWsTf32<0, 16>},
      {"diag_noload_ws_256x128_s4_tf32_g8", LaunchWsTf32<1, 8>},
      {"diag_halfA_ws_256x128_s4_tf32_g8", LaunchWsTf32<2, 8>},
      {"diag_halfB_ws_256x128_s4_tf32_g8", LaunchWsTf32<3, 8>},
      {"la0_256x128_s4_tf32_ws", LaunchLa0Ws<256, 4>},
      {"la0_256x128_s4_tf32_ws_g4", LaunchLa0Ws<256, 4, 4>},
      {"la0_128x128_s4_tf32_ws", LaunchLa0Ws<128, 4>},
      {"tma_rs_256x128_s4_p", LaunchTmaRs<256, 4, 1, 1>},
      {"tma_rs_256x128_s4_p_g8", LaunchTmaRs<256, 4, 8, 1>},
      {"tma_rs_256x128_s4", LaunchTmaRs<256, 4, 1, 0>},
      {"tma_rs_128x128_s6_p", LaunchTmaRs<128, 6, 1, 1>},
      {"tma_rs_64x128_s8_p", LaunchTmaRs<64, 8, 1, 1>},
      {"tma_rs_64x128_s8", LaunchTmaRs<64, 8, 1, 0>},
      {"tma_rs_128x128_s6", LaunchTmaRs<128, 6, 1, 0>},
      {"tma_rs_256x128_s4_p_m2", LaunchTmaRs<256, 4, 1, 1, 2>},
      {"tma_rs_256x128_s4_p_g8_m2", LaunchTmaRs<256, 4, 8, 1, 2>},
      {"tma_rs_128x128_s6_p_m2", LaunchTmaRs<128, 6, 1, 1, 2>},
      {"la0_128x128_s4_tf32", LaunchLa0<128, 128, 4, 1>},
      {"la0_128x128_s6_tf32", LaunchLa0<128, 128, 6, 1>},
      {"la0_128x128_s4_3xtf32_sk2", LaunchLa0<128, 128, 4, 3, 2>},
      {"la0_128x128_s4_3xtf32_sk4", LaunchLa0<128, 128, 4, 3, 4>},
      {"la0_128x128_s4_3xtf32_p2", LaunchLa0<128, 128, 4, 3, 1, 2>},
      {"la0_128x128_s4_3xtf32_sk2_p2", LaunchLa0<128, 128, 4, 3, 2, 2>},
      {"la0_128x128_s4_3xtf32_sk4_p2", LaunchLa0<128, 128, 4, 3, 4, 2>},
      {"ws_128x128_s4_3xtf32", LaunchWs<4>},
      {"ws_128x128_s3_3xtf32", LaunchWs<3>},
  };
  const size_t na = size_t(m) * k, nb = size_t(k) * n, nc = size_t(m) * n;
  std::vector<float> ha(na), hb(nb);
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : ha) x = u(gen);
  for (float& x : hb) x = u(gen);
  float *a, *b, *c, *flush;
  double *da, *db, *dc;
  const size_t flush_bytes = size_t(200) << 20;  // 4x the H100's 50 MB L2
  CK(cudaMalloc(&a, na * 4));
  CK(cudaMalloc(&b, nb * 4));
  CK(cudaMalloc(&c, nc * 4));
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMemcpy(a, ha.data(), na * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b, hb.data(), nb * 4, cudaMemcpyHostToDevice));
  // fp64 reference (cuBLAS DGEMM, row-major as C^T = B^T A^T column-major)
  {
    std::vector<double> t(na);
    for (size_t i = 0; i < na; ++i) t[i] = ha[i];
    CK(cudaMalloc(&da, na * 8));
    CK(cudaMemcpy(da, t.data(), na * 8, cudaMemcpyHostToDevice));
    t.assign(nb, 0);
    for (size_t i = 0; i < nb; ++i) t[i] = hb[i];
    CK(cudaMalloc(&db, nb * 8));
    CK(cudaMemcpy(db, t.data(), nb * 8, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&dc, nc * 8));
  }
  cublasHandle_t fp32, tf32, fp64;
  CB(cublasCreate(&fp32));
  CB(cublasCreate(&tf32));
  CB(cublasCreate(&fp64));
  CB(cublasSetMathMode(fp32, CUBLAS_PEDANTIC_MATH));
  CB(cublasSetMathMode(tf32, CUBLAS_TF32_TENSOR_OP_MATH));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (cublasHandle_t h : {fp32, tf32, fp64}) CB(cublasSetStream(h, s));
  const float one = 1.0f, zero = 0.0f;
  const double one64 = 1.0, zero64 = 0.0;
  CB(cublasDgemm(fp64, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one64, db, n, da, k, &zero64, dc, n));
  std::vector<double> ref(nc);
  CK(cudaMemcpy(ref.data(), dc, nc * 8, cudaMemcpyDeviceToHost));
  auto cublas = [&](cublasHandle_t h) {
    return [&, h](cudaStream_t) {
      CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n));
    };
  };
  std::vector<float> hc(nc);
  auto error = [&]() {
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(hc.data(), c, nc * 4, cudaMemcpyDeviceToHost));
    return RelFrobenius(hc, ref);
  };
  struct Run {
    const char* name;
    std::function<void(cudaStream_t)> run;
    double err = 0;
    std::vector<double> ms;
  };
  std::vector<Run> runs;
  runs.push_back({"cuBLAS fp32", cublas(fp32)});
  runs.push_back({"cuBLAS TF32", cublas(tf32)});
  for (const Kernel& kern : kernels) {
    if (argc == 5 && std::string(kern.name).find(argv[4]) == std::string::npos) continue;
    // tma_rs_*: any shape TMA takes (K and N multiples of 4).
    const std::string nm = kern.name;
    if (nm.rfind("tma_rs_", 0) == 0 ? (k % 4 != 0 || n % 4 != 0) : !aligned && nm.rfind("la0_", 0) != 0) {
      continue;
    }
    auto launch = kern.launch;
    runs.push_back({kern.name, [=](cudaStream_t st) { launch(m, n, k, a, b, c, st); }});
  }
  for (Run& r : runs) {  // correctness on a poisoned output, and the warm-up
    CK(cudaMemsetAsync(c, 0xff, nc * 4, s));
    r.run(s);
    r.err = error();
  }
  constexpr int kRounds = 20;
  std::vector<cudaEvent_t> ev(2 * runs.size() * kRounds);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int round = 0; round < kRounds; ++round) {
    for (size_t j = 0; j < runs.size(); ++j) {
      const size_t i = round % 2 ? runs.size() - 1 - j : j;
      CK(cudaMemsetAsync(flush, round, flush_bytes, s));
      CK(cudaEventRecord(ev[2 * (round * runs.size() + i)], s));
      runs[i].run(s);
      CK(cudaEventRecord(ev[2 * (round * runs.size() + i) + 1], s));
    }
  }
  CK(cudaStreamSynchronize(s));
  for (int round = 0; round < kRounds; ++round) {
    for (size_t i = 0; i < runs.size(); ++i) {
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, ev[2 * (round * runs.size() + i)],
                              ev[2 * (round * runs.size() + i) + 1]));
      runs[i].ms.push_back(ms);
    }
  }
  const double flops = 2.0 * m * n * k;
  const double fp32_ms = Median(runs[0].ms), tf32_ms = Median(runs[1].ms);
  std::printf("# %dx%dx%d, %d rounds interleaved, L2 flushed before each run; error: relative "
              "Frobenius against cuBLAS DGEMM\n", m, n, k, kRounds);
  std::printf("%-24s %10s %8s %9s %9s %10s %8s\n", "kernel", "ms", "TFLOPS", "vs_fp32", "vs_tf32",
              "error", "err/fp32");
  for (const Run& r : runs) {
    const double ms = Median(r.ms);
    std::printf("%-24s %10.4f %8.1f %9.3f %9.3f %10.2e %8.2f\n", r.name, ms, flops / ms / 1e9,
                fp32_ms / ms, tf32_ms / ms, r.err, r.err / runs[0].err);
  }
  // PROBE_SUSTAIN=s: each kernel alone, back to back for s seconds (no
  // flush), with its wall-clock start and end (to match against
  // nvidia-smi's clock and power samples) and its TFLOPS over the whole run.
  if (const char* sus = std::getenv("PROBE_SUSTAIN")) {
    const double secs = std::atof(sus);
    for (Run& r : runs) {
      CK(cudaStreamSynchronize(s));
      const auto t0 = std::chrono::system_clock::now();
      long long launches = 0;
      while (std::chrono::duration<double>(std::chrono::system_clock::now() - t0).count() < secs) {
        for (int j = 0; j < 10; ++j, ++launches) r.run(s);
        CK(cudaStreamSynchronize(s));
      }
      const auto t1 = std::chrono::system_clock::now();
      const double wall = std::chrono::duration<double>(t1 - t0).count();
      auto epoch = [](std::chrono::system_clock::time_point t) {
        return std::chrono::duration<double>(t.time_since_epoch()).count();
      };
      std::printf("sustain %-24s start %.3f end %.3f launches %lld TFLOPS %.1f\n", r.name, epoch(t0),
                  epoch(t1), launches, flops * launches / wall / 1e12);
    }
  }
  return 0;
}
