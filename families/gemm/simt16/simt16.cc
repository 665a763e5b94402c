// The simt16 kind, KIND 0 of the 16-bit forms: gemm16_simt<DTYPE,BM,BN,BK,TM,TN>
// (kernels_src/gemm/gemm16_simt.cuh): CUDA-core 2-D block tiling, the
// operands staged in shared memory as fp32, bounds-checked element loads,
// so any shape, pitch and alignment. Its tiles, rules, name, source and
// geometry.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "families/gemm/kind.h"
#include "families/gemm/op.h"
#include "tuned/dtype.h"

namespace tuned::gemm {
namespace {

/// KIND of the simt16 kind's configs.
constexpr int64_t kCode = 0;

/// The simt kind's tiles (BM, BN, BK, TM, TN): 256 threads each; from
/// large tiles for large shapes to small ones for small or skinny shapes.
constexpr std::array<std::array<int64_t, 5>, 5> kSimtTiles = {{
    {128, 128, 16, 8, 8},
    {64, 128, 16, 4, 8},
    {64, 64, 16, 4, 4},
    {32, 32, 32, 2, 2},
    {16, 64, 32, 1, 4},
}};

/// kSimtTiles' configs.
void Simt16Space(std::vector<Config>& space) {
  for (const auto& [bm, bn, bk, tm, tn] : kSimtTiles) {
    AddOnce(space, {{"KIND", kCode}, {"BM", bm}, {"BN", bn}, {"BK", bk}, {"TM", tm}, {"TN", tn}});
  }
}

/// BM % TM == BN % TN == 0; threads (BM/TM * BN/TN) within the device's
/// limit and whole warps; static shared memory BK * (BM + BN + 2) * 4
/// within the device's static limit.
absl::Status CheckSimt16(const Config& config, const v1::Device& device) {
  const int64_t bm = config.at("BM"), bn = config.at("BN"), bk = config.at("BK");
  const int64_t tm = Get(config, "TM"), tn = Get(config, "TN");
  if (tm < 1 || tn < 1 || bm % tm != 0 || bn % tn != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("BM=", bm, " and BN=", bn, " must be multiples of TM=", tm, " and TN=", tn));
  }
  TUNED_RETURN_IF_ERROR(CheckThreads((bm / tm) * (bn / tn), "(BM/TM)*(BN/TN)", device));
  const int64_t smem = bk * (bm + bn + 2) * 4;
  if (smem > device.shared_memory_per_block()) {
    return absl::FailedPreconditionError(
        absl::StrCat(smem, " bytes of static shared memory (BK*(BM+BN+2)*4) exceed the device's ",
                     device.shared_memory_per_block()));
  }
  return absl::OkStatus();
}

/// "gemm_<bf16|f16>_simt_<BM>x<BN>x<BK>_<TM>x<TN>" then LayoutSuffix(),
/// e.g. "gemm_bf16_simt_64x64x16_4x4_nt".
std::string Simt16Name(const Config& config, v1::DType dtype) {
  return absl::StrCat("gemm_", DTypeText(dtype), "_simt_", Get(config, "BM"), "x",
                      Get(config, "BN"), "x", Get(config, "BK"), "_", Get(config, "TM"), "x",
                      Get(config, "TN"), LayoutSuffix(config));
}

/// gemm/half16.cuh and gemm/gemm16_simt.cuh, "gemm16_simt<DTYPE,BM,BN,BK,TM,TN>"
/// (DTYPE: tuner.proto's value, 2 to 5), the LAYOUT appended where not 0.
KernelSource Simt16Source(const Config& config, v1::DType dtype) {
  KernelSource s;
  s.parts = {"gemm/half16.cuh", "gemm/gemm16_simt.cuh"};
  s.name_expression = WithLayoutArgument(
      absl::StrCat("gemm16_simt<", static_cast<int>(dtype), ",", Get(config, "BM"), ",",
                   Get(config, "BN"), ",", Get(config, "BK"), ",", Get(config, "TM"), ",",
                   Get(config, "TN"), ">"),
      config);
  return s;
}

/// grid = {ceil(N / BN), min(ceil(M / BM), 65535), ceil(ceil(M / BM) /
/// 65535)}, block = {(BM/TM) * (BN/TN), 1, 1}, static shared memory.
v1::LaunchGeometry Simt16Geometry(const Config& config, const Shape& shape,
                                  const v1::Device& /*device*/, v1::DType /*dtype*/) {
  const int64_t bm = Get(config, "BM"), bn = Get(config, "BN");
  const int64_t rows = CeilDiv(shape[0], bm);
  v1::LaunchGeometry g;
  for (int64_t d : {CeilDiv(shape[1], bn), std::min(rows, kMaxGridY), CeilDiv(rows, kMaxGridY)}) {
    g.add_grid(static_cast<uint32_t>(d));
  }
  for (int64_t d : {(bm / Get(config, "TM")) * (bn / Get(config, "TN")), int64_t{1}, int64_t{1}}) {
    g.add_block(static_cast<uint32_t>(d));
  }
  return g;
}

}  // namespace
}  // namespace tuned::gemm

TUNED_KIND(simt16, {.name = "simt16", .label = "simt", .form = Form::k16, .code = kCode, .order = 2, .params = {"BM", "BN", "BK", "TM", "TN"}, .admits = Admits16, .space = Simt16Space, .check = CheckSimt16, .config_name = Simt16Name, .source = Simt16Source, .geometry = Simt16Geometry});
