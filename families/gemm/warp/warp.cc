// The warp kind, KIND 3 of the fp32 form:
//   sgemm_warp<BM,BN,BK,TM,TN,LN,STAGES,SPLITK,GROUP,MINB,SLICEK,STREAMB,STREAMK>
//   (kernels_src/gemm/sgemm.cuh and warp.cuh): warp tiling, cp.async
//   multi-stage pipeline, sliced-K, split-K, stream-K, rasterization, L2
//   evict-first for a streamed B.
// It handles every operand layout (LAYOUT, its template's last argument
// where not 0): op(A) and op(B) are staged k-major in shared memory, a
// K-contiguous operand copied transposed and an MN-contiguous one as is,
// so the loads coalesce in every layout.
// Its tables, register model, rules, name, source and geometry.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "families/gemm/kind.h"
#include "families/gemm/op.h"
#include "core/status.h"


namespace tuned::gemm {
namespace {

/// KIND of the warp kind's configs.
constexpr int64_t kCode = 3;
/// The tiled kind's parameters, which it fixes: A padded by 4 floats,
/// float4 loads, the outer-product loop, strided lanes, no double buffer.
const Config& Fixed() {
  static const Config fixed = {{"PAD", 4}, {"VEC", 4}, {"LOOP", 0}, {"MAP", 1}, {"DB", 0}};
  return fixed;
}

/// Registers of the warp kernel besides accumulators and operands.
constexpr int64_t kWarpRegisterOverhead = 40;

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

/// The warp kind's configs, in groups (each config once):
///  - large tiles (kWarpTiles): BK 8, 16, STAGES 2..4, GROUP 8, MINB 1 and
///    (256 threads or more) 2 or (128 threads) 4; for the first four tiles
///    also BK 32, for the first GROUP 1; and SPLITK 2..8 with BK 16,
///    STAGES 4 (MINB 1, and 4 for 64x128; the first four tiles also with
///    BK 32, STAGES 3, the 16x8-per-thread ones also with BK 32, STAGES 4;
///    the 128-row tiles also with STREAMB 1); and STREAMK 1 with BK 16,
///    STAGES 4 (the first four tiles also BK 32, STAGES 3), MINB
///    StreamKMinBlocks(); for the first four tiles also RUL 10 with BK 16,
///    STAGES 4 (plain, MINB 2, stream-K) and, for 16x8 per thread, BK 32
///    with SPLITK 2;
///  - small tiles and split-K (kSplitTiles): (BK, STAGES) (16, 4) and (32,
///    3), SPLITK 1..16 (skinny shapes, small M*N with large K, small
///    problems; tiles of up to 32 rows also with STREAMB 1 and SPLITK
///    4..16), STREAMK 1 with MINB StreamKMinBlocks() (tiles of up to 32
///    rows also with STREAMB 1), and (16, 8) with SPLITK 1..4;
///  - sliced-K (kSliceTiles): SLICEK 2..8 with BK 32, STAGES 3 (SPLITK
///    1..4) and 6, and SLICEK 4, 8 with BK 64, STAGES 2 (small problems);
///  - the RUL 10 twins of kRul10Twins.
void WarpSpace(std::vector<Config>& space) {
  auto warp = [&](int64_t bm, int64_t bn, int64_t bk, int64_t tm, int64_t tn, int64_t ln,
                  int64_t stages, int64_t splitk, int64_t group, int64_t minb,
                  int64_t slicek = 1, int64_t streamb = 0, int64_t streamk = 0,
                  int64_t rul = kDefaultRegisterUsageLevel) {
    Config c = Base(kCode, Fixed());
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

/// "sgemm_warp_<BM>x<BN>x<BK>_<TM>x<TN>_ln<LN>_s<STAGES>_g<GROUP>_b<MINB>"
/// with "_sl<SLICEK>" and "_sk<SPLITK>" appended where above 1, "_sb"
/// where STREAMB=1, "_st" where STREAMK=1 and "_r<RUL>" where RUL is not 5.
std::string WarpName(const Config& config, v1::DType /*dtype*/) {
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

/// sgemm.cuh and warp.cuh,
/// "sgemm_warp<BM,BN,BK,TM,TN,LN,STAGES,SPLITK,GROUP,MINB,SLICEK,STREAMB,STREAMK>";
/// options: "-Xptxas=--register-usage-level=<RUL>" where RUL is not 5.
KernelSource WarpSource(const Config& config, v1::DType /*dtype*/) {
  std::vector<int64_t> args;
  for (const char* p : {"BM", "BN", "BK", "TM", "TN", "LN", "STAGES", "SPLITK", "GROUP", "MINB",
                        "SLICEK", "STREAMB", "STREAMK"}) {
    args.push_back(At(config, p));
  }
  std::vector<std::string> options;
  if (At(config, "RUL") != kDefaultRegisterUsageLevel) {
    options.push_back(absl::StrCat("-Xptxas=--register-usage-level=", At(config, "RUL")));
  }
  return {{"gemm/sgemm.cuh", "gemm/warp.cuh"},
          absl::StrCat("sgemm_warp<", absl::StrJoin(args, ","), ">"),
          std::move(options)};
}

/// grid = {ceil(M / BM) * ceil(N / BN), SPLITK, 1}, block =
/// {SLICEK*(BM/TM)*(BN/TN), 1, 1}, dynamic shared memory
/// Warp::SharedBytes(), and prescale_output when SPLITK > 1 (the blocks add
/// into C with atomics). STREAMK=1: grid = {G, ceil(tiles / G), 1} for
/// G = min(MINB * SMs, tiles * ceil(K / BK)), the block slots
/// __launch_bounds__ lets the SMs hold (rows of whole data-parallel
/// waves, then G blocks sharing the last wave; G = tiles where the
/// device's SM count is unknown), and prescale_output.
v1::LaunchGeometry WarpGeometry(const Config& config, const Shape& shape,
                                const v1::Device& device, v1::DType /*dtype*/) {
  const int64_t bm = At(config, "BM"), bn = At(config, "BN");
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

}  // namespace
}  // namespace tuned::gemm

TUNED_KIND(warp, {.name = "warp", .label = "warp", .form = Form::kF32, .code = kCode, .order = 2, .params = {"BM", "BN", "BK", "TM", "TN", "LN", "STAGES", "SPLITK", "GROUP", "MINB", "SLICEK", "STREAMB", "STREAMK", "RUL"}, .fixed = Fixed(), .admits = AdmitsFp32, .space = WarpSpace, .check = CheckWarp, .config_name = WarpName, .source = WarpSource, .geometry = WarpGeometry, .model_features = TileFeatures});
