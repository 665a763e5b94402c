// BF16 / FP16 GEMM on Hopper's warpgroup tensor cores (sm_90a only), both
// operands copied by TMA, warp-specialized: gemm16_wgmma.
//
//   C(M x N) = alpha * op(A) * op(B) + beta * C,   row-major, ldc = N,
//
// inputs and C of one 16-bit type (DTYPE 2: BF16, 3: FP16, tuner.proto's
// DTYPE_BF16 / DTYPE_F16), stored as unsigned short; fp32 accumulation; each
// C element is alpha * acc + beta * C_old in fp32, rounded to nearest even
// once (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32); DTYPE 4 and 5
// (DTYPE_BF16_F32, DTYPE_F16_F32): inputs as 2 and 3, C float, never
// rounded (half16::Elem). beta == 0 never reads C.
// LAYOUT (tuner.proto Layout, cuBLAS's op(A), op(B)):
//   0 NN: A M x K (lda K),             B K x N (ldb N)
//   1 NT: A M x K (lda K),             B stored N x K (ldb K), op(B) = B^T
//   2 TN: A stored K x M (lda M), op(A) = A^T,   B K x N (ldb N)
//   3 TT: A stored K x M (lda M),      B stored N x K (ldb K)
// Correct for every M, N, K >= 1 (each < 2^31) and any 2-byte-aligned A, B, C.
//
// Compiled after sgemm/sgemm.cuh (its sgemm_detail::RasterTile),
// sgemm/half16.cuh (the 16-bit conversions), sgemm/hopper.cuh (mbarriers,
// TMA, wgmma's fence, commit and wait), sgemm/copy16.cuh (the copies
// without TMA: LoadTileManual, STAGED's IssueStaged and ShiftStaged) and
// sgemm/wgmma16_ops.cuh (the wgmma instruction, descriptors, cluster and
// shared-memory primitives) and sgemm/wgmma16_epilogue.cuh (StoreTile: the
// tile's stores into C), no #include:
// NVRTC with --gpu-architecture=sm_90a
// -std=c++17; with nvcc -arch=sm_90a (its compute_90 PTX gets a __trap()
// body: wgmma and setmaxnreg are sm_90a features). Names: namespace
// gemm16_detail, the kernel gemm16_wgmma (its G16_ macros #undef'd).
//
// ---------------------------------------------------------------- launch rules
// template <int DTYPE, int BM, int BN, int BK, int STAGES, int GROUP, int LAYOUT,
//           int SPLITK = 1, int PERSIST = 0, int CONSUMERS = 2, int STAGED = 0,
//           int MCAST = 1, int EPI = 0, int MCASTN = 1, int ACCS = 1,
//           /* defaulted, never given: */
//           typename sgemm_detail::EnableIf<(the SPLITK and cluster case), int>::type = 0>
// __global__ void gemm16_wgmma(int M, int N, int K, float alpha, const unsigned short* A,
//     const unsigned short* B, float beta, half16::CType<DTYPE>* C,   // DTYPE 4, 5: float*
//     const __grid_constant__ gemm16_detail::TensorMap tma_a,    // parameter 8
//     const __grid_constant__ gemm16_detail::TensorMap tma_b,    // parameter 9
//     const __grid_constant__ gemm16_detail::TensorMap tma_c);   // parameter 10
//
// Parameters and the static_asserts that refuse a combination:
//   DTYPE      2 (BF16), 3 (FP16), 4 or 5 (BF16 or FP16 inputs, an fp32 C)
//   BM         64 * CONSUMERS * MI, MI (m64 wgmmas per consumer warpgroup) 1 or 2:
//              CONSUMERS 2: 128 or 256; CONSUMERS 1: 64 or 128
//   BN         64, 128 or 256, and MI * BN <= 256 (at most 128 fp32 accumulators a thread)
//   BK         64 only (one 128-byte swizzled row of K per m or n)
//   STAGES     >= 2, and STAGES * (BM + BN) * 128 + 1024 + 16 * STAGES <= 227 KB (232448)
//   GROUP      >= 1: output tile-rows per raster group (L2 reuse), as RasterTile
//   LAYOUT     0..3
//   SPLITK     1..8: the CTAs of a cluster (1, 1, SPLITK) (for SPLITK > 1 the kernel
//              carries a compile-time __cluster_dims__(1, 1, SPLITK): launch it plainly,
//              no cluster launch attribute; SPLITK 1 has no cluster at all) each take
//              ceil(ceil(K / 64) / SPLITK) K tiles and reduce in fp32 through distributed
//              shared memory (below)
//   PERSIST    0 or 1 (1: persistent grid; only with SPLITK 1)
//   CONSUMERS  1 or 2 consumer warpgroups (2: setmaxnreg moves registers to them)
//   STAGED     0, 2 or 3 raw buffers for an operand TMA cannot copy (below); needs
//              (BM + BN) % (16 * CONSUMERS) == 0
//   MCAST      1, or 2 (SPLITK 1 and STAGED 0 only): CTAs of a cluster whose tiles are
//              stacked along M; each copies its share of the shared B tile to all of them
//              by TMA multicast, dividing B's traffic from L2 by MCAST (below)
//   MCASTN     1, 2 or 4 (SPLITK 1 and STAGED 0 only; MCAST * MCASTN <= 4): CTAs of a
//              cluster whose tiles lie side by side along N, sharing the A tile likewise.
//              MCAST * MCASTN > 1 makes a compile-time cluster
//              __cluster_dims__(MCAST * MCASTN, 1, 1) (launch it plainly)
//   EPI        0: C stored from registers; 1 or 2 (SPLITK 1 only): where beta is 0 and C
//              is 16-bit (DTYPE 2, 3), through shared memory. 1: the whole C tile;
//              where C suits TMA, TMA stores that drain while the next tile's
//              mainloop runs; elsewhere coalesced row copies. 2: where C suits TMA,
//              64 x 64 boxes in turn through two buffers a consumer warpgroup, each
//              stored by TMA while the next is written (a stage's room for 16 KB a
//              warpgroup); elsewhere from registers as EPI 0 (below)
//   ACCS       1 or 2 accumulator sets a consumer warpgroup (2: the odd K tiles' wgmmas
//              into the second, so that they do not wait on the accumulators of the K
//              tile before; the sets are added before the epilogue; MI * BN <= 128)
// Block:   (128 * (CONSUMERS + 1), 1, 1)   (consumer warpgroups, then the producer)
// Dynamic shared memory: STAGES * (BM + BN) * BK * 2 + E + 1024
//          + 16 * STAGES + STAGED * ((BM + BN) * 144 + 16) + (SPLITK > 1) * ((SPLITK - 1)
//          * ceil(BN / 32 / SPLITK) * 128 * BM + 8) bytes, E = BM * BN * 2 for EPI 1,
//          CONSUMERS * 16384 for EPI 2, else 0 (the stages, EPI's C buffers, 1024
//          of alignment padding, the mbarriers, the raw buffers and theirs, SPLITK's
//          receive buffer and its mbarrier); above 48 KB it needs
//          cudaFuncAttributeMaxDynamicSharedMemorySize (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
// Grid:    T = ceil(ceil(M / BM) / MCAST) * ceil(ceil(N / BN) / MCASTN) cluster tiles
//          (output tiles without a cluster), C = MCAST * MCASTN; PERSIST 0: (T * C, 1,
//          SPLITK); PERSIST 1: (C * min(T, P), 1, 1) with P the clusters of C CTAs the
//          device holds at once (the SM count with C 1; cudaOccupancyMaxActiveClusters).
// Tensor maps (cuTensorMapEncodeTiled, rank 2, data type CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
// for DTYPE 2 / CU_TENSOR_MAP_DATA_TYPE_FLOAT16 for DTYPE 3, element strides {1, 1},
// interleave NONE, swizzle 128B, L2 promotion 256B, OOB fill NONE (zeros)):
//   tma_a, on pointer argument 4 (A):
//     LAYOUT 0, 1 (A K-major):  dims {K, M}, strides {K * 2} bytes, box {64, BM / MCASTN}
//     LAYOUT 2, 3 (A M-major):  dims {M, K}, strides {M * 2} bytes, box {64, 64}
//   tma_b, on pointer argument 5 (B):
//     LAYOUT 1, 3 (B K-major):  dims {K, N}, strides {K * 2} bytes, box {64, BN / MCAST}
//     LAYOUT 0, 2 (B N-major):  dims {N, K}, strides {N * 2} bytes, box {64, 64}
//   tma_c, on pointer argument 7 (C), for EPI (every kernel takes it; EPI 0 ignores it):
//     dims {N, M}, strides {N * 2} bytes, box {64, 64}; an fp32 C (unused): data type
//     FLOAT32, strides {N * 4} bytes, box {32, 64}
//   Where the pointer is not 16-byte aligned or the stride is not a multiple of 16
//   bytes (the pitch not a multiple of 8 elements), the launcher stages A and B
//   (TensorMap.stage: a copy whose rows are padded to 16 bytes, the map over it) for
//   STAGED 0; for STAGED > 0, and for C, it passes 128 zero bytes for that map. The
//   kernel tests the map (MapEncoded): an operand without one it loads itself (below),
//   or with STAGED through raw buffers; C it stores from registers.
// --------------------------------------------------------------------------------
//
// Shared memory: STAGES stages, each the A tile (BM * 128 bytes) then the B
// tile (BN * 128 bytes), every tile on a 1024-byte boundary; then the
// mbarriers full[STAGES], empty[STAGES]. A tile is 128-byte rows in TMA's
// 128-byte swizzle (16-byte unit u of row r at unit u ^ (r % 8)), which is
// wgmma's 128B swizzle mode (PTX ISA 9.7.15.5.1.2):
//  - a K-major operand (A in NN/NT, B in NT/TT): one row of 64 k per m or
//    n, one TMA box {64, BM or BN}; descriptor stride byte offset 1024 (8-row
//    groups), the k16 step 32 bytes along the row (as the TF32 kernels' k8
//    step: 32 bytes either way); m64 block b of A at b * 8192 bytes;
//  - an MN-major operand (A in TN/TT, B in NN/TN): 64-wide chunks of m or n,
//    each 64 rows of k (8192 bytes), one TMA box {64, 64} a chunk; wgmma's
//    transpose immediate set (imm-trans-a / imm-trans-b = 1, .bf16 / .f16
//    only); descriptor leading byte offset 8192 (the next 64 m or n),
//    stride byte offset 1024 (the next 8 k), the k16 step 16 rows = 2048 bytes.
// Warp specialization: the producer warpgroup (registers cut to 40 with
// setmaxnreg when CONSUMERS = 2; the consumers raised to 232) has one
// thread issue a K tile's TMA copies per stage with mbarrier expect_tx once
// the stage's "empty" barrier says the consumers are done with it. Each
// consumer warpgroup owns BM / CONSUMERS rows of the tile: per K tile it
// waits on "full", issues BK / 16 x MI wgmma.mma_async m64nBNk16 (A and B
// from shared memory), commits, waits until one group is pending, and then
// releases the previous K tile's stage: lane 0 of its first warp arrives
// on "empty", once a warpgroup (wgmma.wait_group completes the
// warpgroup's wgmmas, whichever warp waits; as CUTLASS's
// PipelineTmaAsync). One arrival a warpgroup in place of one a warp
// measured 1.01x over the probe's MCAST set on an H100
// (bench/RESULTS.md gemm16-release).
// Without TMA for an operand (see the maps above) all 128 producer threads
// copy its tile into the same swizzled layout: a unit of 8 elements wholly in
// range and 4-byte aligned by cp.async (16, 8 or 4 bytes at a time), other
// units through registers with bounds checks (zeros outside), then
// cp.async.mbarrier.arrive.noinc and an arrive after fence.proxy.async ("full"
// then expects 256 arrivals and the TMA bytes of the other operand, if any;
// the consumers run fence.proxy.async after waiting).
// STAGED (an operand without TMA): the producer copies each 64-element row
// of that operand's tile (a segment: 128 bytes at any 2-byte offset) as its
// 16-byte-aligned span, at most 144 bytes, into a raw slot by cp.async 16
// bytes at a time, STAGED - 1 K tiles ahead ("raw_full" expects its 128
// threads' cp.async arrivals); the consumers, before a K tile's wgmmas and
// while the tensor cores still run the one before, shift each slot into the
// swizzled stage (words from the span's offset, a funnel shift by 0 or 16
// bits, zeros outside the operand), release the raw buffer ("raw_empty",
// a lane a warp), fence the async proxy and meet at a named barrier; "full"
// then carries only the other operand's TMA bytes (thread 0's arrival). It
// measured 2x the manual copy at 4096x4096x4097 (A's pitch odd) on an H100
// (bench/RESULTS.md gemm16-staged).
// PERSIST: each CTA takes tiles blockIdx.x, + gridDim.x, ...; the producer
// runs ahead into the next tile's K tiles while the consumers store C.
// With two consumer warpgroups (no cluster, STAGED 0), a last round of tiles
// that would leave half of the CTAs or more idle goes in halves of WM rows,
// one a CTA, each computed by that CTA's first consumer warpgroup: 1.03x at
// 4096x11008x4096 and 1.06x at 5120^3 with 128x256
// (bench/RESULTS.md gemm16-tail).
// MCAST and MCASTN: rank r = rm + MCAST * rn of a cluster takes the output
// tile (MCAST tm + rm, MCASTN tn + rn). The CTAs of a cluster column (the
// same rn) read the same B tile, those of a cluster row (the same rm) the
// same A tile. Rank r's producer copies B's boxes j = rm (mod MCAST) into
// every CTA of its column and A's boxes j = rn (mod MCASTN) into every CTA
// of its row (TMA multicast, completing on each CTA's "full", which
// expects the whole stage's bytes); with MCAST or MCASTN 1 that operand is
// its own. A stage is free once the consumers of every CTA in its row and
// column are done with it: each consumer warpgroup's first warp arrives on
// those CTAs' "empty" (lane l on rank l). A 2 x 2 cluster of 128x128 tiles
// ran 1000^3 at 0.93x cuBLAS, against 0.90x for the fastest form without
// it (bf16, H100, bench/RESULTS.md gemm16-cluster2d).
// Cluster barriers after the mbarriers'
// initialization (arrived at there, waited for once each warpgroup has set
// its registers; by thread 0's warp at once, for its early copies below)
// keep every remote arrival and multicast after the peer's mbarriers
// exist; before exit, the producer's tail waits on every stage's
// "empty" once more (as CUTLASS's producer_tail), so that the peer's
// arrivals are in, and the consumers' waits on "full" cover the peer's
// multicast bytes: no cluster barrier at the end. Where the tile rows
// (columns) are not a multiple of MCAST (MCASTN), the last cluster's ranks
// past M (N) compute on TMA's zero fill and store nothing.
// SPLITK: rank r of the cluster accumulates its K range and stores the
// column-block groups g (4 x 8 columns) with g % SPLITK == r. It pushes its
// fp32 partial sums of every other group into the owner's receive buffer
// by st.async through distributed shared memory (completing on the owner's
// mbarrier), waits for the bytes pushed to it, adds them and stores its
// columns of C. One cluster barrier, split: arrived at after the
// mbarriers' initialization, waited for before the first push. No atomics,
// no workspace, no CTA reads a peer's shared memory. At 1024^3, 128x128
// SPLITK 2 took 14.2 us pulling the peers' partial sums between two full
// cluster barriers, 12.0 us pushing them (bf16, H100,
// bench/RESULTS.md gemm16-splitk-push).
// Epilogue: wgmma16_epilogue.cuh (StoreTile).

namespace gemm16_detail {

// One K tile of an operand's tile of R rows (m or n) from row r0 and
// column k0 into the stage at `dst` (R * 128 bytes), completing on `bar`:
// K-major one box of R / SHARE rows a rank (the map's box), MN-major the
// 64-row chunks, each 8 KB. With `multicast`, the rank `rank` of the SHARE
// CTAs that share the tile copies the boxes j = rank (mod SHARE) into all
// of them (`mask`); otherwise this CTA copies every box for itself.
template <bool KMAJOR, int R, int SHARE>
__device__ __forceinline__ void LoadOperand(unsigned dst, const TensorMap* map, int r0, int k0,
                                            unsigned bar, bool multicast, int rank,
                                            unsigned short mask) {
  constexpr int BOXES = KMAJOR ? SHARE : R / 64;
#pragma unroll
  for (int j = 0; j < BOXES; ++j) {
    const unsigned d = dst + j * (R * 128 / BOXES);
    const int x = KMAJOR ? k0 : r0 + 64 * j, y = KMAJOR ? r0 + j * (R / SHARE) : k0;
    if (!multicast) {
      TmaLoad2d(d, map, x, y, bar);
    } else if (j % SHARE == rank) {
      TmaLoad2dMulticast(d, map, x, y, bar, mask);
    }
  }
}

// The kernel's body (gemm16_wgmma below; tma_a, tma_b: its __grid_constant__
// parameters' addresses).
template <int DTYPE, int BM, int BN, int BK, int STAGES, int GROUP, int LAYOUT, int SPLITK,
          int PERSIST, int CONSUMERS, int STAGED, int MCAST, int EPI, int MCASTN, int ACCS,
          int EPILOGUE>
__device__ __forceinline__ void Gemm16(int M, int N, int K, float alpha,
                                       const unsigned short* __restrict__ A,
                                       const unsigned short* __restrict__ B, float beta,
                                       half16::CType<DTYPE>* __restrict__ C,
                                       const half16::CType<DTYPE>* __restrict__ bias,
                                       const TensorMap* tma_a, const TensorMap* tma_b,
                                       const TensorMap* tma_c) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // wgmma and setmaxnreg exist on sm_90a alone (a compute_90 PTX build gets this)
#else
  static_assert(DTYPE >= 2 && DTYPE <= 5, "DTYPE: 2 (BF16), 3 (FP16), 4, 5 (their fp32-C forms)");
  constexpr int IN = half16::Elem<DTYPE>::kIn;  // A's and B's type, 2 or 3
  static_assert(BK == 64, "BK 64: one 128-byte swizzled row of K (K-major) per m or n");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "CONSUMERS 1 or 2");
  static_assert(LAYOUT >= 0 && LAYOUT <= 3, "LAYOUT 0..3");
  constexpr int WM = BM / CONSUMERS;  // rows of C per consumer warpgroup
  static_assert(BM % CONSUMERS == 0 && WM % 64 == 0 && WM <= 128, "BM / CONSUMERS: 64 or 128");
  constexpr int MI = WM / 64;  // m64 wgmmas per k16 step
  static_assert(BN == 64 || BN == 128 || BN == 256, "BN 64, 128 or 256");
  static_assert(MI * BN <= 256, "at most 128 fp32 accumulators a thread");
  static_assert(ACCS == 1 || (ACCS == 2 && MI * BN <= 128), "ACCS 1, or 2 with MI * BN <= 128");
  static_assert(SPLITK >= 1 && SPLITK <= 8, "SPLITK 1..8 (a cluster along K)");
  static_assert(STAGES >= 2, "STAGES >= 2");
  static_assert(PERSIST == 0 || PERSIST == 1, "PERSIST 0 or 1");
  static_assert(PERSIST == 0 || SPLITK == 1, "a persistent grid has no split-K");
  static_assert(STAGED == 0 || STAGED == 2 || STAGED == 3, "STAGED 0, 2 or 3 raw buffers");
  static_assert((MCAST == 1 || MCAST == 2) && (MCASTN == 1 || MCASTN == 2 || MCASTN == 4) &&
                    MCAST * MCASTN <= 4,
                "MCAST 1 or 2, MCASTN 1, 2 or 4, a cluster of at most 4");
  // The cluster's CTAs: MCAST along M (sharing B) times MCASTN along N
  // (sharing A).
  constexpr int MC = MCAST * MCASTN;
  static_assert(MC == 1 || (SPLITK == 1 && STAGED == 0), "a multicast cluster without split-K and STAGED");
  static_assert(EPI == 0 || ((EPI == 1 || EPI == 2) && SPLITK == 1),
                "EPI 0, or 1 or 2 without split-K");
  constexpr bool AK = (LAYOUT & 2) == 0;  // A K-major (NN, NT) in shared memory, else M-major
  constexpr bool BKM = (LAYOUT & 1) != 0; // B K-major (NT, TT), else N-major
  constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE = A_BYTES + B_BYTES;
  constexpr int RAW = (BM + BN) * kRawSlot;  // one raw buffer of STAGED
  // EPI 1's C tile; EPI 2's two 64 x 64 boxes a consumer warpgroup.
  constexpr int C_BYTES = EPI == 1 ? BM * BN * 2 : EPI == 2 ? CONSUMERS * 2 * 8192 : 0;
  constexpr int CT = CONSUMERS * 128;  // consumer threads
  // SPLITK: a rank's column-block groups (32 columns) are g = rank (mod
  // SPLITK) of the BN / 32; NL float4 of a consumer thread's per m64 block
  // (4 per group); its receive buffer holds the SPLITK - 1 peers' partial
  // sums of them.
  constexpr int NL = CeilDiv(BN / 32, SPLITK) * 4;
  constexpr int RECV = SPLITK > 1 ? (SPLITK - 1) * MI * NL * CT * 16 : 0;
  static_assert(STAGES * STAGE + C_BYTES + STAGED * RAW + RECV + 1024 + 16 * STAGES +
                        16 * STAGED + 8 * (SPLITK > 1) <= 227 * 1024,
                "shared memory: 227 KB");

  extern __shared__ __align__(1024) unsigned char gemm16_smem[];
  const unsigned raw = SmemAddr(gemm16_smem);
  const unsigned base = (raw + 1023u) & ~1023u;  // the swizzle's period
  const unsigned cbuf = base + STAGES * STAGE;  // EPI's C tile
  const unsigned raw0 = cbuf + C_BYTES;  // STAGED's raw buffers
  const unsigned recv = raw0 + STAGED * RAW;  // SPLITK's receive buffer
  const unsigned full = recv + RECV, empty = full + 8 * STAGES;
  const unsigned raw_full = empty + 8 * STAGES, raw_empty = raw_full + 8 * STAGED;
  const unsigned recv_bar = raw_empty + 8 * STAGED;  // SPLITK: the peers' partial sums arrived

  const int tiles_m = CeilDiv(M, BM), tiles_n = CeilDiv(N, BN);
  // Cluster tiles: MCAST x MCASTN output tiles (tile rows MCAST * tm + rm,
  // columns MCASTN * tn + rn for the rank rm + MCAST * rn), rastered in
  // groups of GROUP / MCAST of their rows. This block's: blockIdx.x / MC,
  // and with PERSIST every (gridDim.x / MC)-th after it; the K tiles of
  // stage use are counted across them.
  const int tiles_mc = CeilDiv(tiles_m, MCAST), tiles_nc = CeilDiv(tiles_n, MCASTN);
  const int tiles = tiles_mc * tiles_nc;
  const int first = static_cast<int>(blockIdx.x) / MC;
  // The tail in halves (PERSIST, two consumer warpgroups, no cluster,
  // STAGED 0): where the last round of tiles would leave at least half
  // of the CTAs idle (rest = tiles mod gridDim.x, 0 < 2 rest <= gridDim.x),
  // its rest tiles become 2 rest units of WM rows each, one a CTA, computed
  // by its first consumer warpgroup alone (the second keeps step through
  // the stages and stores nothing): that round then takes about half a
  // tile's time instead of a whole one's. Units below `whole` are whole
  // tiles.
  int whole = tiles, units = tiles;
  if constexpr (PERSIST == 1 && CONSUMERS == 2 && MC == 1 && SPLITK == 1 && STAGED == 0) {
    const int rest = tiles % static_cast<int>(gridDim.x);
    if (rest > 0 && 2 * rest <= static_cast<int>(gridDim.x)) {
      whole = tiles - rest;
      units = tiles + rest;
    }
  }
  const int tile_step = PERSIST ? static_cast<int>(gridDim.x) / MC : units;
  const unsigned crank = MC > 1 ? ClusterRank() : 0u;
  const int rm = static_cast<int>(crank) % MCAST, rn = static_cast<int>(crank) / MCAST;
  // Unit u's first row bm and column bn (a rank's rows may start at or past
  // M, its columns at or past N: it computes zeros and stores none); it returns -1 for a whole
  // (cluster) tile, else which half of a tail tile u is: 1 starts WM rows
  // on, and the A tile is then copied from there (its rows past the half
  // unused).
  auto tile_at = [&](int u, int& bm, int& bn) -> int {
    int half = -1;
    if (u >= whole) {
      half = (u - whole) % 2;
      u = whole + (u - whole) / 2;
    }
    int tm, tn;
    sgemm_detail::RasterTile<(GROUP + MCAST - 1) / MCAST>(u, tiles_mc, tiles_nc, tm, tn);
    bm = (tm * MCAST + rm) * BM + (half == 1 ? WM : 0);
    bn = (tn * MCASTN + rn) * BN;
    return half;
  };
  const int nk_all = CeilDiv(K, BK);
  int kt0 = 0, nk = nk_all;
  unsigned rank = 0;
  if constexpr (SPLITK > 1) {
    rank = ClusterRank();
    const int per = CeilDiv(nk_all, SPLITK);
    kt0 = min(nk_all, static_cast<int>(rank) * per);
    nk = min(nk_all, kt0 + per) - kt0;
  }
  const long long lda = AK ? K : M, ldb = BKM ? K : N;
  // An operand goes by TMA where the launcher encoded its map: over the
  // operand itself (16-byte-aligned base, pitch a multiple of 8 elements) or
  // over its staged copy (TensorMap.stage); else the map is zeros and unused.
  const bool tma_ok_a = MapEncoded(tma_a);
  const bool tma_ok_b = MapEncoded(tma_b);
  const bool both = tma_ok_a && tma_ok_b;
  // Multicast: the MCAST CTAs of a tile column (the same rn) share the B
  // tile, rank rm copying B's boxes j = rm (mod MCAST) into each of them;
  // the MCASTN CTAs of a tile row (the same rm) share the A tile, rank rn
  // copying A's boxes j = rn (mod MCASTN). A stage is then free once the
  // consumers of every CTA that shares a tile with this one are done with
  // it (this CTA's row and column of the cluster). Only where both
  // operands go by TMA; otherwise each CTA copies its own.
  const bool mcast = MC > 1 && both;
  const bool mcast_a = MCASTN > 1 && both, mcast_b = MCAST > 1 && both;
  unsigned short mask_a = 0;  // the ranks of this CTA's tile row
#pragma unroll
  for (int n = 0; n < MCASTN; ++n) mask_a |= static_cast<unsigned short>(1u << (rm + MCAST * n));
  const auto mask_b = static_cast<unsigned short>(((1u << MCAST) - 1) << (MCAST * rn));
  auto load_a = [&](unsigned sa, int bm, int k0, unsigned bar) {
    LoadOperand<AK, BM, MCASTN>(sa, tma_a, bm, k0, bar, mcast_a, rn, mask_a);
  };
  auto load_b = [&](unsigned sb, int bn, int k0, unsigned bar) {
    LoadOperand<BKM, BN, MCAST>(sb, tma_b, bn, k0, bar, mcast_b, rm, mask_b);
  };
  // K tile t (from kt0) of the tile at rows bm, columns bn into stage s, both
  // operands by TMA; with multicast, "full" expects the peers' boxes too.
  auto load_stage = [&](int s, int bm, int bn, int t) {
    const unsigned sa = base + s * STAGE, bar = full + 8 * s;
    const int k0 = (kt0 + t) * BK;
    MbarArriveTx(bar, STAGE);
    load_a(sa, bm, k0, bar);
    load_b(sa + A_BYTES, bn, k0, bar);
  };

  // wg through a shuffle: the compiler then knows it is warp-uniform (as
  // CUTLASS's canonical_warp_group_idx), and keeps what derives from it,
  // such as the wgmma descriptors, in uniform registers.
  const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid / 128, 0);
  // The first K tiles' copies issued by thread 0 right after the mbarriers'
  // initialization (both operands by TMA, STAGED 0): the first `early` K
  // tiles of this CTA's first tile, which the producer then skips. The
  // producer's code lies past the consumers' (SASS), so its first copy
  // otherwise waits for the barrier after the initialization, a branch into
  // code not yet in the instruction cache (after an L2 flush, a miss to
  // DRAM) and its own setup. Configs without a cluster gained 3-5.5% at
  // 1024^3 and 2% at 2048^3 (H100,
  // bench/RESULTS.md gemm16-early-copies). In a multicast
  // cluster thread 0's warp first waits for the cluster barrier (the peers'
  // mbarriers), and then skips the consumers' wait.
  constexpr bool kEarly = STAGED == 0;
  const int early = kEarly && both && first < units ? min(STAGES, nk) : 0;
  auto issue_early = [&]() {
    if (early == 0) return;
    FenceProxyAsync();  // the initializations before TMA's complete_tx on them
    int bm, bn;
    tile_at(first, bm, bn);
#pragma unroll 1
    for (int t = 0; t < early; ++t) load_stage(t, bm, bn, t);
  };
  if (tid == 0) {
    // The maps into the TMA unit's cache first, C's too, so that their
    // fetch (a miss to DRAM after an L2 flush) overlaps the setup rather
    // than delaying the first copy and the last store. A map of zeros (an
    // operand without TMA) is prefetched harmlessly. 1000^3 and 1024^3
    // +0.5-2.9%, 2048^3 -0.8%, geomean 1.004 over the probe's ACC set
    // (bench/RESULTS.md gemm16-map-prefetch).
    PrefetchMap(tma_a);
    PrefetchMap(tma_b);
    if constexpr (EPI >= 1) PrefetchMap(tma_c);
    for (int s = 0; s < STAGES; ++s) {
      // Without TMA: each producer thread twice (cp.async's and its own
      // arrival); with STAGED the producer's thread 0 (the other
      // operand's TMA bytes, if any).
      MbarInit(full + 8 * s, both || STAGED > 0 ? 1 : 256);
      // The consumer warpgroups of every CTA in this one's cluster row and column.
      MbarInit(empty + 8 * s, CONSUMERS * (mcast ? MCAST + MCASTN - 1 : 1));
    }
    for (int b = 0; b < STAGED; ++b) {
      MbarInit(raw_full + 8 * b, 128);          // the producer threads' cp.asyncs
      MbarInit(raw_empty + 8 * b, CONSUMERS * 4);  // each consumer warp's shift
    }
    if constexpr (SPLITK > 1) {
      // This thread's arrival, and the bytes of the peers' st.async: the
      // owned groups' float4 of every consumer thread of SPLITK - 1 peers.
      const int owned = static_cast<int>(rank) < BN / 32
                            ? CeilDiv(BN / 32 - static_cast<int>(rank), SPLITK) : 0;
      MbarInit(recv_bar, 1);
      MbarArriveTx(recv_bar, static_cast<unsigned>((SPLITK - 1) * MI * owned * 4 * CT * 16));
    }
    FenceMbarInit();
    if constexpr (MC == 1) issue_early();
  }
  if constexpr (MC > 1) {
    // The peers' mbarriers before any arrival or multicast: arrived at
    // here, waited for by each warpgroup once its registers are set (thread
    // 0's warp at once, for its early copies).
    ClusterArriveRelaxed();
    if constexpr (kEarly) {
      if (tid < 32) {
        ClusterWait();
        if (tid == 0) issue_early();
      }
    }
  } else {
    __syncthreads();
    // SPLITK: the recv_bar initialized before any peer's st.async (the
    // consumers wait after their mainloop).
    if constexpr (SPLITK > 1) ClusterArriveRelaxed();
  }

  if (wg == CONSUMERS) {
    // Producer warpgroup.
    if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    const int ptid = tid - CT;
    if constexpr (MC > 1) ClusterWait();
    int it = 0;
    if (both) {
      if (ptid == 0) {
        // Stage s of K tile it, and the parity of the "empty" phase to wait
        // for (that of K tile it - STAGES), advanced without division.
        int s = 0;
        unsigned phase = 1;
#pragma unroll 1
        for (int u = first; u < units; u += tile_step) {
          int bm, bn;
          tile_at(u, bm, bn);
#pragma unroll 1
          for (int t = 0; t < nk; ++t, ++it) {
            if (it < early) {  // thread 0's copy
              NextStage<STAGES>(s, phase);
              continue;
            }
            if (it >= STAGES) MbarWait(empty + 8 * s, phase);
            load_stage(s, bm, bn, t);
            NextStage<STAGES>(s, phase);
          }
        }
        if (mcast) {
          // The producer's tail: every stage's last releases, the peers'
          // remote arrivals among them, are in before this CTA may exit.
#pragma unroll 1
          for (int k = 0; k < STAGES; ++k, ++it) {
            if (it >= STAGES) MbarWait(empty + 8 * s, phase);
            NextStage<STAGES>(s, phase);
          }
        }
      }
      __syncwarp();
    } else {
      // One operand by TMA (thread 0: the bytes on "full", then its copies).
      auto tma_one = [&](unsigned sa, unsigned sb, unsigned bar, int bm, int bn, int k0) {
        MbarExpectTx(bar, tma_ok_a ? A_BYTES : B_BYTES);
        if (tma_ok_a) {
          load_a(sa, bm, k0, bar);
        } else {
          load_b(sb, bn, k0, bar);
        }
      };
      if constexpr (STAGED > 0) {
        // K tile i of this block's tiles (its tile i / nk): the raw copies
        // into buffer i % STAGED once the consumers have shifted the K
        // tile STAGED before out of it, then (thread 0) the stage's TMA
        // operand, if any, once the stage is free.
        const int n_it = (first < units ? CeilDiv(units - first, tile_step) : 0) * nk;
#pragma unroll 1
        for (int i = 0; i < n_it; ++i) {
          int bm, bn;
          tile_at(first + (i / nk) * tile_step, bm, bn);
          const int k0 = (kt0 + i % nk) * BK;
          const int b = i % STAGED;
          if (i >= STAGED) MbarWait(raw_empty + 8 * b, ((i / STAGED) - 1) & 1);
          IssueStaged<AK, BKM, BM, BN>(raw0 + b * RAW, raw_full + 8 * b, A, lda, !tma_ok_a, B, ldb,
                                       !tma_ok_b, bm, bn, M, N, k0, K, ptid);
          if (ptid == 0) {
            const int s = i % STAGES;
            if (i >= STAGES) MbarWait(empty + 8 * s, ((i / STAGES) - 1) & 1);
            const unsigned sa = base + s * STAGE, sb = sa + A_BYTES, bar = full + 8 * s;
            if (tma_ok_a || tma_ok_b) {
              tma_one(sa, sb, bar, bm, bn, k0);
            }
            MbarArrive(bar);
          }
        }
      } else {
#pragma unroll 1
        for (int u = first; u < units; u += tile_step) {
          int bm, bn;
          tile_at(u, bm, bn);
#pragma unroll 1
          for (int t = 0; t < nk; ++t, ++it) {
            const int s = it % STAGES;
            if (it >= STAGES) MbarWait(empty + 8 * s, ((it / STAGES) - 1) & 1);
            const unsigned sa = base + s * STAGE, sb = sa + A_BYTES, bar = full + 8 * s;
            const int k0 = (kt0 + t) * BK;
            if (ptid == 0 && (tma_ok_a || tma_ok_b)) tma_one(sa, sb, bar, bm, bn, k0);
            if (!tma_ok_a) LoadTileManual<AK, BM>(sa, A, lda, bm, M, k0, K, ptid);
            if (!tma_ok_b) LoadTileManual<BKM, BN>(sb, B, ldb, bn, N, k0, K, ptid);
            CpAsyncArrive(bar);  // its cp.asyncs
            FenceProxyAsync();   // its st.shared
            MbarArrive(bar);
          }
        }
      }
    }
    return;
  }

  // Consumer warpgroups: wg's rows wg * WM .. + WM of the tile.
  if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  if constexpr (MC > 1) {
    if (!kEarly || tid >= 32) ClusterWait();  // thread 0's warp waited before its early copies
  }
  const int lane = tid % 32;
  const bool warp0 = tid % 128 < 32;
  // Stage s released by this warpgroup, once its wgmmas that read it are
  // done (wgmma.wait_group: the warpgroup's groups, whichever warp waits),
  // by its first warp: on this CTA's "empty", or in a multicast cluster on
  // that of every CTA in its cluster row and column (lane r on rank r's).
  auto release = [&](int s) {
    if (!warp0) return;
    if (!mcast) {
      if (lane == 0) MbarArrive(empty + 8 * s);
    } else if (lane < MC && (lane % MCAST == rm || lane / MCAST == rn)) {
      MbarArriveCluster(empty + 8 * s, static_cast<unsigned>(lane));
    }
  };
  // The wgmma descriptors of stage 0 (k16 step 0). Desc's address field is
  // (addr & 0x3FFFF) >> 4 and no shared address reaches 0x40000, so the
  // descriptor of an address 16 * d bytes further is the descriptor plus d:
  // a stage is STAGE / 16 on, a k16 step 2 (32 bytes, K-major) or 128 (2048
  // bytes, MN-major) on. B: K-major rows of 128 bytes (8-row groups 1024
  // bytes apart); N-major 64-column chunks of BK rows (LBO BK * 128 bytes
  // apart), 8-k-row groups 1024 bytes apart. A likewise with M for N, the
  // m64 block m64 of the tile 64 rows (K-major) or one chunk (M-major) on.
  const unsigned long long desc_b0 =
      BKM ? Desc(base + A_BYTES, 16, 1024) : Desc(base + A_BYTES, BK * 128, 1024);
  constexpr unsigned long long kStepB = BKM ? 2 : 128, kStepA = AK ? 2 : 128;
  unsigned long long desc_a0[MI];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
    const unsigned m64 = static_cast<unsigned>(wg * MI + mi);  // the m64 block of the tile
    desc_a0[mi] = AK ? Desc(base + m64 * 64 * 128, 16, 1024)
                     : Desc(base + m64 * BK * 128, BK * 128, 1024);
  }
  // The stage of the K tile at hand and the parity of its "full" phase,
  // advanced by one a K tile (NextStage); prev: the stage before; it: the
  // K tiles computed, which STAGED's raw buffers follow (a tail half, which
  // PassStages skips, has STAGED 0).
  int it = 0, stage = 0, prev = 0;
  unsigned phase = 0;
  unsigned ebox = 0;  // EPI 2: the boxes this warpgroup has stored, across its tiles
#pragma unroll 1
  for (int u = first; u < units; u += tile_step) {
    int bm, bn;
    if (tile_at(u, bm, bn) >= 0 && wg == 1) {
      // A tail half: the first warpgroup's rows. This one passes over
      // the stages and stores nothing.
      PassStages<STAGES>(full, nk, stage, phase, release);
      continue;
    }
    float acc[MI][BN / 2];
    float acc2[MI][BN / 2];  // ACCS 2: the odd K tiles' sums (unused, and dropped, with ACCS 1)
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
      for (int e = 0; e < BN / 2; ++e) acc[mi][e] = acc2[mi][e] = 0.0f;
    }
    // K tile t into the accumulators d.
    auto ktile = [&](int t, float(&d)[MI][BN / 2]) {
      const int s = stage;
      const unsigned sa = base + s * STAGE, sb = sa + A_BYTES;
      if constexpr (STAGED > 0) {
        if (!both) {
          // The staged operands' shift from raw buffer it % STAGED into the
          // stage (free: the wgmmas of K tile it - 2 are done), while the
          // tensor cores run K tile it - 1.
          const int b = it % STAGED;
          MbarWait(raw_full + 8 * b, (it / STAGED) & 1);
          ShiftStaged<AK, BKM, BM, BN, CT>(gemm16_smem, raw0 + b * RAW - raw, sa - raw, sb - raw, A,
                                           lda, !tma_ok_a, B, ldb, !tma_ok_b, bm, bn, M, N,
                                           (kt0 + t) * BK, K, tid);
          __syncwarp();
          if (lane == 0) MbarArrive(raw_empty + 8 * b);
        }
      }
      MbarWait(full + 8 * s, phase);
      if (!both) {
        // cp.async's and the shift's writes (generic proxy) before wgmma's
        // reads (async proxy): each thread's, then all of them.
        FenceProxyAsync();
        if constexpr (STAGED > 0) NamedSync(3, CT);
      }
      WgmmaFence();
      const unsigned long long stage_d = static_cast<unsigned long long>(s) * (STAGE / 16);
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        const unsigned long long db = desc_b0 + stage_d + kk * kStepB;
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          Wgmma<BN, IN, AK ? 0 : 1, BKM ? 0 : 1>::Run(d[mi], desc_a0[mi] + stage_d + kk * kStepA,
                                                     db, 1);
        }
      }
      WgmmaCommit();
      WgmmaWait<1>();  // the wgmmas of the K tile before are done: its stage is free
      if (t > 0) release(prev);
      prev = s;
      NextStage<STAGES>(stage, phase);
      ++it;
    };
    // ACCS 2: odd K tiles into acc2, so that a K tile's wgmmas do not wait
    // on the accumulators of the one before.
#pragma unroll 1
    for (int t = 0; t < nk; t += ACCS) {
      ktile(t, acc);
      if constexpr (ACCS == 2) {
        if (t + 1 < nk) ktile(t + 1, acc2);
      }
    }
    WgmmaWait<0>();
    if (nk > 0) release(prev);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      Pin(acc[mi]);
      if constexpr (ACCS == 2) {
        Pin(acc2[mi]);
#pragma unroll
        for (int e = 0; e < BN / 2; ++e) acc[mi][e] += acc2[mi][e];
      }
    }

    if constexpr (SPLITK > 1) {
      // The cluster's CTAs hold partial sums of the same tile over K ranges.
      // Rank r stores the column-block groups g = r (mod SPLITK). Each rank
      // sends its partial sums of every other group to that group's rank by
      // st.async into the receiver's buffer (slot (sender - receiver) mod
      // SPLITK - 1; float4 ((slot * MI + mi) * NL + local) * CT + ctid),
      // completing on the receiver's recv_bar; then waits for its own and
      // adds them. No CTA reads a peer's shared memory and none waits for a
      // peer to finish, only for the bytes sent to it; a CTA exits only
      // after every byte sent to it has arrived.
      const int ctid = tid;  // 0 .. CT - 1
      ClusterWait();  // every peer's recv_bar initialized
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
          const int owner = (i / 4) % SPLITK;
          if (owner == static_cast<int>(rank)) continue;
          const int slot = (static_cast<int>(rank) - owner + SPLITK) % SPLITK - 1;
          const int local = (i / 4 / SPLITK) * 4 + i % 4;
          StAsyncPeer4(recv + (((slot * MI + mi) * NL + local) * CT + ctid) * 16, recv_bar,
                       static_cast<unsigned>(owner), acc[mi][4 * i], acc[mi][4 * i + 1],
                       acc[mi][4 * i + 2], acc[mi][4 * i + 3]);
        }
      }
      MbarWait(recv_bar, 0);
#pragma unroll 1
      for (int slot = 0; slot < SPLITK - 1; ++slot) {
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
          for (int i = 0; i < BN / 8; ++i) {
            if ((i / 4) % SPLITK != static_cast<int>(rank)) continue;
            const int local = (i / 4 / SPLITK) * 4 + i % 4;
            const float4 v = LdShared4(recv + (((slot * MI + mi) * NL + local) * CT + ctid) * 16);
            acc[mi][4 * i] += v.x;
            acc[mi][4 * i + 1] += v.y;
            acc[mi][4 * i + 2] += v.z;
            acc[mi][4 * i + 3] += v.w;
          }
        }
      }
    }

    StoreTile<DTYPE, BM, BN, CONSUMERS, SPLITK, EPI, EPILOGUE>(acc, M, N, alpha, beta, C, bias, tma_c,
                                                               cbuf, wg, tid, bm, bn, rank, ebox);
  }
  // EPI: the last stores' reads of shared memory done before it goes.
  // Their writes to C need no wait: they are visible when the kernel ends,
  // and waiting for them (wait_group without .read, CCTL.IVALL) took 4-5%
  // of the warp stall samples at 1000^3 (bf16, H100:
  // bench/RESULTS.md gemm16-start-barrier).
  if constexpr (EPI >= 1) {
    if (tid % 128 == 0) BulkWait0<true>();
  }
#endif
}

}  // namespace gemm16_detail

// The entry point (see the launch rules at the top). Three definitions (the
// last template parameter only selects between them): SPLITK > 1 carries the
// compile-time cluster (1, 1, SPLITK), MCAST * MCASTN > 1 the cluster
// (MCAST * MCASTN, 1, 1); neither, none (a one-CTA cluster attribute measured up to 20% slower with
// PERSIST).
#define G16_ENTRY(COND, CLUSTER)                                                                    \
  template <int DTYPE, int BM, int BN, int BK, int STAGES, int GROUP, int LAYOUT, int SPLITK = 1,   \
            int PERSIST = 0, int CONSUMERS = 2, int STAGED = 0, int MCAST = 1, int EPI = 0,        \
            int MCASTN = 1, int ACCS = 1,                                                          \
            typename sgemm_detail::EnableIf<(COND), int>::type = 0>                                \
  __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) CLUSTER gemm16_wgmma(                \
      int M, int N, int K, float alpha, const unsigned short* __restrict__ A,                       \
      const unsigned short* __restrict__ B, float beta, half16::CType<DTYPE>* __restrict__ C,       \
      const __grid_constant__ gemm16_detail::TensorMap tma_a,                                      \
      const __grid_constant__ gemm16_detail::TensorMap tma_b,                                      \
      const __grid_constant__ gemm16_detail::TensorMap tma_c) {                                    \
    gemm16_detail::Gemm16<DTYPE, BM, BN, BK, STAGES, GROUP, LAYOUT, SPLITK, PERSIST, CONSUMERS,    \
                          STAGED, MCAST, EPI, MCASTN, ACCS, 0>(M, N, K, alpha, A, B, beta, C,      \
                                                             nullptr, &tma_a, &tma_b, &tma_c);     \
  }
G16_ENTRY(SPLITK == 1 && MCAST * MCASTN == 1, )
G16_ENTRY(SPLITK > 1, __cluster_dims__(1, 1, SPLITK))
G16_ENTRY(SPLITK == 1 && MCAST * MCASTN > 1, __cluster_dims__(MCAST * MCASTN, 1, 1))
#undef G16_ENTRY

// The fused entries (EPILOGUE 1..4, half16::Fuse): the bias after C, the
// tensor maps parameters 9, 10 and 11.
#define G16_FUSED_ENTRY(COND, CLUSTER)                                                              \
  template <int EPILOGUE, int DTYPE, int BM, int BN, int BK, int STAGES, int GROUP, int LAYOUT,     \
            int SPLITK = 1, int PERSIST = 0, int CONSUMERS = 2, int STAGED = 0, int MCAST = 1,     \
            int EPI = 0, int MCASTN = 1, int ACCS = 1,                                             \
            typename sgemm_detail::EnableIf<(COND), int>::type = 0>                                \
  __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) CLUSTER gemm16_wgmma_fused(          \
      int M, int N, int K, float alpha, const unsigned short* __restrict__ A,                       \
      const unsigned short* __restrict__ B, float beta, half16::CType<DTYPE>* __restrict__ C,       \
      const half16::CType<DTYPE>* __restrict__ bias,                                               \
      const __grid_constant__ gemm16_detail::TensorMap tma_a,                                      \
      const __grid_constant__ gemm16_detail::TensorMap tma_b,                                      \
      const __grid_constant__ gemm16_detail::TensorMap tma_c) {                                    \
    gemm16_detail::Gemm16<DTYPE, BM, BN, BK, STAGES, GROUP, LAYOUT, SPLITK, PERSIST, CONSUMERS,    \
                          STAGED, MCAST, EPI, MCASTN, ACCS, EPILOGUE>(                             \
        M, N, K, alpha, A, B, beta, C, bias, &tma_a, &tma_b, &tma_c);                              \
  }
G16_FUSED_ENTRY(SPLITK == 1 && MCAST * MCASTN == 1, )
G16_FUSED_ENTRY(SPLITK > 1, __cluster_dims__(1, 1, SPLITK))
G16_FUSED_ENTRY(SPLITK == 1 && MCAST * MCASTN > 1, __cluster_dims__(MCAST * MCASTN, 1, 1))
#undef G16_FUSED_ENTRY
