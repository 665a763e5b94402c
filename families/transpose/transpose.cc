// The transpose family: a kernel spec (spec.toml, embedded at build time)
// whose source is the kernel file kernels_src/transpose/transpose.cuh, plus
// the one thing a spec cannot say: config names that read as the kernels
// do ("transpose_tiled_32x8_p1"), which stored results keep.
#include <string>

#include "absl/strings/str_cat.h"
#include "families/family.h"
#include "families/spec/spec.h"
#include "families/spec_family.h"

namespace tuned::embedded {
extern const char kSpecToml_transpose[];  // families/transpose/spec.toml (cmake/family.cmake)
}  // namespace tuned::embedded

namespace tuned {
namespace {

/// "transpose_<kind>_<TILE>x<BY>" plus "_p<PAD>" for the shared-memory
/// kinds, e.g. "transpose_naive_32x8", "transpose_tiled_32x8_p1".
std::string TransposeConfigName(const Config& config) {
  auto get = [&](const char* key) {
    auto it = config.find(key);
    return it == config.end() ? int64_t{0} : it->second;
  };
  const int64_t kind = get("KIND");
  const char* kinds[] = {"naive", "tiled", "vec4"};
  std::string name = absl::StrCat("transpose_", kind >= 0 && kind <= 2 ? kinds[kind] : "unknown", "_",
                                  get("TILE"), "x", get("BY"));
  if (kind != 0) absl::StrAppend(&name, "_p", get("PAD"));
  return name;
}

std::unique_ptr<SpecFamily> MakeTransposeFamily() {
  auto spec = spec::ParseSpecToml(embedded::kSpecToml_transpose);
  // The spec is ours and checked by the tests: a failure is a build defect.
  if (!spec.ok()) std::abort();
  auto family = SpecFamily::Create(*std::move(spec), {.id = v1::FAMILY_TRANSPOSE,
                                                      .parts = {"transpose/transpose.cuh"},
                                                      .config_name = TransposeConfigName});
  if (!family.ok()) std::abort();
  return *std::move(family);
}

}  // namespace

const Family& TransposeFamily() {
  static const std::unique_ptr<SpecFamily> family = MakeTransposeFamily();
  return *family;
}

}  // namespace tuned
