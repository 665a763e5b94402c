// Kernel specs (families/spec/): the first byte picks what the rest is.
//   0: a TOML spec, 1: a JSON spec -> ParseSpec* -> ValidateSpec; a valid
//      spec is then made a family as RegisterFamily does (SpecFamily::Create)
//      and evaluated at its sample problems (its space, the launch of its
//      first config, the kernel arguments), and hashed;
//   2: an expression over m, n, k, TILE, VEC (families/spec/expr.h),
//      compiled and evaluated at a few values, zeros and extremes among them;
//   3: CUDA source, scanned for its kernels (GlobalKernels).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "families/spec/expr.h"
#include "families/spec/spec.h"
#include "families/spec_family.h"

namespace spec = tuned::spec;
namespace v1 = tuned::v1;

namespace {

void Spec(const absl::StatusOr<v1::KernelSpec>& parsed) {
  if (!parsed.ok()) return;
  if (!spec::ValidateSpec(*parsed).ok()) return;
  (void)spec::SpecHash(*parsed);
  auto family = tuned::SpecFamily::Create(*parsed);
  if (!family.ok()) return;
  const auto space = (*family)->Space();
  for (const auto& sample : parsed->sample_dims()) {
    spec::Dims dims(sample.dims().begin(), sample.dims().end());
    tuned::Shape shape;
    for (const std::string& d : parsed->dims()) shape.push_back(dims.count(d) ? dims.at(d) : 1);
    if (!(*family)->ValidateShape(shape).ok()) continue;
    (void)(*family)->KernelArguments(shape);
    if (!space.empty()) {
      (void)(*family)->Geometry(space.front(), shape, tuned::Sm90ReferenceDevice());
      (void)spec::EvaluateLaunch(*parsed, space.front(), dims);
      (void)spec::Instantiate(*parsed, space.front());
    }
  }
}

void Expression(std::string_view text) {
  const std::vector<std::string> names = {"m", "n", "k", "TILE", "VEC"};
  auto expr = spec::Expr::Compile(text, names);
  if (!expr.ok()) return;
  (void)expr->IsBoolean();
  (void)expr->used();
  constexpr int64_t kBig = int64_t{1} << 53;
  const std::vector<std::vector<int64_t>> values = {
      {1024, 1024, 1024, 16, 4}, {1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}, {-7, 3, -1, 2, -2},
      {kBig, kBig, 1, 2, 3}, {INT64_MAX, INT64_MIN, -1, 0, 1}};
  for (const auto& v : values) {
    (void)expr->Evaluate(v);
    (void)expr->EvaluateInt(v);
    (void)expr->EvaluateBool(v);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return -1;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: Spec(spec::ParseSpecToml(text)); break;
    case 1: Spec(spec::ParseSpecJson(text)); break;
    case 2: Expression(text); break;
    case 3: (void)spec::GlobalKernels(text); break;
  }
  return 0;
}
