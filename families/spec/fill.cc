// A buffer's fill and reset (families/spec/spec.h FillRule): the defaults of
// each fill for each type, their check, and the draws.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "families/spec/spec.h"

namespace tuned::spec {
namespace {

bool IsInteger(v1::SpecType type) {
  return type == v1::SPEC_TYPE_U8 || type == v1::SPEC_TYPE_I32 || type == v1::SPEC_TYPE_I64;
}

// The values an integer type holds, as doubles: i64 within +-2^53, where
// every integer is a double.
std::pair<double, double> TypeRange(v1::SpecType type) {
  switch (type) {
    case v1::SPEC_TYPE_U8: return {0, 255};
    case v1::SPEC_TYPE_I32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default: return {-0x1p53, 0x1p53};
  }
}

}  // namespace

FillRule ResolveFill(const v1::SpecBuffer& buffer) {
  FillRule r;
  r.fill = buffer.fill();
  if (r.fill == v1::SPEC_FILL_UNSPECIFIED) {
    r.fill = buffer.role() == v1::SPEC_ROLE_OUT ? v1::SPEC_FILL_ZEROS : v1::SPEC_FILL_UNIFORM;
  }
  r.integer = IsInteger(buffer.type());
  if (r.integer) std::tie(r.min, r.max) = TypeRange(buffer.type());
  if (buffer.fill_parameters_size() == 2) {
    r.a = buffer.fill_parameters(0);
    r.b = buffer.fill_parameters(1);
    return r;
  }
  switch (r.fill) {
    case v1::SPEC_FILL_CONSTANT: r.a = buffer.fill_value(); break;
    case v1::SPEC_FILL_UNIFORM:
      switch (buffer.type()) {
        case v1::SPEC_TYPE_U8: r.a = 0, r.b = 255; break;
        case v1::SPEC_TYPE_I32: r.a = -0x1p15, r.b = 0x1p15 - 1; break;
        case v1::SPEC_TYPE_I64: r.a = -0x1p31, r.b = 0x1p31 - 1; break;
        default: r.a = -1, r.b = 1;
      }
      break;
    case v1::SPEC_FILL_NORMAL:
      switch (buffer.type()) {
        case v1::SPEC_TYPE_U8: r.a = 128, r.b = 32; break;
        case v1::SPEC_TYPE_I32: r.a = 0, r.b = 0x1p13; break;
        case v1::SPEC_TYPE_I64: r.a = 0, r.b = 0x1p29; break;
        default: r.a = 0, r.b = 1;
      }
      break;
    default: break;
  }
  return r;
}

absl::Status CheckFill(const v1::SpecBuffer& buffer, const std::string& path) {
  if (buffer.reset() != v1::SPEC_RESET_UNSPECIFIED && buffer.role() == v1::SPEC_ROLE_IN) {
    return FieldError(path + ".reset", "only outputs (role out or inout) are reset");
  }
  if (!std::isfinite(buffer.fill_value())) return FieldError(path + ".fill_value", "not finite");
  const auto& p = buffer.fill_parameters();
  if (p.empty()) return absl::OkStatus();
  const std::string at = path + ".fill";
  const bool uniform = buffer.fill() == v1::SPEC_FILL_UNIFORM;
  if (!uniform && buffer.fill() != v1::SPEC_FILL_NORMAL) {
    return FieldError(at, "only uniform and normal take a range");
  }
  if (p.size() != 2 || !std::isfinite(p[0]) || !std::isfinite(p[1])) {
    return FieldError(at, uniform ? "expected [low, high], finite" : "expected [mean, deviation], finite");
  }
  if (!uniform) {
    if (p[1] < 0) return FieldError(at, absl::StrCat("deviation ", p[1], " is negative"));
    return absl::OkStatus();
  }
  if (!IsInteger(buffer.type())) {
    if (!(p[0] < p[1])) return FieldError(at, absl::StrCat("uniform [", p[0], ", ", p[1], "]: low is not under high"));
    return absl::OkStatus();
  }
  const auto [min, max] = TypeRange(buffer.type());
  for (double v : {p[0], p[1]}) {
    if (v != std::floor(v) || v < min || v > max) {
      return FieldError(at, absl::StrCat("uniform bound ", v, " is not an integer from ", min, " to ", max, " (",
                                         std::string(TypeName(buffer.type())), ")"));
    }
  }
  if (p[0] > p[1]) return FieldError(at, absl::StrCat("uniform [", p[0], ", ", p[1], "]: low is over high"));
  return absl::OkStatus();
}

bool ResetsEveryRun(const v1::SpecBuffer& buffer) {
  return buffer.role() != v1::SPEC_ROLE_IN && buffer.reset() == v1::SPEC_RESET_EVERY_RUN;
}

FillSampler::FillSampler(const FillRule& rule) : rule_(rule) {
  // Only the distribution in use takes the rule's parameters (the others'
  // defaults keep their preconditions).
  if (rule.fill == v1::SPEC_FILL_UNIFORM && rule.integer) {
    integers_.param(decltype(integers_)::param_type(static_cast<int64_t>(rule.a), static_cast<int64_t>(rule.b)));
  } else if (rule.fill == v1::SPEC_FILL_UNIFORM) {
    uniform_.param(decltype(uniform_)::param_type(rule.a, rule.b));
  } else if (rule.fill == v1::SPEC_FILL_NORMAL && rule.b > 0) {
    normal_.param(decltype(normal_)::param_type(rule.a, rule.b));
  }
}

double FillSampler::Next(std::mt19937_64& rng) {
  switch (rule_.fill) {
    case v1::SPEC_FILL_CONSTANT: return rule_.a;
    case v1::SPEC_FILL_UNIFORM:
      return rule_.integer ? static_cast<double>(integers_(rng)) : uniform_(rng);
    case v1::SPEC_FILL_NORMAL: {
      const double x = rule_.b > 0 ? normal_(rng) : rule_.a;
      return rule_.integer ? std::clamp(std::nearbyint(x), rule_.min, rule_.max) : x;
    }
    default: return 0;
  }
}

}  // namespace tuned::spec
