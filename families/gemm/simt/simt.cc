// The fp32 form's first designs, three kinds (kernels_src/gemm/sgemm.cuh):
//   naive      KIND 0  sgemm_naive<BM,BN>       one thread per output, threadIdx.x along rows
//   coalesced  KIND 1  sgemm_coalesced<BM,BN>   one thread per output, threadIdx.x along columns
//   tiled      KIND 2  sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>
//              shared-memory block tiling with a TM x TN register micro-tile per thread
// Each handles every operand layout (LAYOUT, its template's last argument
// where not 0). One representative each of naive and coalesced, and the
// tiled kernel's tiles with ablations of its 128x128 form: the designs the
// warp kind (warp/) grew from. Their tables, register model, rules, names,
// sources and geometry.
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

/// Registers of the tiled kernel besides its arrays and staging: block
/// coordinates and pointers, M/N/K/alpha/beta, loop counters, the float4 flags.
constexpr int64_t kRegisterOverhead = 24;
/// Registers per float of a K slice staged by a thread: the value and, on the
/// scalar-load path, its 64-bit address and bounds predicate kept live across
/// the K loop.
constexpr int64_t kRegistersPerStagedFloat = 5;

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

/// The naive kinds' parameters fixed: all but BM and BN (Fp32Unused()).
const Config& NaiveFixed() { return Fp32Unused(); }
/// The tiled kind's: the warp kind's LN..RUL.
const Config& TiledFixed() {
  static const Config fixed = {{"LN", 0},    {"STAGES", 0}, {"SPLITK", 1},  {"GROUP", 1},
                               {"MINB", 1},  {"SLICEK", 1}, {"STREAMB", 0}, {"STREAMK", 0},
                               {"RUL", kDefaultRegisterUsageLevel}};
  return fixed;
}

/// 16x16, the one naive config.
void NaiveSpace(std::vector<Config>& space) {
  Config c = Base(0, NaiveFixed());
  c["BM"] = 16;
  c["BN"] = 16;
  AddOnce(space, c);
}

/// 16x16, the one coalesced config.
void CoalescedSpace(std::vector<Config>& space) {
  Config c = Base(1, NaiveFixed());
  c["BM"] = 16;
  c["BN"] = 16;
  AddOnce(space, c);
}

/// The tiled configs: classic shared-memory tiling, 1-D and 2-D block
/// tiling and ablations of the 128x128 2-D tiled kernel (BK, MAP, DB, PAD,
/// VEC, LOOP). LOOP = MAP = 0 where TM = TN = 1, MAP = 0 where MAP cannot
/// change the mapping.
void TiledSpace(std::vector<Config>& space) {
  auto tiled = [&](int64_t bm, int64_t bn, int64_t bk, int64_t tm, int64_t tn, int64_t pad,
                   int64_t vec, int64_t loop, int64_t map, int64_t db) {
    if (tm == 1 && tn == 1) loop = 0;
    if (MapIsIrrelevant(tm, tn)) map = 0;
    Config c = Base(2, TiledFixed());
    for (auto [k, v] : {std::pair<const char*, int64_t>{"BM", bm}, {"BN", bn}, {"BK", bk},
                        {"TM", tm}, {"TN", tn}, {"PAD", pad}, {"VEC", vec}, {"LOOP", loop},
                        {"MAP", map}, {"DB", db}}) {
      c[k] = v;
    }
    AddOnce(space, c);
  };
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

/// BM*BN threads within the device's limits (CheckThreads).
absl::Status CheckNaive(const Config& config, const v1::Device& device) {
  return CheckThreads(config.at("BM") * config.at("BN"),
                      absl::StrCat(config.at("BM"), "x", config.at("BN")), device);
}

/// BM % TM == BN % TN == 0; the threads within the device's limits; BK %
/// VEC == 0; A and B tile loads that divide evenly (BM*BK and BN*BK
/// multiples of THREADS*VEC); static shared memory within
/// shared_memory_per_block; RegisterEstimate() within 255 and, times the
/// threads, registers_per_block.
absl::Status CheckTiled(const Config& config, const v1::Device& device) {
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

/// "sgemm_naive_<BM>x<BN>".
std::string NaiveName(const Config& config, v1::DType /*dtype*/) {
  return absl::StrCat("sgemm_naive_", At(config, "BM"), "x", At(config, "BN"));
}
/// "sgemm_coalesced_<BM>x<BN>".
std::string CoalescedName(const Config& config, v1::DType /*dtype*/) {
  return absl::StrCat("sgemm_coalesced_", At(config, "BM"), "x", At(config, "BN"));
}
/// "sgemm_tiled_<BM>x<BN>x<BK>_<TM>x<TN>_p<PAD>_v<VEC>_l<LOOP>_m<MAP>" with
/// "_db" appended when DB=1, e.g. "sgemm_tiled_128x128x8_8x8_p4_v4_l0_m1_db".
std::string TiledName(const Config& config, v1::DType /*dtype*/) {
  std::string name = absl::StrCat(
      "sgemm_tiled_", At(config, "BM"), "x", At(config, "BN"), "x", At(config, "BK"), "_",
      At(config, "TM"), "x", At(config, "TN"), "_p", At(config, "PAD"), "_v",
      At(config, "VEC"), "_l", At(config, "LOOP"), "_m", At(config, "MAP"));
  if (At(config, "DB") != 0) absl::StrAppend(&name, "_db");
  return name;
}

/// sgemm.cuh and warp.cuh (every fp32 kind's first parts), and `entry`<BM,BN>.
KernelSource Simple(const Config& config, const char* entry) {
  return {{"gemm/sgemm.cuh", "gemm/warp.cuh"},
          absl::StrCat(entry, "<", At(config, "BM"), ",", At(config, "BN"), ">"),
          {}};
}
KernelSource NaiveSource(const Config& config, v1::DType /*dtype*/) {
  return Simple(config, "sgemm_naive");
}
KernelSource CoalescedSource(const Config& config, v1::DType /*dtype*/) {
  return Simple(config, "sgemm_coalesced");
}
/// "sgemm_tiled<BM,BN,BK,TM,TN,PAD,VEC,LOOP,MAP,DB>".
KernelSource TiledSource(const Config& config, v1::DType /*dtype*/) {
  std::vector<int64_t> args;
  for (const char* p : {"BM", "BN", "BK", "TM", "TN", "PAD", "VEC", "LOOP", "MAP", "DB"}) {
    args.push_back(At(config, p));
  }
  return {{"gemm/sgemm.cuh", "gemm/warp.cuh"},
          absl::StrCat("sgemm_tiled<", absl::StrJoin(args, ","), ">"),
          {}};
}

/// grid = {ceil(N / BN), ceil(M / BM), 1}. Where ceil(M / BM) exceeds 65535
/// (M > 65535 * BM), grid = {ceil(N / BN), 65535, ceil(ceil(M / BM) / 65535)}:
/// the kernels take blockIdx.z * gridDim.y + blockIdx.y as the row block and
/// return past the last one. block = {block_x, block_y, 1}; static shared
/// memory only (0 dynamic).
v1::LaunchGeometry Grid(const Shape& shape, int64_t bm, int64_t bn, int64_t block_x,
                        int64_t block_y) {
  const int64_t row_blocks = CeilDiv(shape[0], bm);
  const int64_t grid_y = std::min(row_blocks, kMaxGridY);
  v1::LaunchGeometry g;
  g.add_grid(static_cast<uint32_t>(CeilDiv(shape[1], bn)));
  g.add_grid(static_cast<uint32_t>(grid_y));
  g.add_grid(static_cast<uint32_t>(CeilDiv(row_blocks, grid_y)));
  g.add_block(static_cast<uint32_t>(block_x));
  g.add_block(static_cast<uint32_t>(block_y));
  g.add_block(1);
  g.set_dynamic_shared_bytes(0);
  return g;
}
/// Grid(); block = {BM, BN, 1}: x along rows.
v1::LaunchGeometry NaiveGeometry(const Config& config, const Shape& shape,
                                 const v1::Device& /*device*/, v1::DType /*dtype*/) {
  const int64_t bm = At(config, "BM"), bn = At(config, "BN");
  return Grid(shape, bm, bn, bm, bn);
}
/// Grid(); block = {BN, BM, 1}: x along columns.
v1::LaunchGeometry CoalescedGeometry(const Config& config, const Shape& shape,
                                     const v1::Device& /*device*/, v1::DType /*dtype*/) {
  const int64_t bm = At(config, "BM"), bn = At(config, "BN");
  return Grid(shape, bm, bn, bn, bm);
}
/// Grid(); block = {(BM/TM)*(BN/TN), 1, 1}.
v1::LaunchGeometry TiledGeometry(const Config& config, const Shape& shape,
                                 const v1::Device& /*device*/, v1::DType /*dtype*/) {
  const int64_t bm = At(config, "BM"), bn = At(config, "BN");
  const int64_t tm = At(config, "TM"), tn = At(config, "TN");
  return Grid(shape, bm, bn, tm > 0 && tn > 0 ? (bm / tm) * (bn / tn) : 0, 1);
}

}  // namespace
}  // namespace tuned::gemm

TUNED_KIND(naive, {.name = "naive", .label = "naive", .form = Form::kF32, .code = 0, .order = 4, .params = {"BM", "BN"}, .fixed = NaiveFixed(), .admits = AdmitsFp32, .space = NaiveSpace, .check = CheckNaive, .config_name = NaiveName, .source = NaiveSource, .geometry = NaiveGeometry, .model_features = TileFeatures});
TUNED_KIND(coalesced, {.name = "coalesced", .label = "coalesced", .form = Form::kF32, .code = 1, .order = 5, .params = {"BM", "BN"}, .fixed = NaiveFixed(), .admits = AdmitsFp32, .space = CoalescedSpace, .check = CheckNaive, .config_name = CoalescedName, .source = CoalescedSource, .geometry = CoalescedGeometry, .model_features = TileFeatures});
TUNED_KIND(tiled, {.name = "tiled", .label = "tiled", .form = Form::kF32, .code = 2, .order = 6, .params = {"BM", "BN", "BK", "TM", "TN", "PAD", "VEC", "LOOP", "MAP", "DB"}, .fixed = TiledFixed(), .admits = AdmitsFp32, .space = TiledSpace, .check = CheckTiled, .config_name = TiledName, .source = TiledSource, .geometry = TiledGeometry, .model_features = TileFeatures});
