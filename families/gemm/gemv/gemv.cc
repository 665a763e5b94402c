// The gemv kind, KIND 4 of the fp32 form: sgemm_gemv_rows<GW,GR,GU,GC,SPLITK,MINB> (GSIDE 0, small N) and
// sgemm_gemv_cols<GW,GR,GU,GC,SPLITK,MINB> (GSIDE 1, small M)
// (kernels_src/gemm/gemv.cuh, appended to sgemm.cuh and warp.cuh):
// matrix-vector shapes, searched only where M or N is at most 8
// (SuitsShape). Its tables, register model, rules, name, source, geometry
// and the shapes it suits. In every layout each side streams its big
// operand (A for small N, B for small M) coalesced: by the rows algorithm
// (threads along K) where that operand is K-contiguous, else by the cols
// algorithm (lanes along its contiguous M or N) on C^T = op(B)^T op(A)^T
// (GemvAlgorithm).
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

/// KIND of the gemv kind's configs.
constexpr int64_t kCode = 4;

/// GSIDE values.
enum GemvSide : int64_t {
  kGemvRows = 0,  // small N: warps along the rows of A (contiguous in K)
  kGemvCols = 1,  // small M: threads along the columns of B (N)
};

/// The parameters it fixes: all of the fp32 form's first ones but SPLITK.
const Config& Fixed() {
  static const Config fixed = [] {
    Config c = Fp32Unused();
    c.erase("SPLITK");
    c["BM"] = 8;
    c["BN"] = 8;
    return c;
  }();
  return fixed;
}

/// Registers of the gemv kernels besides accumulators and loaded operands.
constexpr int64_t kGemvRegisterOverhead = 24;
/// Columns of C per warp-wide float4 group of the gemv kind's cols side.
constexpr int64_t kGemvColsPerGroup = 4 * kWarp;
/// The gemv kind is searched where M (cols side) or N (rows side) is at most this.
constexpr int64_t kGemvMaxSmall = 8;

/// Gemv rows-side configs {GW, GR, GU, SPLITK} (small N): one to four rows
/// a block (4 rows share B's loads: N = 4 reads 4 floats of B per float of
/// A), 64 to 512 bytes of A in flight per thread, split-K for few rows.
constexpr std::array<std::array<int64_t, 4>, 7> kGemvRowsSet = {{
    {4, 1, 4, 1},
    {8, 1, 2, 1},
    {4, 2, 2, 1},
    {2, 4, 2, 1},
    {4, 4, 1, 1},
    {8, 2, 4, 1},
    {4, 1, 4, 8},  // M of a few hundred rows or less: K over 8 blocks
}};

/// Gemv cols-side configs {GW, GR, GU, SPLITK} (small M): N = 8192 has
/// only 2048 float4 columns, so K is split over 4 to 16 warps and 2 to 16
/// blocks for 2000 to 8000 warps; 2 to 8 k-quads of B rows in flight.
constexpr std::array<std::array<int64_t, 4>, 7> kGemvColsSet = {{
    {8, 1, 2, 4},
    {4, 1, 4, 8},
    {8, 1, 4, 2},
    {4, 2, 2, 4},
    {16, 1, 2, 2},
    {8, 1, 2, 16},
    {8, 1, 2, 1},  // large N
}};

/// The algorithm a gemv config runs (gemv.cuh): kGemvRows (threads along
/// K) where its big operand is K-contiguous: A for GSIDE 0 unless op(A) =
/// A^T, B for GSIDE 1 where op(B) = B^T; else kGemvCols (lanes along the big
/// operand's contiguous M or N).
int64_t GemvAlgorithm(int64_t side, int64_t layout) {
  const bool k_contiguous = side == kGemvRows ? !TransposedA(layout) : TransposedB(layout);
  return k_contiguous ? kGemvRows : kGemvCols;
}

/// The gemv kernels' derived sizes (see gemv.cuh).
struct Gemv {
  // side: the small dimension (GSIDE); algo: GemvAlgorithm, which the
  // estimates, the reduction and the grid follow.
  int64_t side, gw, gr, gu, gc, splitk, algo;

  int64_t Threads() const { return kWarp * gw; }
  /// Floats loaded per thread per step of GU k-quads (4 k each): rows: GR
  /// float4 of A and 4 x GC floats of B per quad; cols: GC float4 of A and
  /// 4 x GR float4 of B per quad.
  int64_t LoadedFloats() const {
    return algo == kGemvRows ? gu * (4 * gr + 4 * gc) : gu * (4 * gc + 16 * gr);
  }
  /// Accumulators per thread: GR rows x GC columns (rows), GC rows x 4*GR
  /// columns (cols).
  int64_t Accumulators() const { return algo == kGemvRows ? gr * gc : gc * 4 * gr; }
  /// 64-bit pointers to the rows of A a thread reads: GR (rows), GC (cols).
  int64_t RowPointers() const { return algo == kGemvRows ? gr : gc; }
  /// Estimated registers per thread: accumulators, the loaded floats, two
  /// per row pointer and kGemvRegisterOverhead. Calibrated with ptxas -v
  /// (NVRTC 13.0, sm_90) on the gemv configs of Space(): under the cap
  /// that MinBlocks() gives, none spills.
  int64_t RegisterEstimate() const {
    return Accumulators() + LoadedFloats() + 2 * RowPointers() + kGemvRegisterOverhead;
  }
  /// The kernel's __launch_bounds__ minimum blocks per SM: as many blocks
  /// as the SM's 65536 registers hold at RegisterEstimate() (so that ptxas
  /// may use the estimate and trades no spills for occupancy), within the
  /// SM's 2048 threads and 32 blocks, at least 1.
  int64_t MinBlocks() const {
    const int64_t regs = std::max<int64_t>(RegisterEstimate(), 1);
    const int64_t threads = std::max<int64_t>(Threads(), kWarp);
    return std::clamp<int64_t>(kRegistersPerSm / (threads * regs), 1,
                               std::max<int64_t>(1, std::min<int64_t>(kMaxBlocksPerSm,
                                                                      kMaxThreadsPerSm / threads)));
  }
  /// Static shared memory of the reduction across warps: GW x GR*GC floats
  /// (rows) or GW x 128*GR floats (cols).
  int64_t SharedBytes() const {
    return gw * (algo == kGemvRows ? gr * gc : kGemvColsPerGroup * gr) * kBytesPerElement;
  }
  /// Grid: (ceil(P / GR), SPLITK) for the rows algorithm, (ceil(P /
  /// (128*GR)), SPLITK) for the cols algorithm, P the big dimension (M for
  /// GSIDE 0, N for GSIDE 1).
  int64_t GridX(const Shape& shape) const {
    const int64_t big = side == kGemvRows ? shape[0] : shape[1];
    return algo == kGemvRows ? CeilDiv(big, gr) : CeilDiv(big, kGemvColsPerGroup * gr);
  }
};

Gemv GetGemv(const Config& c) {
  return {At(c, "GSIDE"), At(c, "GW"),     At(c, "GR"),
          At(c, "GU"),    At(c, "GC"),     At(c, "SPLITK"),
          GemvAlgorithm(At(c, "GSIDE"), At(c, "LAYOUT"))};
}

/// "rows" (GSIDE 0) or "cols" (GSIDE 1).
const char* GemvKernel(const Config& config) {
  return At(config, "GSIDE") == kGemvCols ? "cols" : "rows";
}

/// The gemv configs of Space(): kGemvRowsSet and kGemvColsSet, each with
/// GC 1, 2, 4 and 8 (a job on a shape measures those of its small
/// dimension: SuitsShape).
void GemvSpace(std::vector<Config>& space) {
  for (int64_t gc : {1, 2, 4, 8}) {
    for (int64_t side : {kGemvRows, kGemvCols}) {
      for (const auto& [gw, gr, gu, splitk] : side == kGemvRows ? kGemvRowsSet : kGemvColsSet) {
        Config c = Base(kCode, Fixed());
        for (auto [k, v] : {std::pair<const char*, int64_t>{"GSIDE", side}, {"GW", gw},
                            {"GR", gr}, {"GU", gu}, {"GC", gc}, {"SPLITK", splitk}}) {
          c[k] = v;
        }
        AddOnce(space, c);
      }
    }
  }
}

/// The gemv kind's rules: GW, GR, GU and GC at least 1 (0 is the other
/// kinds' value); GR at most 2 where the cols algorithm runs (its
/// accumulators are 4*GR per row of C): on the cols side unless op(B) =
/// B^T, on the rows side where op(A) = A^T; the threads (32*GW) within the device limit; the
/// static shared memory within the per-block limit; the register estimate
/// (Gemv::RegisterEstimate) within 255 and, times the threads, the
/// device's per-block registers.
absl::Status CheckGemv(const Config& config, const v1::Device& device) {
  const Gemv g = GetGemv(config);
  if (g.gw < 1 || g.gr < 1 || g.gu < 1 || g.gc < 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KIND=4 needs GW, GR, GU and GC of 1 or more, not ", g.gw, ", ", g.gr, ", ", g.gu,
        ", ", g.gc));
  }
  if (g.algo == kGemvCols && g.gr > 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "GR=", g.gr,
        g.side == kGemvCols
            ? " on the cols side (GSIDE=1) exceeds 2"
            : " exceeds 2: with op(A) = A^T (A stored K x M, M-contiguous) the rows side "
              "(GSIDE=0) runs the cols algorithm, lanes along M, 4*GR columns of C^T a lane"));
  }
  TUNED_RETURN_IF_ERROR(CheckThreads(g.Threads(), absl::StrCat("32*GW = 32*", g.gw), device));
  if (g.SharedBytes() > device.shared_memory_per_block()) {
    return absl::FailedPreconditionError(
        absl::StrCat(g.SharedBytes(), " bytes of shared memory exceed the device's per-block ",
                     "limit of ", device.shared_memory_per_block()));
  }
  const int64_t regs = g.RegisterEstimate();
  if (regs > kMaxRegistersPerThread || regs * g.Threads() > device.registers_per_block()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "an estimated ", regs, " registers per thread (", g.Accumulators(), " accumulators + ",
        g.LoadedFloats(), " loaded floats + 2 x ", g.RowPointers(), " row pointers + ",
        kGemvRegisterOverhead, ") x ", g.Threads(),
        " threads exceed the limit of ", kMaxRegistersPerThread, " a thread or ",
        device.registers_per_block(), " a block"));
  }
  return absl::OkStatus();
}

/// "sgemm_gemv_<rows|cols>_w<GW>_r<GR>_u<GU>_c<GC>" with "_sk<SPLITK>"
/// where above 1, e.g. "sgemm_gemv_cols_w8_r1_u2_c1_sk4".
std::string GemvName(const Config& config, v1::DType /*dtype*/) {
  std::string name = absl::StrCat("sgemm_gemv_", GemvKernel(config), "_w", At(config, "GW"),
                                  "_r", At(config, "GR"), "_u", At(config, "GU"), "_c",
                                  At(config, "GC"));
  if (At(config, "SPLITK") > 1) absl::StrAppend(&name, "_sk", At(config, "SPLITK"));
  return name;
}

/// sgemm.cuh, warp.cuh and gemv.cuh, and
/// "sgemm_gemv_<rows|cols><GW,GR,GU,GC,SPLITK,MINB>" (MINB:
/// Gemv::MinBlocks()).
KernelSource GemvSource(const Config& config, v1::DType /*dtype*/) {
  std::vector<int64_t> args;
  for (const char* p : {"GW", "GR", "GU", "GC", "SPLITK"}) args.push_back(At(config, p));
  args.push_back(GetGemv(config).MinBlocks());
  return {{"gemm/sgemm.cuh", "gemm/warp.cuh", "gemm/gemv.cuh"},
          absl::StrCat("sgemm_gemv_", GemvKernel(config), "<", absl::StrJoin(args, ","), ">"),
          {}};
}

/// grid = {Gemv::GridX(), SPLITK, 1}: {ceil(M / GR), SPLITK, 1} (rows) or
/// {ceil(N / (128*GR)), SPLITK, 1} (cols) in NN, block = {32*GW, 1, 1}, static shared memory only,
/// prescale_output when SPLITK > 1.
v1::LaunchGeometry GemvGeometry(const Config& config, const Shape& shape,
                                const v1::Device& /*device*/, v1::DType /*dtype*/) {
  const Gemv gv = GetGemv(config);
  v1::LaunchGeometry g;
  g.add_grid(static_cast<uint32_t>(gv.GridX(shape)));
  g.add_grid(static_cast<uint32_t>(gv.splitk));
  g.add_grid(1);
  g.add_block(static_cast<uint32_t>(gv.Threads()));
  g.add_block(1);
  g.add_block(1);
  g.set_dynamic_shared_bytes(0);
  g.set_prescale_output(gv.splitk > 1);
  return g;
}

/// OK where the gemv config's small dimension n (rows: N, cols: M) is at
/// most 8 and its chunk fits it: n <= GC < 2n (GC 4 for n = 3 or 4; a
/// smaller GC takes several passes over the big operand, a larger one more
/// registers for nothing). FAILED_PRECONDITION naming the rule otherwise.
absl::Status GemvSuitsShape(const Config& config, const Shape& shape) {
  const Gemv gv = GetGemv(config);
  const bool rows = gv.side == kGemvRows;
  const int64_t n = rows ? shape[1] : shape[0];
  if (n > kGemvMaxSmall) {
    return absl::FailedPreconditionError(
        absl::StrCat("gemv ", GemvKernel(config), " is for ", rows ? "N" : "M", " <= ",
                     kGemvMaxSmall, ", not ", n));
  }
  if (gv.gc < n || gv.gc >= 2 * n) {
    return absl::FailedPreconditionError(absl::StrCat(
        "gemv GC=", gv.gc, " is not the chunk for ", rows ? "N" : "M", " = ", n));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tuned::gemm

TUNED_KIND(gemv, {.name = "gemv", .label = "gemv", .form = Form::kF32, .code = kCode, .order = 3, .params = {"GSIDE", "GW", "GR", "GU", "GC", "SPLITK"}, .fixed = Fixed(), .admits = AdmitsFp32, .space = GemvSpace, .check = CheckGemv, .config_name = GemvName, .source = GemvSource, .geometry = GemvGeometry, .suits_shape = GemvSuitsShape, .model_features = TileFeatures});
