// TF32 GEMM on Hopper's warpgroup tensor cores with both operands copied by
// TMA, warp-specialized and optionally persistent: sgemm_wgmma_tma, the
// sgemm family's WS 2 and 3 (families/sgemm/wgmma.cc), and
// bench/wgmma_rs_probe.cu's tma_rs_* entries.
//
//   C(M x N) = alpha * A(M x K) * B(K x N) + beta * C,  row-major fp32 (NN),
//
// computed as C^T = B^T A^T with the register form of wgmma (PTX ISA
// 9.7.15.5.2), as sgemm_wgmma_ws does (wgmma_rs.cuh): wgmma's M (64 a
// consumer warpgroup) runs along N, its N (BM) along M.
//  - wgmma's B operand is A's tile as TMA writes it: BM rows of 32 k (128
//    bytes), 128-byte swizzle, K-major, as .tf32 needs. wgmma reads it
//    truncated to TF32 (as sgemm_wgmma_ws: 1.6x cuBLAS TF32's error).
//  - wgmma's A operand is B^T, from B's tile as TMA writes it: BN / 32
//    boxes of 32 k rows x 32 columns (128 bytes), 128-byte swizzle. Each
//    thread loads its fragments with 8-byte loads and rounds them (cvt.rna).
//    A thread's fragment rows g and g + 8 (g = lane / 4) are the columns
//    n0 and n0 + 1 (PairColumn), placed so that each half-warp's 16 loads
//    of a k row fall in 16 distinct 8-byte bank pairs under the swizzle.
//
// template <int BM, int STAGES, int GROUP, int PERSIST, int MCAST = 1, int SPLITK = 1,
//           int KRED = 0>
// __global__ void sgemm_wgmma_tma(int M, int N, int K, float alpha, const float* A,
//     const float* B, float beta, float* C,
//     const __grid_constant__ hopper_detail::TensorMap tma_a,   // dims {K, M}, box {32, BM}
//     const __grid_constant__ hopper_detail::TensorMap tma_b);  // dims {N, K}, box {32, 32}
//   Both maps FLOAT32, strides {K * 4} / {N * 4} bytes, swizzle 128B, OOB fill NONE
//   (zeros): K and N multiples of 4, A and B 16-byte aligned.
//   BM 64, 128 or 256; BN 128 (two consumer warpgroups of 64 columns) and BK 32;
//   block (384, 1, 1): the consumers, then the producer warpgroup;
//   dynamic shared memory STAGES * (BM * 128 + 16384) + 1024 + 16 * STAGES bytes, and
//   with KRED (SPLITK - 1) * BM * 512 + 8 more;
//   grid: T = ceil(ceil(M / BM) / MCAST) * ceil(N / 128) * SPLITK cluster units; PERSIST 0:
//   (MCAST * T); 1: (MCAST * min(T, P)), P the clusters of MCAST CTAs the device holds.
//   SPLITK 1, 2, 4 or 8: unit u is cluster tile u / SPLITK's K tiles of split u % SPLITK
//   (sgemm.cuh's SplitKRange), added into C by atomicAdd: the launcher sets C to
//   beta * C first (LaunchGeometry.prescale_output), and the kernel ignores beta.
//   KRED 1 (SPLITK 2..4, PERSIST 0, MCAST 1): the split-K partial sums are reduced
//   in a compile-time cluster (1, 1, SPLITK) instead, no atomics and no prescale:
//   grid (ceil(M / BM) * ceil(N / 128), 1, SPLITK), rank r = blockIdx.z takes split r
//   of tile blockIdx.x; ranks 1.. push their accumulators into rank 0's shared memory
//   by st.async (receive buffer (SPLITK - 1) * BM * 512 bytes, after the stages), and
//   rank 0 adds them and stores C = alpha * sum + beta * C. Launch it plainly (no
//   cluster attribute).
//   MCAST 2: a compile-time cluster (2, 1, 1) of two CTAs whose tiles are stacked
//   along M; rank r copies B's boxes j = r (mod 2) into both by TMA multicast
//   (wgmma16.cuh's MCAST), and a stage is free once both CTAs' consumers are done.
//   C needs no alignment (8-byte stores where N is even and C 8-byte aligned).
//
// Compiled after sgemm/sgemm.cuh (RasterTile), sgemm/mma_tf32.cuh (Tf32),
// sgemm/hopper.cuh, sgemm/wgmma_tf32.cuh (WgmmaRs) and sgemm/wgmma16_ops.cuh
// (Desc, SmemAddr, MbarExpectTx, PrefetchMap), no #include; nvcc or NVRTC
// with sm_90a.

namespace sgemm_tma_detail {

using namespace hopper_detail;  // NOLINT(build/namespaces): hopper.cuh's primitives
using gemm16_detail::CeilDiv;
using gemm16_detail::Desc;
using gemm16_detail::NextStage;
using gemm16_detail::PassStages;
using gemm16_detail::PrefetchMap;
using gemm16_detail::SmemAddr;

constexpr int kBK = 32;           // K tile: one 128-byte row of fp32
constexpr int kBN = 128;          // two consumer warpgroups of 64 columns
constexpr int kBox = 32 * 128;    // one B box: 32 k rows of 32 columns

// The first of the two columns (of its warpgroup's 64) whose fragments the
// thread of warp w (0..3) and lane group g (lane / 4) loads: box w / 2;
// in it, 16-byte chunk 4 ((g / 2) % 2) + 2 (w % 2) + g / 4 and 8-byte half
// g % 2. Under the 128-byte swizzle, chunk c of k row k sits at c ^ (k % 8):
// the threads (g, t) of a half-warp, reading k row t (or t + 4), then hit
// chunks 4 b + (x ^ t) (b = (g / 2) % 2, x = 2 (w % 2) + g / 4 fixed in the
// half-warp) and halves g % 2: 16 distinct 8-byte bank pairs.
__device__ __forceinline__ int PairColumn(int w, int g) {
  return 32 * (w / 2) + 16 * ((g / 2) % 2) + 4 * (2 * (w % 2) + g / 4) + 2 * (g % 2);
}

__device__ __forceinline__ float2 LdShared64(unsigned addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr));
  return v;
}

template <int BM, int STAGES, int GROUP, int PERSIST, int MCAST, int SPLITK, int KRED>
__device__ __forceinline__ void GemmTf32(int M, int N, int K, float alpha, float beta,
                                         float* __restrict__ C, const TensorMap* tma_a,
                                         const TensorMap* tma_b) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // wgmma and setmaxnreg exist on sm_90a alone
#else
  static_assert(BM == 64 || BM == 128 || BM == 256, "BM 64, 128 or 256 (wgmma N)");
  static_assert(PERSIST == 0 || PERSIST == 1, "PERSIST 0 or 1");
  static_assert(MCAST == 1 || MCAST == 2, "MCAST 1 or 2");
  static_assert(SPLITK == 1 || SPLITK == 2 || SPLITK == 4 || SPLITK == 8, "SPLITK 1, 2, 4 or 8");
  static_assert(KRED == 0 || (KRED == 1 && SPLITK >= 2 && SPLITK <= 4 && PERSIST == 0 &&
                              MCAST == 1),
                "KRED 1: SPLITK 2..4 reduced in a cluster, PERSIST 0, MCAST 1");
  constexpr int A_BYTES = BM * 128, B_BYTES = kBN * kBK * 4, STAGE = A_BYTES + B_BYTES;
  // KRED: the peers' partial sums, float4 ((slot * BM / 8 + q) * 256 + thread)
  // of peer slot + 1 (each consumer thread's BM / 8 float4 of accumulators).
  constexpr int RECV = KRED ? (SPLITK - 1) * BM * 512 : 0;
  static_assert(STAGES >= 2 && STAGES * STAGE + RECV + 1024 + 16 * STAGES + 8 * KRED <= 227 * 1024,
                "shared memory: 227 KB");
  extern __shared__ __align__(1024) unsigned char tf32_tma_smem[];
  const unsigned base = (SmemAddr(tf32_tma_smem) + 1023u) & ~1023u;
  const unsigned recv = base + STAGES * STAGE;
  const unsigned full = recv + RECV, empty = full + 8 * STAGES;
  const unsigned recv_bar = empty + 8 * STAGES;  // KRED: the peers' partial sums arrived

  // Cluster tiles: MCAST tiles stacked along M (a rank's rows may lie past
  // M: it computes zeros and stores none); SPLITK units a tile (KRED: one,
  // its split blockIdx.z).
  const int tiles_mc = CeilDiv(CeilDiv(M, BM), MCAST), tiles_n = CeilDiv(N, kBN);
  constexpr int UNITS = KRED ? 1 : SPLITK;  // units a tile
  const int tiles = tiles_mc * tiles_n * UNITS;
  const int zrank = KRED ? static_cast<int>(blockIdx.z) : 0;  // KRED: the cluster rank
  const int first = static_cast<int>(blockIdx.x) / MCAST;
  // The tail in halves (PERSIST, MCAST 1, SPLITK 1; wgmma16.cuh's form, along N):
  // where the last round of tiles would leave at least half of the CTAs
  // idle, its `rest` tiles become 2 rest units of 64 columns, one a CTA,
  // computed by the first consumer warpgroup alone.
  int whole = tiles, units = tiles;
  if constexpr (PERSIST == 1 && MCAST == 1 && SPLITK == 1) {
    const int rest = tiles % static_cast<int>(gridDim.x);
    if (rest > 0 && 2 * rest <= static_cast<int>(gridDim.x)) {
      whole = tiles - rest;
      units = tiles + rest;
    }
  }
  const int step = PERSIST ? static_cast<int>(gridDim.x) / MCAST : units;
  const unsigned crank = MCAST > 1 ? gemm16_detail::ClusterRank() : 0u;
  const int ktiles = CeilDiv(K, kBK), per = CeilDiv(ktiles, SPLITK);
  // Unit u's first row and column and its K tiles [kt0, kt1) (SPLITK: split
  // u % SPLITK's, KRED blockIdx.z's, maybe none); -1 for a whole tile, else
  // its half (1: 64 columns on; B's boxes are then copied from there, the
  // last two unused).
  auto tile_at = [&](int u, int& bm, int& bn, int& kt0, int& kt1) -> int {
    int half = -1;
    if (u >= whole) {
      half = (u - whole) % 2;
      u = whole + (u - whole) / 2;
    }
    kt0 = (KRED ? zrank : u % SPLITK) * per;
    kt1 = min(ktiles, kt0 + per);
    int tm, tn;
    sgemm_detail::RasterTile<(GROUP + MCAST - 1) / MCAST>(u / UNITS, tiles_mc, tiles_n, tm, tn);
    bm = (tm * MCAST + static_cast<int>(crank)) * BM;
    bn = tn * kBN + (half == 1 ? 64 : 0);
    return half;
  };
  // K tile t of a unit at rows bm, columns bn into stage s: A's box, and
  // B's boxes (MCAST 2: this rank's, multicast into both CTAs).
  auto load_stage = [&](int s, int bm, int bn, int t) {
    const unsigned sa = base + s * STAGE, sb = sa + A_BYTES, bar = full + 8 * s;
    MbarArriveTx(bar, STAGE);
    TmaLoad2d(sa, tma_a, t * kBK, bm, bar);
#pragma unroll
    for (int j = 0; j < kBN / 32; ++j) {
      if constexpr (MCAST == 1) {
        TmaLoad2d(sb + j * kBox, tma_b, bn + 32 * j, t * kBK, bar);
      } else if (j % MCAST == static_cast<int>(crank)) {
        TmaLoad2dMulticast(sb + j * kBox, tma_b, bn + 32 * j, t * kBK, bar,
                           static_cast<unsigned short>((1u << MCAST) - 1));
      }
    }
  };
  // The first K tiles of this CTA's first unit (at most STAGES), copied by
  // thread 0 as soon as the mbarriers exist (MCAST 2: the peer's too, after
  // the cluster barrier); the producer skips them. The producer's code lies
  // past the consumers', so its first copy otherwise waits for a barrier, a
  // branch into code not yet in the instruction cache and its own setup
  // (wgmma16.cuh's early copies: 1024^3 +3-5.5% in 16 bits,
  // bench/RESULTS.md gemm16-early-copies).
  auto early_of = [&](int kt0, int kt1) { return min(STAGES, kt1 - kt0); };
  auto issue_early = [&]() {
    if (first >= units) return;
    FenceProxyAsync();  // the initializations before TMA's complete_tx on them
    int bm, bn, kt0, kt1;
    tile_at(first, bm, bn, kt0, kt1);
#pragma unroll 1
    for (int i = 0; i < early_of(kt0, kt1); ++i) load_stage(i, bm, bn, kt0 + i);
  };
  const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid / 128, 0);
  if (tid == 0) {
    // The maps into the TMA unit's cache first (a miss to DRAM after an L2
    // flush), overlapping the setup.
    PrefetchMap(tma_a);
    PrefetchMap(tma_b);
    for (int s = 0; s < STAGES; ++s) {
      MbarInit(full + 8 * s, 1);   // the producer's arrival with the stage's bytes
      MbarInit(empty + 8 * s, 8 * MCAST);  // each consumer warp of every CTA
    }
    if constexpr (KRED) {
      // Rank 0: this thread's arrival and the peers' bytes (every consumer
      // thread's BM / 2 floats from each of SPLITK - 1 peers).
      MbarInit(recv_bar, 1);
      if (zrank == 0) MbarArriveTx(recv_bar, static_cast<unsigned>(RECV));
    }
    FenceMbarInit();
    if constexpr (MCAST == 1) issue_early();
  }
  if constexpr (MCAST > 1) {
    // The peer's mbarriers before any multicast or arrival.
    gemm16_detail::ClusterArriveRelaxed();
    gemm16_detail::ClusterWait();
    if (tid == 0) issue_early();
  } else {
    __syncthreads();
    // KRED: rank 0's recv_bar initialized before any peer's st.async (the
    // peers wait after their mainloop).
    if constexpr (KRED) gemm16_detail::ClusterArriveRelaxed();
  }

  if (wg == 2) {
    // Producer: one thread issues each K tile's boxes once the stage is free.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (tid == 256) {
      int s = 0, it = 0;
      unsigned phase = 1;
#pragma unroll 1
      for (int u = first; u < units; u += step) {
        int bm, bn, kt0, kt1;
        tile_at(u, bm, bn, kt0, kt1);
        const int skip = u == first ? early_of(kt0, kt1) : 0;  // thread 0's copies
#pragma unroll 1
        for (int t = kt0; t < kt1; ++t, ++it) {
          if (t - kt0 >= skip) {
            if (it >= STAGES) MbarWait(empty + 8 * s, phase);
            load_stage(s, bm, bn, t);
          }
          NextStage<STAGES>(s, phase);
        }
      }
      if constexpr (MCAST > 1) {
        // The producer's tail: every stage's last releases, the peer's
        // remote arrivals among them, are in before this CTA may exit (no
        // cluster barrier at the end; gemm16_wgmma's form,
        // bench/RESULTS.md gemm16-mcast-tail).
#pragma unroll 1
        for (int k = 0; k < STAGES; ++k, ++it) {
          if (it >= STAGES) MbarWait(empty + 8 * s, phase);
          NextStage<STAGES>(s, phase);
        }
      }
    }
    __syncwarp();
    return;
  }

  // Consumers: warpgroup wg's columns bn + 64 wg .. + 64 of the tile, all BM rows.
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const int lane = tid % 32, w = (tid % 128) / 32, g = lane / 4, t4 = lane % 4;
  const int n0 = PairColumn(w, g);
  const int box = 2 * wg + n0 / 32, chunk = (n0 % 32) / 4, half = g % 2;
  // Its fragments' bytes in a stage's B tile: k rows t4 and t4 + 4 of the
  // box (each k8 step 8 rows, 1024 bytes, on; k % 8 is the same).
  const unsigned frag0 = A_BYTES + box * kBox + t4 * 128 + ((chunk ^ t4) * 16) + half * 8;
  const unsigned frag4 =
      A_BYTES + box * kBox + (t4 + 4) * 128 + ((chunk ^ (t4 + 4)) * 16) + half * 8;
  // wgmma's B (A's tile): K-major 128-byte rows, 8-row groups 1024 bytes
  // apart; a k8 step is 32 bytes (descriptor + 2), a stage STAGE / 16 on.
  const unsigned long long desc0 = Desc(base, 16, 1024);
  int stage = 0, prev = 0;
  unsigned phase = 0;
  // Stage s released by this warp: on this CTA's "empty", or with MCAST on
  // every CTA's (lane r on rank r's).
  auto release = [&](int s) {
    if constexpr (MCAST == 1) {
      if (lane == 0) MbarArrive(empty + 8 * s);
    } else if (lane < MCAST) {
      MbarArriveCluster(empty + 8 * s, static_cast<unsigned>(lane));
    }
  };
#pragma unroll 1
  for (int u = first; u < units; u += step) {
    int bm, bn, kt0, kt1;
    const int tail_half = tile_at(u, bm, bn, kt0, kt1);
    const int nk = kt1 - kt0;
    if (SPLITK > 1 && !KRED && nk <= 0) continue;  // a split past K's end: nothing to add
    if (tail_half >= 0 && wg == 1) {
      // A tail half: the first warpgroup's columns. This one passes over
      // the stages.
      PassStages<STAGES>(full, nk, stage, phase, release);
      continue;
    }
    float acc[BM / 2];
#pragma unroll
    for (int e = 0; e < BM / 2; ++e) acc[e] = 0.0f;
    // K tile t: wait for its stage, load and round its fragments into f
    // (the set that K tile t - 2 read: its wgmmas are done), issue its four
    // wgmmas, and once K tile t - 1's are done release that stage.
    auto k_tile = [&](unsigned (&f)[4][4], int t) {
      MbarWait(full + 8 * stage, phase);
      const unsigned sb = base + stage * STAGE;
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const float2 x = LdShared64(sb + frag0 + kk * 1024);
        const float2 y = LdShared64(sb + frag4 + kk * 1024);
        f[kk][0] = sgemm_mma_detail::Tf32(x.x);  // row g (n0), k t
        f[kk][1] = sgemm_mma_detail::Tf32(x.y);  // row g + 8 (n0 + 1), k t
        f[kk][2] = sgemm_mma_detail::Tf32(y.x);  // row g, k t + 4
        f[kk][3] = sgemm_mma_detail::Tf32(y.y);  // row g + 8, k t + 4
      }
      WgmmaFence();
      const unsigned long long d = desc0 + static_cast<unsigned long long>(stage) * (STAGE / 16);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) sgemm_wgmma_detail::WgmmaRs<BM>::Run(acc, f[kk], d + 2 * kk, 1);
      WgmmaCommit();
      WgmmaWait<1>();
      if (t > 0) release(prev);
      prev = stage;
      NextStage<STAGES>(stage, phase);
    };
    unsigned f0[4][4], f1[4][4];
    int t = 0;
#pragma unroll 1
    for (; t + 1 < nk; t += 2) {
      k_tile(f0, t);
      k_tile(f1, t + 1);
    }
    if (t < nk) k_tile(f0, t);
    WgmmaWait<0>();
    if (nk > 0) release(prev);
    Pin(acc);
    if constexpr (KRED) {
      // Ranks 1..: push the partial sums (zeros for a split past K's end)
      // into rank 0's receive buffer, and store nothing. Rank 0: wait for
      // them and add them.
      const int ctid = tid;  // 0 .. 255
      if (zrank != 0) {
        gemm16_detail::ClusterWait();  // rank 0's recv_bar initialized
#pragma unroll
        for (int q = 0; q < BM / 8; ++q) {
          gemm16_detail::StAsyncPeer4(recv + (((zrank - 1) * (BM / 8) + q) * 256 + ctid) * 16,
                                      recv_bar, 0u, acc[4 * q], acc[4 * q + 1], acc[4 * q + 2],
                                      acc[4 * q + 3]);
        }
        continue;
      }
      MbarWait(recv_bar, 0);
#pragma unroll 1
      for (int slot = 0; slot < SPLITK - 1; ++slot) {
#pragma unroll
        for (int q = 0; q < BM / 8; ++q) {
          const float4 v = gemm16_detail::LdShared4(recv + ((slot * (BM / 8) + q) * 256 + ctid) * 16);
          acc[4 * q] += v.x;
          acc[4 * q + 1] += v.y;
          acc[4 * q + 2] += v.z;
          acc[4 * q + 3] += v.w;
        }
      }
    }

    // Epilogue. acc[4i + j] is wgmma row 16w + g + 8 (j / 2), column 8i +
    // 2 t4 + j % 2: C's column n0 + j / 2 (of the warpgroup's 64) and row
    // 8i + 2 t4 + j % 2 of the tile. Rows m and m + 1 of a thread each
    // take its column pair, one 8-byte store where N is even and C 8-byte
    // aligned; SPLITK > 1: an atomicAdd of each.
    const int col = bn + 64 * wg + n0;
    const bool vec = (N & 1) == 0 && (reinterpret_cast<unsigned long long>(C) & 7ull) == 0;
#pragma unroll
    for (int i = 0; i < BM / 8; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = bm + 8 * i + 2 * t4 + h;
        if (row >= M || col >= N) continue;
        float v0 = alpha * acc[4 * i + h], v1 = alpha * acc[4 * i + 2 + h];
        float* p = C + static_cast<long long>(row) * N + col;
        if constexpr (SPLITK > 1 && !KRED) {
          atomicAdd(p, v0);
          if (col + 1 < N) atomicAdd(p + 1, v1);
        } else if (vec && col + 1 < N) {
          if (beta != 0.0f) {
            const float2 o = *reinterpret_cast<const float2*>(p);
            v0 = fmaf(beta, o.x, v0);
            v1 = fmaf(beta, o.y, v1);
          }
          *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
        } else {
          p[0] = beta != 0.0f ? fmaf(beta, p[0], v0) : v0;
          if (col + 1 < N) p[1] = beta != 0.0f ? fmaf(beta, p[1], v1) : v1;
        }
      }
    }
  }
#endif
}

}  // namespace sgemm_tma_detail

// The entry point: three definitions, MCAST 1 without a cluster, MCAST 2
// with the compile-time cluster (2, 1, 1) and KRED with (1, 1, SPLITK) (the
// last template parameter only selects between them).
#define TF32_TMA_ENTRY(COND, CLUSTER)                                                           \
  template <int BM, int STAGES, int GROUP, int PERSIST, int MCAST = 1, int SPLITK = 1,          \
            int KRED = 0, typename sgemm_detail::EnableIf<(COND), int>::type = 0>              \
  __global__ void __launch_bounds__(384, 1) CLUSTER sgemm_wgmma_tma(                           \
      int M, int N, int K, float alpha, const float* __restrict__ A,                            \
      const float* __restrict__ B, float beta, float* __restrict__ C,                           \
      const __grid_constant__ hopper_detail::TensorMap tma_a,                                   \
      const __grid_constant__ hopper_detail::TensorMap tma_b) {                                 \
    (void)A;                                                                                    \
    (void)B;                                                                                    \
    sgemm_tma_detail::GemmTf32<BM, STAGES, GROUP, PERSIST, MCAST, SPLITK, KRED>(                \
        M, N, K, alpha, beta, C, &tma_a, &tma_b);                                               \
  }
TF32_TMA_ENTRY(MCAST == 1 && KRED == 0, )
TF32_TMA_ENTRY(MCAST == 2 && KRED == 0, __cluster_dims__(2, 1, 1))
TF32_TMA_ENTRY(MCAST == 1 && KRED == 1, __cluster_dims__(1, 1, SPLITK))
#undef TF32_TMA_ENTRY
