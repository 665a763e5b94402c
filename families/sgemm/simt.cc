// KIND 0-3, the SIMT kinds (kernels_src/sgemm/sgemm.cuh and warp.cuh):
//   KIND 0  sgemm_naive<BM,BN>       one thread per output, threadIdx.x along rows
//   KIND 1  sgemm_coalesced<BM,BN>   one thread per output, threadIdx.x along columns
//   KIND 2  sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>
//           shared-memory block tiling with a TM x TN register micro-tile per thread
//   KIND 3  sgemm_warp<BM,BN,BK,TM,TN,LN,STAGES,SPLITK,GROUP,MINB,SLICEK,STREAMB,STREAMK>
//           warp tiling, cp.async multi-stage pipeline, sliced-K, split-K,
//           stream-K, rasterization, L2 evict-first for a streamed B
// Each handles every operand layout (LAYOUT, its template's last argument
// where not 0): the tiled and warp kinds stage op(A) and op(B) k-major in
// shared memory, copying a K-contiguous operand transposed and an
// MN-contiguous one as is, so their loads coalesce in every layout.
// Their tables, register models, rules, names, sources and geometry.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "families/sgemm/kinds.h"
#include "core/status.h"

namespace tuned::sgemm {
namespace {

/// Registers of the tiled kernel besides its arrays and staging: block
/// coordinates and pointers, M/N/K/alpha/beta, loop counters, the float4 flags.
constexpr int64_t kRegisterOverhead = 24;
/// Registers per float of a K slice staged by a thread: the value and, on the
/// scalar-load path, its 64-bit address and bounds predicate kept live across
/// the K loop.
constexpr int64_t kRegistersPerStagedFloat = 5;
/// Registers of the warp kernel besides accumulators and operands.
constexpr int64_t kWarpRegisterOverhead = 40;

/// Block tiles {BM, BN, TM, TN} of the 2-D tiled group of Space(): 64 to 512
/// threads of 4x4 to 16x8 outputs, from 16x64 (small M, e.g. M = 16) and
/// 32x32 (small problems) to 256x128 (large ones).
constexpr std::array<std::array<int64_t, 4>, 26> k2DTiles = {{
    {128, 128, 8, 8},  {128, 64, 8, 8},   {64, 128, 8, 8},  {64, 64, 4, 4},   {64, 64, 8, 8},
    {128, 128, 8, 4},  {128, 128, 4, 8},  {128, 64, 8, 4},  {64, 128, 4, 8},  {64, 64, 8, 4},
    {64, 64, 4, 8},    {128, 128, 16, 8}, {128, 128, 8, 16}, {256, 128, 16, 8}, {128, 256, 8, 16},
    {256, 128, 8, 16}, {128, 256, 16, 8}, {256, 64, 8, 8},  {64, 256, 8, 8},   {32, 128, 4, 4},
    {32, 128, 4, 8},   {32, 64, 4, 4},    {128, 32, 4, 4},  {32, 32, 4, 4},    {16, 64, 4, 4},
    {16, 128, 4, 4},
}};

/// The first kCore2DTiles of k2DTiles, the classic fast tiles, are the 2-D
/// tiled kernels of Space().
constexpr size_t kCore2DTiles = 5;

/// Warp-kernel tiles {BM, BN, TM, TN, LN} for large problems: 128 or 256
/// threads of 8x8 to 16x8 outputs, warp tiles 32x64, 64x32 and 32x128.
constexpr std::array<std::array<int64_t, 5>, 7> kWarpTiles = {{
    {128, 128, 8, 8, 8},   // 256 threads, warp tile 32x64
    {128, 128, 8, 8, 4},   // 256 threads, warp tile 64x32
    {128, 256, 8, 16, 8},  // 256 threads, warp tile 32x128
    {256, 128, 16, 8, 4},  // 256 threads, warp tile 128x32
    {128, 64, 8, 8, 4},    // 128 threads, warp tile 64x32
    {64, 128, 8, 8, 8},    // 128 threads, warp tile 32x64
    {128, 128, 8, 4, 8},   // 512 threads, warp tile 32x32
}};

/// Warp-kernel tiles {BM, BN, TM, TN, LN} with split-K: down to 16 rows for
/// M = 16, 64 to 256 threads.
constexpr std::array<std::array<int64_t, 5>, 8> kSplitTiles = {{
    {16, 128, 4, 4, 8},   // 128 threads, warp tile 16x32
    {16, 64, 4, 4, 8},    // 64 threads
    {32, 128, 4, 4, 8},   // 256 threads
    {32, 64, 4, 4, 8},    // 128 threads
    {64, 64, 8, 4, 8},    // 128 threads, warp tile 32x32
    {64, 128, 8, 8, 8},   // 128 threads, warp tile 32x64
    {128, 64, 8, 8, 4},   // 128 threads, warp tile 64x32
    {128, 128, 8, 8, 8},  // 256 threads, warp tile 32x64
}};

/// Warp-kernel tiles {BM, BN, TM, TN, LN} with sliced-K: kSplitTiles' small
/// and medium tiles, 32x32 and 32x64 with 8x4 per thread, and 64x64 with 8x8
/// (64 threads a group: a small problem has few 8x8 thread tiles, and
/// sliced-K multiplies its warps).
constexpr std::array<std::array<int64_t, 5>, 9> kSliceTiles = {{
    {16, 128, 4, 4, 8},
    {16, 64, 4, 4, 8},
    {32, 128, 4, 4, 8},
    {32, 64, 4, 4, 8},
    {32, 32, 4, 4, 8},
    {64, 64, 8, 4, 8},
    {64, 128, 8, 8, 8},
    {32, 64, 8, 4, 8},
    {64, 64, 8, 8, 8},
}};

/// Warp-kernel configs {BM, BN, BK, TM, TN, LN, STAGES, SPLITK, GROUP, MINB,
/// SLICEK, STREAMB} that also get RUL 10: the winners of the suite's small,
/// skinny and split-K shapes on an H100
/// (bench/RESULTS.md sgemm-streamk).
constexpr std::array<std::array<int64_t, 12>, 10> kRul10Twins = {{
    {64, 128, 16, 8, 8, 8, 4, 2, 8, 1, 1, 0},    // 1024^3, 1000^3
    {64, 128, 16, 8, 8, 8, 4, 4, 8, 1, 1, 0},    // 128x4096^2
    {64, 128, 16, 8, 8, 8, 4, 8, 8, 1, 1, 0},
    {16, 128, 32, 4, 4, 8, 3, 4, 1, 1, 1, 1},    // 16x4096^2
    {16, 64, 16, 4, 4, 8, 4, 4, 1, 1, 1, 1},
    {256, 128, 16, 16, 8, 4, 4, 4, 8, 1, 1, 0},  // 8192x128x8192
    {128, 256, 32, 8, 16, 8, 4, 4, 8, 1, 1, 0},  // 8192^3
    {64, 128, 16, 8, 8, 8, 2, 1, 8, 4, 1, 0},    // 4096^2x64
    {64, 128, 16, 8, 8, 8, 3, 1, 8, 4, 1, 0},
    {32, 64, 64, 8, 4, 8, 2, 1, 1, 1, 4, 0},     // 512^3
}};

/// MINB of a warp tile's stream-K configs: the blocks per SM it runs at,
/// which size the stream-K grid. 4 for up to 128 threads (2 for 128x64,
/// which spills at 4), 2 for 256 threads of up to 8x8, else 1.
int64_t StreamKMinBlocks(int64_t bm, int64_t bn, int64_t tm, int64_t tn) {
  const int64_t threads = (bm / tm) * (bn / tn);
  if (threads <= 128) return bm == 128 && bn == 64 ? 2 : 4;
  return threads == 256 && tm * tn <= 64 ? 2 : 1;
}

/// The tiled kernel's derived sizes (see sgemm_tiled in sgemm.cuh).
struct Tiled {
  int64_t bm, bn, bk, tm, tn, pad, vec, loop, map, db;

  /// Threads per block: one per TM x TN micro-tile of the BM x BN block tile.
  int64_t Threads() const { return (bm / tm) * (bn / tn); }
  /// Static shared memory in bytes: (DB ? 2 : 1) buffers of As[BK][BM+PAD]
  /// and Bs[BK][BN+PAD] floats.
  int64_t SharedBytes() const {
    return (db ? 2 : 1) * bk * ((bm + pad) + (bn + pad)) * kBytesPerElement;
  }
  /// Floats of one K slice of A and B that each thread stages in registers.
  int64_t Staged() const { return (bm + bn) * bk / Threads(); }
  /// Estimated registers per thread: TM*TN accumulators, TM + TN operands of
  /// one k step, kRegistersPerStagedFloat per staged float and
  /// kRegisterOverhead. Calibrated with ptxas -v (NVRTC 13.0, sm_90) on every
  /// tiled config of Space() whose estimate is at most 255: it is an upper
  /// bound of the registers ptxas allocates (which ranged 32..255), so no
  /// config that passes Check() spills; loose for LOOP = 1 and small tiles.
  int64_t RegisterEstimate() const {
    return tm * tn + tm + tn + kRegistersPerStagedFloat * Staged() + kRegisterOverhead;
  }
};

/// The warp kernel's derived sizes (see sgemm_warp in sgemm.cuh).
struct Warp {
  int64_t bm, bn, bk, tm, tn, ln, stages, splitk, group, minb, slicek, streamk;
  bool trans_b;  // op(B) = B^T (LAYOUT): Bs rows padded by 4 floats

  /// SLICEK groups of (BM/TM) * (BN/TN) threads.
  int64_t Threads() const { return slicek * (bm / tm) * (bn / tn); }
  int64_t Lm() const { return ln > 0 ? kWarp / ln : 0; }
  /// Warp tile: (32/LN * TM) x (LN * TN).
  int64_t Wm() const { return Lm() * tm; }
  int64_t Wn() const { return ln * tn; }
  /// Bs's row stride: BN, or BN+4 where op(B) = B^T (its K-contiguous
  /// tile is copied transposed, as A's, and the padding spreads the
  /// transposed copies over the banks).
  int64_t Ldb() const { return trans_b ? bn + 4 : bn; }
  /// Dynamic shared memory: STAGES x (As[BK][BM+4] + Bs[BK][Ldb()]) floats,
  /// then (SLICEK-1) x BM*BN floats for the sliced-K reduction.
  int64_t SharedBytes() const {
    return (stages * bk * ((bm + 4) + Ldb()) + (slicek - 1) * bm * bn) * kBytesPerElement;
  }
  /// Estimated registers per thread: TM*TN accumulators, TM + TN operands,
  /// kWarpRegisterOverhead (addresses, bounds, loop state). Calibrated with
  /// ptxas -v (NVRTC 13.0, sm_90) on the configs of Space().
  int64_t RegisterEstimate() const { return tm * tn + tm + tn + kWarpRegisterOverhead; }
  /// The registers a thread may use under __launch_bounds__(THREADS, MINB):
  /// the SM's 65536 split over MINB blocks, in the allocation unit of 8.
  int64_t RegisterCap(int64_t regs_per_sm) const {
    return std::min<int64_t>(kMaxRegistersPerThread, regs_per_sm / (minb * Threads()) / 8 * 8);
  }
};

Warp GetWarp(const Config& c) {
  return {At(c, "BM"),     At(c, "BN"),     At(c, "BK"),    At(c, "TM"),
          At(c, "TN"),     At(c, "LN"),     At(c, "STAGES"), At(c, "SPLITK"),
          At(c, "GROUP"),  At(c, "MINB"),   At(c, "SLICEK"), At(c, "STREAMK"),
          TransposedB(At(c, "LAYOUT"))};
}

Tiled GetTiled(const Config& c) {
  return {c.at("BM"), c.at("BN"),  c.at("BK"),   c.at("TM"),  c.at("TN"),
          c.at("PAD"), c.at("VEC"), c.at("LOOP"), c.at("MAP"), c.at("DB")};
}

/// Whether MAP=1 gives the same thread-to-element mapping as MAP=0: true when
/// each of TM and TN is either 1 or 4 (a single chunk of rows / columns).
bool MapIsIrrelevant(int64_t tm, int64_t tn) {
  auto single_chunk = [](int64_t t) { return t == 1 || t == 4; };
  return single_chunk(tm) && single_chunk(tn);
}

/// The warp kind's rules: compute capability 8.0+ (cp.async); TM and TN
/// multiples of 4; LN > 0; BM % (32/LN*TM) == 0 and BN % (LN*TN) == 0 (warp
/// tiles tile the block); the threads, and MINB blocks of them within the
/// SM's thread limit; BK % 8 == 0; BK % SLICEK == 0; STREAMK=1 only with
/// SPLITK = SLICEK = 1; BM*BK a multiple of THREADS and BN*BK of 4*THREADS
/// (even copies; an A tile of op(A) = A^T, copied 16 bytes at a time,
/// may leave the last round's copies short); dynamic shared memory
/// (Warp::SharedBytes, which counts the layout's padding) up to the opt-in
/// limit, and MINB blocks of it (plus the 1 KiB reserved per block) within
/// an SM (taken as
/// the opt-in limit + 1 KiB); the register estimate within the cap that
/// __launch_bounds__(THREADS, MINB) sets. So MINB blocks fit in an SM, as
/// stream-K's one-wave grid needs.
absl::Status CheckWarp(const Config& config, const v1::Device& device) {
  const Warp w = GetWarp(config);
  if (device.cc_major() < 8) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=3 needs cp.async (compute capability 8.0+), the device is ", device.cc_major(),
        ".", device.cc_minor()));
  }
  if (w.tm % 4 != 0 || w.tn % 4 != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("TM=", w.tm, " and TN=", w.tn, " must be multiples of 4 (float4 reads)"));
  }
  if (w.ln == 0 || w.stages == 0) {
    return absl::FailedPreconditionError("KIND=3 needs LN > 0 and STAGES > 0");
  }
  if (w.bm % w.Wm() != 0 || w.bn % w.Wn() != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the warp tile ", w.Wm(), "x", w.Wn(), " (32/LN*TM x LN*TN) does not tile ",
                     w.bm, "x", w.bn));
  }
  const int64_t threads = w.Threads();
  TUNED_RETURN_IF_ERROR(CheckThreads(threads,
                                     absl::StrCat("SLICEK*(BM/TM)*(BN/TN) = ", w.slicek, "*",
                                                  w.bm / w.tm, "*", w.bn / w.tn),
                                     device));
  if (device.max_threads_per_sm() > 0 && w.minb * threads > device.max_threads_per_sm()) {
    return absl::FailedPreconditionError(
        absl::StrCat("MINB=", w.minb, " blocks of ", threads, " threads exceed the SM's ",
                     device.max_threads_per_sm(), " threads"));
  }
  if (w.bk % 8 != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("BK=", w.bk, " is not a multiple of 8 (A is copied 8 k at a time)"));
  }
  if (w.bk % w.slicek != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("SLICEK=", w.slicek, " does not divide BK=", w.bk));
  }
  if (w.streamk != 0 && (w.splitk != 1 || w.slicek != 1)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "STREAMK=1 takes SPLITK=1 and SLICEK=1 (stream-K splits K itself), not SPLITK=",
        w.splitk, " and SLICEK=", w.slicek));
  }
  if ((w.bm * w.bk) % threads != 0 || (w.bn * w.bk) % (4 * threads) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the A tile (", w.bm * w.bk, " floats, 4-byte copies) or the B tile (", w.bn * w.bk,
        " floats, 16-byte copies) does not divide evenly among ", threads, " threads"));
  }
  const int64_t smem = w.SharedBytes();
  if (smem > device.shared_memory_per_block_optin()) {
    return absl::FailedPreconditionError(absl::StrCat(
        smem, " bytes of shared memory (STAGES x BK*(BM+4 + ", w.trans_b ? "BN+4" : "BN",
        ") + (SLICEK-1) x BM*BN floats) exceed the device's opt-in per-block limit of ",
        device.shared_memory_per_block_optin()));
  }
  if (w.minb * (smem + kReservedSharedPerBlock) >
      device.shared_memory_per_block_optin() + kReservedSharedPerBlock) {
    return absl::FailedPreconditionError(
        absl::StrCat("MINB=", w.minb, " blocks of ", smem,
                     " bytes of shared memory do not fit in one SM"));
  }
  const int64_t regs = w.RegisterEstimate();
  const int64_t cap = w.RegisterCap(device.registers_per_sm() > 0 ? device.registers_per_sm()
                                                                  : 65536);
  if (regs > cap) {
    return absl::FailedPreconditionError(absl::StrCat(
        "an estimated ", regs, " registers per thread (", w.tm * w.tn, " accumulators + ",
        w.tm + w.tn, " operands + ", kWarpRegisterOverhead, ") exceed the cap of ", cap,
        " that MINB=", w.minb, " blocks of ", threads, " threads per SM set (spills)"));
  }
  return absl::OkStatus();
}

}  // namespace

/// The warp kind's configs of Space() (its comment lists the groups): large
/// tiles (kWarpTiles), small tiles and split-K (kSplitTiles), sliced-K
/// (kSliceTiles) and the RUL 10 twins (kRul10Twins).
void AddWarpSpace(std::vector<Config>& space) {
  auto warp = [&](int64_t bm, int64_t bn, int64_t bk, int64_t tm, int64_t tn, int64_t ln,
                  int64_t stages, int64_t splitk, int64_t group, int64_t minb,
                  int64_t slicek = 1, int64_t streamb = 0, int64_t streamk = 0,
                  int64_t rul = kDefaultRegisterUsageLevel) {
    Config c = Base(kWarpTiled);
    for (auto [k, v] : {std::pair<const char*, int64_t>{"BM", bm}, {"BN", bn}, {"BK", bk},
                        {"TM", tm}, {"TN", tn}, {"LN", ln}, {"STAGES", stages},
                        {"SPLITK", splitk}, {"GROUP", group}, {"MINB", minb},
                        {"SLICEK", slicek}, {"STREAMB", streamb}, {"STREAMK", streamk},
                        {"RUL", rul}}) {
      c[k] = v;
    }
    AddOnce(space, c);
  };
  // Warp tiling, large tiles. MINB = 2 only where it caps the registers
  // (256 threads or more), MINB = 4 for 128 threads (128 registers, 16
  // warps per SM); BK = 32 for the first four tiles, GROUP = 1 for the
  // first only.
  for (size_t i = 0; i < kWarpTiles.size(); ++i) {
    const auto& [bm, bn, tm, tn, ln] = kWarpTiles[i];
    const int64_t threads = (bm / tm) * (bn / tn);
    for (int64_t bk : {8, 16, 32}) {
      if (bk == 32 && i > 3) continue;  // BK 32: the 128x128 to 256x128 tiles (half the barriers)
      for (int64_t stages : {2, 3, 4}) {
        for (int64_t minb : {1, 2, 4}) {
          if (minb == 2 && threads < 256) continue;
          if (minb == 4 && threads != 128) continue;
          warp(bm, bn, bk, tm, tn, ln, stages, 1, 8, minb);
          if (i == 0) warp(bm, bn, bk, tm, tn, ln, stages, 1, 1, minb);
        }
      }
    }
    // Split-K for few output tiles with a large K (M or N of 128).
    for (int64_t splitk : {2, 4, 8}) {
      warp(bm, bn, 16, tm, tn, ln, 4, splitk, 8, 1);
      if (threads == 128 && bm == 64) warp(bm, bn, 16, tm, tn, ln, 4, splitk, 8, 4);  // 128x64 spills
      if (i <= 3) warp(bm, bn, 32, tm, tn, ln, 3, splitk, 8, 1);
      if (i == 2 || i == 3) warp(bm, bn, 32, tm, tn, ln, 4, splitk, 8, 1);  // 16x8 tiles
      if (bm == 128 && i <= 2) warp(bm, bn, 16, tm, tn, ln, 4, splitk, 8, 1, 1, 1);  // M = 128
    }
    // Stream-K: for shapes whose tiles leave a last partial wave.
    const int64_t sk_minb = StreamKMinBlocks(bm, bn, tm, tn);
    warp(bm, bn, 16, tm, tn, ln, 4, 1, 8, sk_minb, 1, 0, 1);
    if (i <= 3) warp(bm, bn, 32, tm, tn, ln, 3, 1, 8, sk_minb, 1, 0, 1);
    // ptxas's register usage level 10 for the large shapes' kernels: the
    // same kernel ran 2.85 ms (NVRTC) and 3.04 ms (nvcc) at 4096^3, so the
    // schedule ptxas picks is worth tuning too.
    if (i <= 3) {
      warp(bm, bn, 16, tm, tn, ln, 4, 1, 8, 1, 1, 0, 0, 10);
      if (threads >= 256 && tm * tn == 64) warp(bm, bn, 16, tm, tn, ln, 4, 1, 8, 2, 1, 0, 0, 10);
      warp(bm, bn, 16, tm, tn, ln, 4, 1, 8, sk_minb, 1, 0, 1, 10);
      if (tm * tn == 128) warp(bm, bn, 32, tm, tn, ln, 4, 2, 8, 1, 1, 0, 0, 10);
    }
  }
  // Warp tiling, small tiles and split-K: (BK, STAGES) = (16, 4) or (32, 3).
  for (const auto& [bm, bn, tm, tn, ln] : kSplitTiles) {
    for (auto [bk, stages] : {std::pair<int64_t, int64_t>{16, 4}, {32, 3}}) {
      for (int64_t splitk : {1, 2, 4, 8, 16}) warp(bm, bn, bk, tm, tn, ln, stages, splitk, 1, 1);
      // Few rows (M = 16, 32): B is read once, streamed with evict-first.
      if (bm <= 32) {
        for (int64_t splitk : {4, 8, 16}) warp(bm, bn, bk, tm, tn, ln, stages, splitk, 1, 1, 1, 1);
      }
      // Stream-K.
      const int64_t sk_minb = StreamKMinBlocks(bm, bn, tm, tn);
      warp(bm, bn, bk, tm, tn, ln, stages, 1, 1, sk_minb, 1, 0, 1);
      if (bm <= 32) warp(bm, bn, bk, tm, tn, ln, stages, 1, 1, sk_minb, 1, 1, 1);
    }
    // A deep pipeline (7 K tiles in flight): few K tiles per block
    // wait on memory latency rather than on the SM.
    for (int64_t splitk : {1, 2, 4}) warp(bm, bn, 16, tm, tn, ln, 8, splitk, 1, 1);
  }
  // Sliced-K: 2 to 8 thread groups per tile, for problems with few tiles
  // (alone or with split-K); BK 32 so that a group has 4 to 16 k per tile,
  // and BK 64 for 4 and 8 groups.
  for (const auto& [bm, bn, tm, tn, ln] : kSliceTiles) {
    for (int64_t slicek : {2, 4, 8}) {
      if (slicek == 8 && tm * tn > 32) continue;  // 8 x 64 threads of 8x8: spills at 128
      for (int64_t splitk : {1, 2, 4}) warp(bm, bn, 32, tm, tn, ln, 3, splitk, 1, 1, slicek);
      warp(bm, bn, 32, tm, tn, ln, 6, 1, 1, 1, slicek);
      if (slicek >= 4) warp(bm, bn, 64, tm, tn, ln, 2, 1, 1, 1, slicek);
    }
  }
  for (const auto& [bm, bn, bk, tm, tn, ln, stages, splitk, group, minb, slicek, streamb] :
       kRul10Twins) {
    warp(bm, bn, bk, tm, tn, ln, stages, splitk, group, minb, slicek, streamb, 0, 10);
  }
}

/// The earlier designs' configs of Space(), one representative each plus
/// ablations of the 128x128 2-D tiled kernel: naive, coalesced, classic
/// shared-memory tiling, 1-D and 2-D block tiling (BK, MAP, DB, PAD, VEC,
/// LOOP). LOOP = MAP = 0 where TM = TN = 1, MAP = 0 where MAP cannot change
/// the mapping.
void AddEarlierSpace(std::vector<Config>& space) {
  auto tiled = [&](int64_t bm, int64_t bn, int64_t bk, int64_t tm, int64_t tn, int64_t pad,
                   int64_t vec, int64_t loop, int64_t map, int64_t db) {
    if (tm == 1 && tn == 1) loop = 0;
    if (MapIsIrrelevant(tm, tn)) map = 0;
    Config c = Base(kTiled);
    for (auto [k, v] : {std::pair<const char*, int64_t>{"BM", bm}, {"BN", bn}, {"BK", bk},
                        {"TM", tm}, {"TN", tn}, {"PAD", pad}, {"VEC", vec}, {"LOOP", loop},
                        {"MAP", map}, {"DB", db}}) {
      c[k] = v;
    }
    AddOnce(space, c);
  };
  for (int64_t kind : {kNaive, kCoalesced}) {
    Config c = Base(kind);
    c["BM"] = 16;
    c["BN"] = 16;
    AddOnce(space, c);
  }
  tiled(32, 32, 32, 1, 1, 4, 1, 0, 0, 1);     // classic shared-memory tiling
  tiled(64, 64, 8, 8, 1, 4, 1, 0, 1, 0);      // 1-D block tiling
  tiled(128, 64, 16, 8, 1, 4, 1, 0, 1, 0);
  for (size_t i = 0; i < kCore2DTiles; ++i) {  // 2-D block tiling
    const auto& [bm, bn, tm, tn] = k2DTiles[i];
    for (int64_t bk : {8, 16}) {
      for (int64_t db : {0, 1}) tiled(bm, bn, bk, tm, tn, 4, 4, 0, 1, db);
    }
  }
  // Ablations of the 128x128x8, 8x8 kernel: one design choice undone each.
  tiled(128, 128, 8, 8, 8, 0, 4, 0, 1, 0);  // no padding
  tiled(128, 128, 8, 8, 8, 4, 1, 0, 1, 0);  // scalar global loads
  tiled(128, 128, 8, 8, 8, 4, 4, 1, 1, 0);  // k-innermost loop
  tiled(128, 128, 8, 8, 8, 4, 4, 0, 0, 0);  // consecutive rows/columns per thread
}

/// KIND 3: CheckWarp's rules. KIND 0 and 1: BM*BN threads within the
/// device's limits (CheckThreads). KIND 2: BM % TM == BN % TN == 0; the
/// threads within the device's limits; BK % VEC == 0; A and B tile loads
/// that divide evenly (BM*BK and BN*BK multiples of THREADS*VEC); static
/// shared memory within shared_memory_per_block; RegisterEstimate() within
/// 255 and, times the threads, registers_per_block.
absl::Status CheckSimt(const Config& config, const v1::Device& device) {
  const int64_t kind = config.at("KIND");
  if (kind == kWarpTiled) return CheckWarp(config, device);
  if (kind != kTiled) {
    return CheckThreads(config.at("BM") * config.at("BN"),
                        absl::StrCat(config.at("BM"), "x", config.at("BN")), device);
  }

  const Tiled t = GetTiled(config);
  if (t.bm % t.tm != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("BM=", t.bm, " is not a multiple of TM=", t.tm));
  }
  if (t.bn % t.tn != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("BN=", t.bn, " is not a multiple of TN=", t.tn));
  }
  const int64_t threads = t.Threads();
  TUNED_RETURN_IF_ERROR(CheckThreads(
      threads, absl::StrCat("(BM/TM)*(BN/TN) = ", t.bm / t.tm, "*", t.bn / t.tn), device));
  if (t.bk % t.vec != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("BK=", t.bk, " is not a multiple of VEC=", t.vec));
  }
  for (auto [tile, what] : {std::pair{t.bm * t.bk, "A"}, std::pair{t.bn * t.bk, "B"}}) {
    if (tile % (threads * t.vec) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the ", what, " tile (", tile, " floats) does not divide evenly into loads of VEC=",
          t.vec, " floats by ", threads, " threads"));
    }
  }
  const int64_t smem = t.SharedBytes();
  if (smem > device.shared_memory_per_block()) {
    return absl::FailedPreconditionError(
        absl::StrCat(smem, " bytes of shared memory (", t.db ? 2 : 1,
                     " x BK*(BM+PAD + BN+PAD) floats) exceed the device's per-block limit of ",
                     device.shared_memory_per_block()));
  }
  const int64_t regs = t.RegisterEstimate();
  if (regs > kMaxRegistersPerThread) {
    return absl::FailedPreconditionError(
        absl::StrCat("an estimated ", regs, " registers per thread (", t.tm * t.tn,
                     " accumulators + ", t.tm + t.tn, " operands + ", kRegistersPerStagedFloat,
                     " x ", t.Staged(), " staged floats + ", kRegisterOverhead,
                     ") exceed the limit of ", kMaxRegistersPerThread));
  }
  if (regs * threads > device.registers_per_block()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "an estimated ", regs, " registers per thread x ", threads, " threads = ", regs * threads,
        " registers exceed the device's per-block limit of ", device.registers_per_block()));
  }
  return absl::OkStatus();
}

/// "sgemm_warp_<BM>x<BN>x<BK>_<TM>x<TN>_ln<LN>_s<STAGES>_g<GROUP>_b<MINB>"
/// with "_sl<SLICEK>" and "_sk<SPLITK>" appended where above 1, "_sb"
/// where STREAMB=1, "_st" where STREAMK=1 and "_r<RUL>" where RUL is not 5,
/// "sgemm_naive_<BM>x<BN>", "sgemm_coalesced_<BM>x<BN>", or
/// "sgemm_tiled_<BM>x<BN>x<BK>_<TM>x<TN>_p<PAD>_v<VEC>_l<LOOP>_m<MAP>" with
/// "_db" appended when DB=1, e.g. "sgemm_tiled_128x128x8_8x8_p4_v4_l0_m1_db".
std::string SimtName(const Config& config) {
  const int64_t kind = At(config, "KIND");
  if (kind == kWarpTiled) {
    std::string name = absl::StrCat(
        "sgemm_warp_", At(config, "BM"), "x", At(config, "BN"), "x", At(config, "BK"), "_",
        At(config, "TM"), "x", At(config, "TN"), "_ln", At(config, "LN"), "_s",
        At(config, "STAGES"), "_g", At(config, "GROUP"), "_b", At(config, "MINB"));
    if (At(config, "SLICEK") > 1) absl::StrAppend(&name, "_sl", At(config, "SLICEK"));
    if (At(config, "SPLITK") > 1) absl::StrAppend(&name, "_sk", At(config, "SPLITK"));
    if (At(config, "STREAMB") != 0) absl::StrAppend(&name, "_sb");
    if (At(config, "STREAMK") != 0) absl::StrAppend(&name, "_st");
    if (At(config, "RUL") != kDefaultRegisterUsageLevel) {
      absl::StrAppend(&name, "_r", At(config, "RUL"));
    }
    return name;
  }
  if (kind != kTiled) {
    return absl::StrCat("sgemm_", KindName(kind), "_", At(config, "BM"), "x", At(config, "BN"));
  }
  std::string name = absl::StrCat(
      "sgemm_tiled_", At(config, "BM"), "x", At(config, "BN"), "x", At(config, "BK"), "_",
      At(config, "TM"), "x", At(config, "TN"), "_p", At(config, "PAD"), "_v",
      At(config, "VEC"), "_l", At(config, "LOOP"), "_m", At(config, "MAP"));
  if (At(config, "DB") != 0) absl::StrAppend(&name, "_db");
  return name;
}

/// sgemm.cuh and warp.cuh, and "sgemm_naive<BM,BN>",
/// "sgemm_coalesced<BM,BN>", "sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>"
/// or "sgemm_warp<BM,BN,BK,TM,TN,LN,STAGES,SPLITK,GROUP,MINB,SLICEK,STREAMB,STREAMK>";
/// options: "-Xptxas=--register-usage-level=<RUL>" where RUL is not 5.
KernelSource SimtSource(const Config& config) {
  const int64_t kind = At(config, "KIND");
  std::string expr;
  std::vector<std::string> options;
  if (kind == kWarpTiled) {
    std::vector<int64_t> args;
    for (const char* p :
         {"BM", "BN", "BK", "TM", "TN", "LN", "STAGES", "SPLITK", "GROUP", "MINB", "SLICEK",
          "STREAMB", "STREAMK"}) {
      args.push_back(At(config, p));
    }
    expr = absl::StrCat("sgemm_warp<", absl::StrJoin(args, ","), ">");
    if (At(config, "RUL") != kDefaultRegisterUsageLevel) {
      options.push_back(absl::StrCat("-Xptxas=--register-usage-level=", At(config, "RUL")));
    }
  } else if (kind != kTiled) {
    expr = absl::StrCat("sgemm_", KindName(kind), "<", At(config, "BM"), ",", At(config, "BN"),
                        ">");
  } else {
    std::vector<int64_t> args;
    for (const char* p : {"BM", "BN", "BK", "TM", "TN", "PAD", "VEC", "LOOP", "MAP", "DB"}) {
      args.push_back(At(config, p));
    }
    expr = absl::StrCat("sgemm_tiled<", absl::StrJoin(args, ","), ">");
  }
  return {{"sgemm/sgemm.cuh", "sgemm/warp.cuh"}, std::move(expr), std::move(options)};
}

/// grid = {ceil(N / BN), ceil(M / BM), 1}. Where ceil(M / BM) exceeds 65535
/// (M > 65535 * BM), grid = {ceil(N / BN), 65535, ceil(ceil(M / BM) / 65535)}:
/// the kernels take blockIdx.z * gridDim.y + blockIdx.y as the row block and
/// return past the last one. block = {BM, BN, 1} for naive (x along rows),
/// {BN, BM, 1} for coalesced (x along columns), {(BM/TM)*(BN/TN), 1, 1} for
/// tiled; static shared memory only (0 dynamic).
/// Warp kind: grid = {ceil(M / BM) * ceil(N / BN), SPLITK, 1}, block =
/// {SLICEK*(BM/TM)*(BN/TN), 1, 1}, dynamic shared memory
/// Warp::SharedBytes(), and prescale_output when SPLITK > 1 (the blocks add
/// into C with atomics). STREAMK=1: grid = {G, ceil(tiles / G), 1} for
/// G = min(MINB * SMs, tiles * ceil(K / BK)), the block slots
/// __launch_bounds__ lets the SMs hold (rows of whole data-parallel
/// waves, then G blocks sharing the last wave; G = tiles where the
/// device's SM count is unknown), and prescale_output.
v1::LaunchGeometry SimtGeometry(const Config& config, const Shape& shape,
                                const v1::Device& device) {
  const int64_t kind = At(config, "KIND");
  const int64_t bm = At(config, "BM"), bn = At(config, "BN");
  if (kind == kWarpTiled) {
    const Warp w = GetWarp(config);
    const int64_t tiles = CeilDiv(shape[0], bm) * CeilDiv(shape[1], bn);
    int64_t blocks = tiles, rows = std::max<int64_t>(w.splitk, 1);
    if (w.streamk != 0 && device.sm_count() > 0) {
      blocks = std::min(w.minb * device.sm_count(), tiles * CeilDiv(shape[2], w.bk));
      rows = CeilDiv(tiles, blocks);
    }
    v1::LaunchGeometry g;
    g.add_grid(static_cast<uint32_t>(blocks));
    g.add_grid(static_cast<uint32_t>(rows));
    g.add_grid(1);
    g.add_block(static_cast<uint32_t>(w.tm > 0 && w.tn > 0 ? w.Threads() : 0));
    g.add_block(1);
    g.add_block(1);
    g.set_dynamic_shared_bytes(static_cast<uint32_t>(w.SharedBytes()));
    g.set_prescale_output(w.splitk > 1 || w.streamk != 0);
    return g;
  }
  const int64_t row_blocks = CeilDiv(shape[0], bm);
  const int64_t grid_y = std::min(row_blocks, kMaxGridY);
  v1::LaunchGeometry g;
  g.add_grid(static_cast<uint32_t>(CeilDiv(shape[1], bn)));
  g.add_grid(static_cast<uint32_t>(grid_y));
  g.add_grid(static_cast<uint32_t>(CeilDiv(row_blocks, grid_y)));
  switch (kind) {
    case kNaive:
      g.add_block(static_cast<uint32_t>(bm));
      g.add_block(static_cast<uint32_t>(bn));
      break;
    case kCoalesced:
      g.add_block(static_cast<uint32_t>(bn));
      g.add_block(static_cast<uint32_t>(bm));
      break;
    default: {
      const int64_t tm = At(config, "TM"), tn = At(config, "TN");
      g.add_block(static_cast<uint32_t>(tm > 0 && tn > 0 ? (bm / tm) * (bn / tn) : 0));
      g.add_block(1);
    }
  }
  g.add_block(1);
  g.set_dynamic_shared_bytes(0);
  return g;
}

}  // namespace tuned::sgemm
