// The mma_tf32 kind, KIND 5 of the fp32 form:
// sgemm_mma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB>
// (kernels_src/gemm/mma_tf32.cuh): tensor cores, mma.sync m16n8k8 TF32
// (PASSES 1) or 3xTF32 (PASSES 3), cp.async pipeline, warp tiles, split-K,
// rasterization; a candidate of the math modes MATH_TF32 and (PASSES 3)
// MATH_FP32_ACCURATE only (AdmitsTf32). Its tiles, register model, rules,
// source and geometry.
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

namespace tuned::gemm {
namespace {

/// KIND of the mma_tf32 kind's configs.
constexpr int64_t kCode = 5;

/// Registers of the tensor-core kernel besides its accumulators: fragments
/// (A and B, big and small parts), addresses, bounds and loop state.
/// Calibrated with ptxas -v (NVRTC 13.0, sm_90) on sgemm_mma: 16x32 warp
/// tiles used 110 registers; the larger tiles' estimates are within 2 of theirs.
constexpr int64_t kMmaRegisterOverhead = 110;

/// The tensor-core kernel's derived sizes (see sgemm_mma in mma_tf32.cuh).
struct MmaTile {
  int64_t bm, bn, bk, wm, wn, stages, splitk, passes, minb, layout;

  /// One warp per WM x WN warp tile of the BM x BN block tile.
  int64_t Threads() const { return wm > 0 && wn > 0 ? (bm / wm) * (bn / wn) * kWarp : 0; }
  /// Dynamic shared memory: STAGES x (A's tile + B's tile) floats, each as
  /// it is stored: As[BM][BK+4] (op(A) = A^T: As[BK][BM+8]) and
  /// Bs[BK][BN+8] (op(B) = B^T: Bs[BN][BK+4]).
  int64_t SharedBytes() const {
    const int64_t a = TransposedA(layout) ? bk * (bm + 8) : bm * (bk + 4);
    const int64_t b = TransposedB(layout) ? bn * (bk + 4) : bk * (bn + 8);
    return stages * (a + b) * kBytesPerElement;
  }
  /// WM*WN/32 accumulators per thread plus kMmaRegisterOverhead.
  int64_t RegisterEstimate() const { return wm * wn / kWarp + kMmaRegisterOverhead; }
};

MmaTile GetMma(const Config& c) {
  return {At(c, "BM"),     At(c, "BN"),     At(c, "BK"),     At(c, "WM"),  At(c, "WN"),
          At(c, "STAGES"), At(c, "SPLITK"), At(c, "PASSES"), At(c, "MINB"), At(c, "LAYOUT")};
}

/// Tensor-core tiles {BM, BN, WM, WN} for large problems: 4 or 8 warps of
/// 64x64, 64x32 or 32x64 warp tiles.
constexpr std::array<std::array<int64_t, 4>, 5> kMmaTiles = {{
    {128, 128, 64, 64},  // 128 threads
    {128, 128, 64, 32},  // 256 threads
    {128, 128, 32, 64},  // 256 threads
    {256, 128, 64, 64},  // 256 threads
    {128, 256, 64, 64},  // 256 threads
}};

/// Tensor-core tiles {BM, BN, WM, WN} with split-K: medium and small tiles
/// (few output tiles, M = 16 or 32) of 2 to 4 warps.
constexpr std::array<std::array<int64_t, 4>, 6> kMmaSplitTiles = {{
    {128, 64, 64, 32},  // 128 threads
    {64, 128, 32, 64},  // 128 threads
    {64, 64, 32, 32},   // 128 threads
    {32, 128, 32, 32},  // 128 threads
    {16, 128, 16, 32},  // 128 threads
    {32, 64, 32, 32},   // 64 threads
}};

/// The mma configs of Space(): kMmaTiles with (BK, STAGES) (16, 3), (16, 4)
/// and (32, 3), and kMmaSplitTiles with (16, 4) and (32, 3) and SPLITK 2..8
/// (16 for the small tiles); 3xTF32 first, then TF32.
void MmaSpace(std::vector<Config>& space) {
  auto mma = [&](int64_t bm, int64_t bn, int64_t bk, int64_t wm, int64_t wn, int64_t stages,
                 int64_t splitk, int64_t passes, int64_t group, int64_t minb) {
    Config c = Base(kCode, Tf32Fixed());
    for (auto [k, v] : {std::pair<const char*, int64_t>{"BM", bm}, {"BN", bn}, {"BK", bk},
                        {"WM", wm}, {"WN", wn}, {"STAGES", stages}, {"SPLITK", splitk},
                        {"PASSES", passes}, {"GROUP", group}, {"MINB", minb}}) {
      c[k] = v;
    }
    AddOnce(space, c);
  };
  for (int64_t passes : {3, 1}) {
    for (const auto& [bm, bn, wm, wn] : kMmaTiles) {
      // BK 16 with 3 or 4 stages, BK 32 with 3. No 64x64 3xTF32 warp
      // tiles: with a fresh accumulator per k8 step (mma_tf32.cuh) they
      // spill at 255 registers (28-48 bytes of stack at BK 16).
      for (auto [bk, stages] : {std::pair<int64_t, int64_t>{16, 3}, {16, 4}, {32, 3}}) {
        if (passes == 3 && wm * wn == 64 * 64) continue;
        mma(bm, bn, bk, wm, wn, stages, 1, passes, 8, 1);
      }
    }
    for (const auto& [bm, bn, wm, wn] : kMmaSplitTiles) {
      const bool small = bm <= 32;
      for (auto [bk, stages] : {std::pair<int64_t, int64_t>{16, 4}, {32, 3}}) {
        mma(bm, bn, bk, wm, wn, stages, 1, passes, small ? 1 : 8, 1);
      }
      for (int64_t splitk : {2, 4, 8}) mma(bm, bn, 32, wm, wn, 3, splitk, passes, 1, 1);
      if (small) mma(bm, bn, 32, wm, wn, 3, 16, passes, 1, 1);
    }
  }
}

/// The tensor-core kind's rules: compute capability 8.0+ (cp.async,
/// mma.sync TF32); PASSES 1 or 3; WM, WN > 0 with WM % 16 == 0, WN % 8 ==
/// 0, BM % WM == 0 and BN % WN == 0 (warp tiles tile the block); BN % 32
/// == 0 (conflict-free B fragments); BK 16 or 32; STAGES >= 2; the
/// threads within the device's limits, MINB blocks of them within the SM's;
/// BM*BK/4 and BK*BN/4 multiples of the threads (even 16-byte copies);
/// dynamic shared memory within the opt-in limit and MINB blocks of it
/// within an SM; the register estimate within the cap that
/// __launch_bounds__(THREADS, MINB) sets.
absl::Status CheckMma(const Config& config, const v1::Device& device) {
  const MmaTile t = GetMma(config);
  if (device.cc_major() < 8) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=5 needs mma.sync TF32 and cp.async (compute capability 8.0+), the device is ",
        device.cc_major(), ".", device.cc_minor()));
  }
  if (t.passes != 1 && t.passes != 3) {
    return absl::FailedPreconditionError(absl::StrCat("KIND=5 takes PASSES 1 or 3, not ", t.passes));
  }
  if (t.wm <= 0 || t.wn <= 0 || t.wm % 16 != 0 || t.wn % 8 != 0 || t.bm % t.wm != 0 ||
      t.bn % t.wn != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the warp tile ", t.wm, "x", t.wn, " (multiples of 16x8) does not tile ", t.bm, "x", t.bn));
  }
  if (t.bn % 32 != 0 || (t.bk != 16 && t.bk != 32) || t.stages < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=5 takes BN a multiple of 32, BK 16 or 32 and STAGES >= 2, not BN=", t.bn,
        ", BK=", t.bk, ", STAGES=", t.stages));
  }
  const int64_t threads = t.Threads();
  if ((t.bm * t.bk / 4) % threads != 0 || (t.bk * t.bn / 4) % threads != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the A tile (", t.bm * t.bk, " floats) or the B tile (", t.bk * t.bn,
        " floats) does not divide into 16-byte copies evenly among ", threads, " threads"));
  }
  return CheckBlock({threads, absl::StrCat("(BM/WM)*(BN/WN)*32 = ", t.bm / t.wm, "*", t.bn / t.wn, "*32"),
                     t.minb, t.SharedBytes(),
                     t.layout == 0 ? "STAGES x (BM*(BK+4) + BK*(BN+8)) floats"
                                   : "STAGES x (A's and B's padded tiles) floats",
                     t.RegisterEstimate(),
                     absl::StrCat(t.wm * t.wn / kWarp, " accumulators + ", kMmaRegisterOverhead)},
                    device);
}

/// Tf32Name with "mma", e.g. "sgemm_mma_128x128x16_w64x32_s3_g8_b1_tf32".
std::string MmaName(const Config& config, v1::DType /*dtype*/) { return Tf32Name(config, "mma"); }

/// sgemm.cuh, warp.cuh and mma_tf32.cuh, and
/// "sgemm_mma<BM,BN,BK,WM,WN,STAGES,SPLITK,PASSES,GROUP,MINB>" (Source
/// appends LAYOUT where it is not 0).
KernelSource MmaSource(const Config& config, v1::DType /*dtype*/) {
  std::vector<int64_t> args;
  for (const char* p :
       {"BM", "BN", "BK", "WM", "WN", "STAGES", "SPLITK", "PASSES", "GROUP", "MINB"}) {
    args.push_back(At(config, p));
  }
  return {{"gemm/sgemm.cuh", "gemm/warp.cuh", "gemm/mma_tf32.cuh"},
          absl::StrCat("sgemm_mma<", absl::StrJoin(args, ","), ">"), {}};
}

/// grid = {ceil(M / BM) * ceil(N / BN), SPLITK, 1}, block =
/// {(BM/WM)*(BN/WN)*32, 1, 1}, dynamic shared memory MmaTile::SharedBytes(),
/// prescale_output when SPLITK > 1.
v1::LaunchGeometry MmaGeometry(const Config& config, const Shape& shape,
                               const v1::Device& /*device*/, v1::DType /*dtype*/) {
  const int64_t bm = At(config, "BM"), bn = At(config, "BN");
  const MmaTile t = GetMma(config);
  return TileGeometry(shape, bm, bn, t.splitk, t.Threads(), t.SharedBytes());
}

}  // namespace
}  // namespace tuned::gemm

TUNED_KIND(mma_tf32, {.name = "mma_tf32", .label = "mma", .form = Form::kF32, .code = kCode, .order = 1, .params = {"BM", "BN", "BK", "WM", "WN", "STAGES", "SPLITK", "PASSES", "GROUP", "MINB"}, .fixed = Tf32Fixed(), .admits = AdmitsTf32, .space = MmaSpace, .check = CheckMma, .config_name = MmaName, .source = MmaSource, .geometry = MmaGeometry, .model_features = TileFeatures});
