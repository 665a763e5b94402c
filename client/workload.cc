#include "client/workload.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "families/family.h"
#include "families/spec/spec.h"
#include "nlohmann/json.hpp"
#include "tuned/client.h"

namespace tuned {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kFormat = "tuned-workload-1";
constexpr int64_t kMaxFileBytes = 16 << 20;

absl::Status Bad(const std::string& path, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", std::string(what)));
}

/// A text field of `entry`, or `fallback` where it is absent.
absl::StatusOr<std::string> Text(const Json& entry, const char* key, const std::string& path,
                                 std::string fallback) {
  if (!entry.contains(key)) return fallback;
  if (!entry[key].is_string()) return Bad(absl::StrCat(path, ".", key), "not a string");
  return entry[key].get<std::string>();
}

absl::StatusOr<WorkloadProblem> ParseProblem(const Json& entry, const std::string& path) {
  if (!entry.is_object()) return Bad(path, "not an object");
  for (const auto& [key, value] : entry.items()) {
    static const std::set<std::string> kKeys = {"family", "dtype", "layout", "math",
                                                "epilogue", "shape", "calls", "gpu_ms"};
    if (!kKeys.contains(key)) {
      return Bad(absl::StrCat(path, ".", key),
                 "unknown key (known: family, dtype, layout, math, epilogue, shape, calls, gpu_ms)");
    }
  }
  auto family = Text(entry, "family", path, "sgemm");
  auto dtype_name = Text(entry, "dtype", path, "f32");
  auto layout_name = Text(entry, "layout", path, "nn");
  auto math_name = Text(entry, "math", path, "ieee_fp32");
  auto epilogue_name = Text(entry, "epilogue", path, "none");
  for (const auto* s : {&family, &dtype_name, &layout_name, &math_name, &epilogue_name}) {
    if (!s->ok()) return s->status();
  }
  if (family->empty()) return Bad(path + ".family", "empty");
  auto dtype = ParseDType(*dtype_name);
  if (!dtype.ok()) return Bad(path + ".dtype", std::string(dtype.status().message()));
  auto layout = ParseLayout(*layout_name);
  if (!layout.ok()) return Bad(path + ".layout", std::string(layout.status().message()));
  auto math = ParseMath(*math_name);
  if (!math.ok()) return Bad(path + ".math", std::string(math.status().message()));
  auto epilogue = ParseEpilogue(*epilogue_name);
  if (!epilogue.ok()) return Bad(path + ".epilogue", std::string(epilogue.status().message()));
  if (!entry.contains("shape") || !entry["shape"].is_array() || entry["shape"].empty()) {
    return Bad(path + ".shape", "missing, or not a list of dimensions");
  }
  std::vector<int64_t> shape;
  for (const Json& d : entry["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 1) {
      return Bad(path + ".shape", absl::StrCat(d.dump(), " is not a positive integer"));
    }
    shape.push_back(d.get<int64_t>());
  }
  WorkloadProblem out;
  out.problem = FamilyProblem(*family, shape);
  if (out.problem.family() == v1::FAMILY_UNSPECIFIED && *dtype != v1::DTYPE_F32) {
    return Bad(path + ".dtype", absl::StrCat(*dtype_name, " is for built-in families; \"", *family,
                                             "\" is a kernel spec's, whose arguments have their own types"));
  }
  if (out.problem.family() != v1::FAMILY_UNSPECIFIED) out.problem.set_dtype(*dtype);
  out.problem.set_layout(*layout);
  out.problem.set_math(*math);
  out.problem.set_epilogue(*epilogue);
  if (!entry.contains("calls") || !entry["calls"].is_number_integer() || entry["calls"].get<int64_t>() < 1) {
    return Bad(path + ".calls", "missing, or not an integer of at least 1");
  }
  out.calls = entry["calls"].get<int64_t>();
  if (!entry.contains("gpu_ms") || !entry["gpu_ms"].is_number() || !(entry["gpu_ms"].get<double>() >= 0) ||
      !std::isfinite(entry["gpu_ms"].get<double>())) {
    return Bad(path + ".gpu_ms", "missing, or not a number of at least 0 (ms)");
  }
  out.gpu_ms = entry["gpu_ms"].get<double>();
  return out;
}

/// Everything of a problem but its shape's first dimension (a GEMM's M).
std::string GroupKey(const v1::Problem& p) {
  v1::Problem rest = p;
  if (!rest.shape().empty()) rest.mutable_shape()->erase(rest.mutable_shape()->begin());
  return rest.SerializeAsString();
}

}  // namespace

absl::StatusOr<Workload> ParseWorkload(std::string_view text) {
  const Json doc = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("workload: not JSON");
  if (!doc.is_object()) return absl::InvalidArgumentError("workload: not a JSON object");
  if (!doc.contains("format") || doc["format"] != kFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload: format: not \"", std::string(kFormat), "\" (tuned.record writes it)"));
  }
  if (!doc.contains("problems") || !doc["problems"].is_array()) {
    return absl::InvalidArgumentError("workload: problems: missing, or not a list");
  }
  Workload out;
  std::map<std::string, size_t> seen;  // a problem's bytes -> its index
  for (size_t i = 0; i < doc["problems"].size(); ++i) {
    auto p = ParseProblem(doc["problems"][i], absl::StrCat("workload: problems[", i, "]"));
    if (!p.ok()) return p.status();
    const std::string key = p->problem.SerializeAsString();
    out.total_ms += p->gpu_ms;
    if (auto it = seen.find(key); it != seen.end()) {
      out.problems[it->second].calls += p->calls;
      out.problems[it->second].gpu_ms += p->gpu_ms;
    } else {
      seen.emplace(key, out.problems.size());
      out.problems.push_back(*std::move(p));
    }
  }
  return out;
}

absl::StatusOr<Workload> LoadWorkload(const std::string& path) {
  auto text = spec::ReadTextFile(path, kMaxFileBytes, "workload file");
  if (!text.ok()) return text.status();
  auto w = ParseWorkload(*text);
  if (!w.ok()) return absl::Status(w.status().code(), absl::StrCat(path, ": ", w.status().message()));
  return w;
}

std::vector<WorkloadSweep> PlanSweeps(const Workload& workload) {
  // GEMM problems by everything but M, in the order of their first problem.
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> groups;
  std::vector<WorkloadSweep> out;
  for (size_t i = 0; i < workload.problems.size(); ++i) {
    const v1::Problem& p = workload.problems[i].problem;
    if (p.family() != v1::FAMILY_SGEMM || p.shape_size() != 3) {
      out.push_back({p, {i}, workload.problems[i].gpu_ms, false});
      continue;
    }
    const std::string key = GroupKey(p);
    if (!groups.contains(key)) order.push_back(key);
    groups[key].push_back(i);
  }
  for (const std::string& key : order) {
    const std::vector<size_t>& members = groups[key];
    std::set<int64_t> ms;
    for (size_t i : members) ms.insert(workload.problems[i].problem.shape(0));
    if (static_cast<int>(ms.size()) <= kExactShapesPerGroup) {
      for (size_t i : members) out.push_back({workload.problems[i].problem, {i}, workload.problems[i].gpu_ms, false});
      continue;
    }
    // The power of two nearest each M (log2 distance: 2^round(log2 M)),
    // then each M served by the bucket the daemon's rule picks.
    const v1::Problem& first = workload.problems[members.front()].problem;
    std::set<int64_t> bucket_ms;
    for (int64_t m : ms) bucket_ms.insert(int64_t{1} << std::lround(std::log2(static_cast<double>(m))));
    std::vector<Shape> buckets;
    for (int64_t b : bucket_ms) buckets.push_back({b, first.shape(1), first.shape(2)});
    std::map<int64_t, WorkloadSweep> by_bucket;
    for (size_t i : members) {
      const v1::Problem& p = workload.problems[i].problem;
      const auto near = NearestShape(Shape(p.shape().begin(), p.shape().end()), buckets);
      const int64_t b = near ? (*near)[0] : p.shape(0);
      WorkloadSweep& s = by_bucket[b];
      if (s.serves.empty()) {
        s.problem = p;
        s.problem.set_shape(0, b);
        s.bucket = true;
      }
      s.serves.push_back(i);
      s.gpu_ms += workload.problems[i].gpu_ms;
    }
    for (auto& [b, s] : by_bucket) out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const WorkloadSweep& a, const WorkloadSweep& b) { return a.gpu_ms > b.gpu_ms; });
  return out;
}

}  // namespace tuned
