// The mma16 kind, KIND 1 of the 16-bit forms: gemm16_mma<DTYPE,BM,BN,BK,WM,
// WN,STAGES,SPLITK,GROUP,LAYOUT,MINB> (kernels_src/gemm/mma16.cuh):
// mma.sync m16n8k16 with fp32 accumulators, ldmatrix from each operand's
// own layout, a cp.async pipeline where pitches and pointers are 16-byte
// aligned and bounds-checked loads otherwise; split-K within a cluster.
// Its configs, rules, name, source and launch geometry.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "families/gemm/kind.h"
#include "families/gemm/op.h"
#include "tuned/dtype.h"

namespace tuned::gemm {
namespace {

/// KIND of the mma16 kind's configs.
constexpr int64_t kCode = 1;

/// Bytes of one element of A, B and C.
constexpr int64_t kBytes16 = 2;

/// The mma kind's configs (BM, BN, BK, WM, WN, STAGES, SPLITK), GROUP 8,
/// MINB 1: the fastest per shape class of the probe on an H100
/// (bench/RESULTS.md gemm16-mma-probe): 128x128 and 128x256
/// tiles for large and odd shapes, 64-row tiles with split-K 1-4 for
/// small and skinny ones, 16-row tiles for M of 16 and tiny problems, and
/// split-K 2 and 4 of 128x128 for N of 128 with a large K.
constexpr std::array<std::array<int64_t, 7>, 11> kMmaConfigs = {{
    {128, 128, 32, 64, 64, 4, 1},
    {128, 256, 32, 64, 64, 3, 1},
    {128, 128, 64, 64, 32, 3, 1},
    {64, 128, 32, 32, 64, 4, 1},
    {64, 64, 64, 32, 32, 4, 1},
    {64, 64, 64, 32, 32, 4, 2},
    {64, 64, 64, 32, 32, 4, 4},
    {16, 64, 64, 16, 16, 4, 4},
    {16, 128, 64, 16, 32, 4, 1},
    {128, 128, 32, 64, 32, 4, 2},
    {128, 128, 32, 64, 32, 4, 4},
}};

/// The mma kind's threads: (BM / WM) * (BN / WN) warps.
int64_t MmaThreads(const Config& c) {
  const int64_t wm = std::max<int64_t>(Get(c, "WM"), 1), wn = std::max<int64_t>(Get(c, "WN"), 1);
  return (Get(c, "BM") / wm) * (Get(c, "BN") / wn) * kWarp;
}

/// The mma kind's dynamic shared memory (mma16.cuh's launch rules): the
/// pipeline, STAGES * (A's stage + B's stage) * 2 bytes, each stage a tile
/// as the operand is stored with 8 elements of padding per row (A: BM x
/// (BK + 8), or BK x (BM + 8) where op(A) = A^T; B: BK x (BN + 8), or BN x
/// (BK + 8) where op(B) = B^T); with split-K at least the BM x BN fp32
/// partial sums the cluster reduces.
int64_t MmaSharedBytes(const Config& c) {
  const int64_t bm = Get(c, "BM"), bn = Get(c, "BN"), bk = Get(c, "BK");
  const int64_t layout = Get(c, "LAYOUT");
  const int64_t a_stage = TransposedA(layout) ? bk * (bm + 8) : bm * (bk + 8);
  const int64_t b_stage = TransposedB(layout) ? bn * (bk + 8) : bk * (bn + 8);
  const int64_t pipe = Get(c, "STAGES") * (a_stage + b_stage) * kBytes16;
  return At1(c, "SPLITK") > 1 ? std::max(pipe, bm * bn * 4) : pipe;
}

/// mma16.cuh's static_asserts and the device's limits: WM and WN multiples
/// of 16 dividing BM and BN, BK a multiple of 16, STAGES >= 2, the threads
/// within the device's limit, the shared memory within its opt-in limit,
/// at most 64 x 64 outputs per warp (beyond, ptxas spills); split-K needs
/// clusters (compute capability 9.0).
absl::Status CheckMma(const Config& c, const v1::Device& device) {
  const int64_t bm = Get(c, "BM"), bn = Get(c, "BN"), bk = Get(c, "BK");
  const int64_t wm = Get(c, "WM"), wn = Get(c, "WN"), stages = Get(c, "STAGES");
  if (wm < 16 || wn < 16 || wm % 16 != 0 || wn % 16 != 0 || bm % wm != 0 || bn % wn != 0 ||
      bk % 16 != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=1 needs WM and WN multiples of 16 dividing BM and BN, and BK a multiple of 16; got BM=",
        bm, " BN=", bn, " BK=", bk, " WM=", wm, " WN=", wn));
  }
  if (stages < 2) return absl::FailedPreconditionError("KIND=1 needs STAGES >= 2");
  if (wm * wn > 64 * 64) {
    return absl::FailedPreconditionError(
        absl::StrCat("a ", wm, "x", wn, " warp tile holds more than 64x64 fp32 accumulators (spills)"));
  }
  const int64_t threads = MmaThreads(c);
  TUNED_RETURN_IF_ERROR(CheckThreads(threads, "(BM/WM)*(BN/WN)*32", device));
  const int64_t smem = MmaSharedBytes(c);
  if (smem > device.shared_memory_per_block_optin()) {
    return absl::FailedPreconditionError(absl::StrCat(
        smem, " bytes of shared memory (STAGES * (A + B stages) * 2) exceed the device's opt-in limit of ",
        device.shared_memory_per_block_optin()));
  }
  const int64_t regs_per_sm = device.registers_per_sm() > 0 ? device.registers_per_sm() : kRegistersPerSm;
  if (At1(c, "MINB") > 1 && At1(c, "MINB") * threads * kMaxRegistersPerThread > regs_per_sm &&
      wm * wn > 32 * 64) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MINB=", At1(c, "MINB"), " blocks of ", threads, " threads leave too few registers for a ", wm,
        "x", wn, " warp tile (spills)"));
  }
  return CheckClusterSplitK(At1(c, "SPLITK"), device);
}

/// kMmaConfigs' configs.
void Mma16Space(std::vector<Config>& space) {
  for (const auto& [bm, bn, bk, wm, wn, stages, splitk] : kMmaConfigs) {
    Config c = {{"KIND", kCode}, {"BM", bm}, {"BN", bn}, {"BK", bk},
                {"WM", wm},     {"WN", wn}, {"STAGES", stages}, {"GROUP", 8}};
    if (splitk > 1) c["SPLITK"] = splitk;
    AddOnce(space, c);
  }
}

/// "gemm_<dtype>_mma_<BM>x<BN>x<BK>_w<WM>x<WN>_s<STAGES>_g<GROUP>_b<MINB>",
/// then "_sk<SPLITK>" where above 1 and LayoutSuffix().
std::string Mma16Name(const Config& config, v1::DType dtype) {
  const std::string split =
      At1(config, "SPLITK") > 1 ? absl::StrCat("_sk", At1(config, "SPLITK")) : "";
  return absl::StrCat("gemm_", DTypeText(dtype), "_mma_", Get(config, "BM"), "x", Get(config, "BN"),
                      "x", Get(config, "BK"), "_w", Get(config, "WM"), "x", Get(config, "WN"), "_s",
                      Get(config, "STAGES"), "_g", At1(config, "GROUP"), "_b", At1(config, "MINB"),
                      split, LayoutSuffix(config));
}

/// sgemm.cuh, half16.cuh and mma16.cuh, "gemm16_mma<DTYPE,BM,BN,BK,WM,WN,
/// STAGES,SPLITK,GROUP,LAYOUT,MINB>".
KernelSource Mma16Source(const Config& config, v1::DType dtype) {
  KernelSource s;
  const int d = static_cast<int>(dtype);
  // sgemm.cuh: sgemm_detail::RasterTile; half16.cuh: the 16-bit conversions.
  s.parts = {"gemm/sgemm.cuh", "gemm/half16.cuh", "gemm/mma16.cuh"};
  s.name_expression = absl::StrCat(
      "gemm16_mma<", d, ",", Get(config, "BM"), ",", Get(config, "BN"), ",", Get(config, "BK"), ",",
      Get(config, "WM"), ",", Get(config, "WN"), ",", Get(config, "STAGES"), ",",
      At1(config, "SPLITK"), ",", At1(config, "GROUP"), ",", Get(config, "LAYOUT"), ",",
      At1(config, "MINB"), ">");
  return s;
}

/// grid = {ceil(M / BM) * ceil(N / BN), 1, SPLITK} (a split-K cluster
/// along z), block = {(BM/WM) * (BN/WN) * 32, 1, 1}, the pipeline's dynamic
/// shared memory; no prescaling of C.
v1::LaunchGeometry Mma16Geometry(const Config& config, const Shape& shape,
                                 const v1::Device& /*device*/, v1::DType /*dtype*/) {
  const int64_t bm = Get(config, "BM"), bn = Get(config, "BN");
  const int64_t tiles = CeilDiv(shape[0], bm) * CeilDiv(shape[1], bn);
  v1::LaunchGeometry g;
  for (int64_t d : {tiles, int64_t{1}, At1(config, "SPLITK")}) g.add_grid(static_cast<uint32_t>(d));
  for (int64_t d : {MmaThreads(config), int64_t{1}, int64_t{1}}) g.add_block(static_cast<uint32_t>(d));
  g.set_dynamic_shared_bytes(static_cast<uint32_t>(MmaSharedBytes(config)));
  return g;
}

}  // namespace
}  // namespace tuned::gemm

TUNED_KIND(mma16, {.name = "mma16", .label = "mma", .form = Form::k16, .code = kCode, .order = 1, .params = {"BM", "BN", "BK", "WM", "WN", "STAGES", "SPLITK", "GROUP", "MINB"}, .admits = Admits16, .space = Mma16Space, .check = CheckMma, .config_name = Mma16Name, .source = Mma16Source, .geometry = Mma16Geometry});
