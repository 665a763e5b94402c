#include "families/kernel_text.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tuned::embedded {
// The kernel files, embedded at build time (cmake/embed.cmake; CMakeLists.txt:
// tuned_embed into tuned_kernel_text).
extern const char kSgemmSource[];              // kernels_src/sgemm/sgemm.cuh
extern const char kSgemmWarpSource[];          // kernels_src/sgemm/warp.cuh
extern const char kGemvSource[];               // kernels_src/sgemm/gemv.cuh
extern const char kSgemmMmaSource[];           // kernels_src/sgemm/mma_tf32.cuh
extern const char kHopperSource[];             // kernels_src/sgemm/hopper.cuh
extern const char kSgemmWgmmaSource[];         // kernels_src/sgemm/wgmma_tf32.cuh
extern const char kSgemmWgmmaTileSource[];     // kernels_src/sgemm/wgmma_tile.cuh
extern const char kSgemmWgmmaRsSource[];       // kernels_src/sgemm/wgmma_rs.cuh
extern const char kSgemmWgmmaKernelsSource[];  // kernels_src/sgemm/wgmma_kernels.cuh
extern const char kSgemmWgmmaTmaSource[];      // kernels_src/sgemm/wgmma_tf32_tma.cuh
extern const char kHalf16Source[];             // kernels_src/sgemm/half16.cuh
extern const char kGemm16SimtSource[];         // kernels_src/sgemm/gemm16_simt.cuh
extern const char kGemm16MmaSource[];          // kernels_src/sgemm/mma16.cuh
extern const char kGemm16CopySource[];         // kernels_src/sgemm/copy16.cuh
extern const char kGemm16WgmmaOpsSource[];     // kernels_src/sgemm/wgmma16_ops.cuh
extern const char kGemm16WgmmaEpilogueSource[];  // kernels_src/sgemm/wgmma16_epilogue.cuh
extern const char kGemm16WgmmaSource[];        // kernels_src/sgemm/wgmma16.cuh
extern const char kTransposeSource[];          // kernels_src/transpose/transpose.cuh
extern const char kFaultTestSource[];          // kernels_src/fault_test/fault_test.cuh
}  // namespace tuned::embedded

namespace tuned {
namespace {

/// Each kernel file's path under kernels_src/ and its embedded text
/// (CMakeLists.txt: tuned_embed into tuned_kernel_text).
constexpr std::array<std::pair<std::string_view, const char*>, 19> kKernelFiles = {{
    {"sgemm/sgemm.cuh", embedded::kSgemmSource},
    {"sgemm/warp.cuh", embedded::kSgemmWarpSource},
    {"sgemm/gemv.cuh", embedded::kGemvSource},
    {"sgemm/mma_tf32.cuh", embedded::kSgemmMmaSource},
    {"sgemm/hopper.cuh", embedded::kHopperSource},
    {"sgemm/wgmma_tf32.cuh", embedded::kSgemmWgmmaSource},
    {"sgemm/wgmma_tile.cuh", embedded::kSgemmWgmmaTileSource},
    {"sgemm/wgmma_rs.cuh", embedded::kSgemmWgmmaRsSource},
    {"sgemm/wgmma_kernels.cuh", embedded::kSgemmWgmmaKernelsSource},
    {"sgemm/wgmma_tf32_tma.cuh", embedded::kSgemmWgmmaTmaSource},
    {"sgemm/half16.cuh", embedded::kHalf16Source},
    {"sgemm/gemm16_simt.cuh", embedded::kGemm16SimtSource},
    {"sgemm/mma16.cuh", embedded::kGemm16MmaSource},
    {"sgemm/copy16.cuh", embedded::kGemm16CopySource},
    {"sgemm/wgmma16_ops.cuh", embedded::kGemm16WgmmaOpsSource},
    {"sgemm/wgmma16_epilogue.cuh", embedded::kGemm16WgmmaEpilogueSource},
    {"sgemm/wgmma16.cuh", embedded::kGemm16WgmmaSource},
    {"transpose/transpose.cuh", embedded::kTransposeSource},
    {"fault_test/fault_test.cuh", embedded::kFaultTestSource},
}};

}  // namespace

absl::StatusOr<std::string_view> KernelFileText(std::string_view part) {
  for (const auto& [path, text] : kKernelFiles) {
    if (path == part) return std::string_view(text);
  }
  return absl::NotFoundError(absl::StrCat("no kernel file kernels_src/", std::string(part)));
}

std::string SourceText(const KernelSource& source) {
  if (source.parts.empty()) return source.text;
  std::string text;
  for (size_t i = 0; i < source.parts.size(); ++i) {
    if (i > 0) text += "\n";
    const auto part = KernelFileText(source.parts[i]);
    if (part.ok()) {
      text += *part;
    } else {
      absl::StrAppend(&text, "#error \"", part.status().message(), "\"\n");
    }
  }
  return text;
}

std::optional<v1::KernelSpec> SpecWithSource(const Family& family) {
  const v1::KernelSpec* spec = family.spec();
  if (spec == nullptr) return std::nullopt;
  v1::KernelSpec out = *spec;
  if (std::vector<std::string> parts = family.builtin_parts(); !parts.empty()) {
    out.set_source(SourceText(KernelSource{.parts = std::move(parts)}));
  }
  return out;
}

}  // namespace tuned
