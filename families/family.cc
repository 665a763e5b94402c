#include "families/family.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status.h"

namespace tuned {

absl::Status Family::ValidateShape(const Shape& shape) const {
  const auto names = dims();
  if (shape.size() != names.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(name()), " takes ", names.size(), " dimensions (",
                                                   absl::StrJoin(names, ", "), "), got ", shape.size()));
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(names[i], " must be at least 1, got ", shape[i]));
    }
    if (shape[i] > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat(names[i], " = ", shape[i], " does not fit the kernels' 32-bit index"));
    }
  }
  // A kernel spec's arguments at the shape, evaluated once: a size that
  // cannot be evaluated, or a buffer of 2^31 or more elements
  // (spec::kMaxBufferElements), is refused there, naming it. A family
  // written as code has none to evaluate: its largest buffer is checked.
  auto args = KernelArguments(shape);
  if (!args.ok()) return args.status();
  if (args->empty() && MaxBufferElements(shape) >= (int64_t{1} << 31)) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeString(shape),
                                                   " has a buffer of 2^31 or more elements, "
                                                   "which overflows the kernels' 32-bit index"));
  }
  return absl::OkStatus();
}

absl::Status Family::ValidateProblem(const Shape& shape, const v1::Device& device,
                                     v1::Math math) const {
  TUNED_RETURN_IF_ERROR(ValidateShape(shape));
  const int64_t bytes = BufferBytes(shape, math);
  if (device.total_memory_bytes() > 0 && bytes > device.total_memory_bytes()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "shape ", ShapeString(shape), " needs ", bytes / (1 << 20), " MiB of device memory; ",
        device.name(), " has ", device.total_memory_bytes() / (1 << 20), " MiB"));
  }
  return absl::OkStatus();
}

namespace {
/// OK if `value` is one of `supported`; else INVALID_ARGUMENT "<what>
/// <VALUE> is not supported by <family> (supported: a, b)", each supported
/// value by its enum name less `prefix`, in lower case.
template <typename Enum>
absl::Status CheckSupported(Enum value, const std::vector<Enum>& supported, const char* what,
                            const char* prefix, const std::string& family) {
  if (std::find(supported.begin(), supported.end(), value) != supported.end()) {
    return absl::OkStatus();
  }
  std::vector<std::string> names;
  for (Enum e : supported) names.push_back(absl::AsciiStrToLower(absl::StripPrefix(EnumName(e), prefix)));
  return absl::InvalidArgumentError(absl::StrCat(what, " ", EnumName(value), " is not supported by ",
                                                 family, " (supported: ", absl::StrJoin(names, ", "),
                                                 ")"));
}
}  // namespace

absl::Status Family::ValidateMath(v1::Math math) const {
  // A form of one dtype names it: sgemm takes tf32 in f32, not in bf16.
  const std::string family = DTypes().size() > 1
                                 ? absl::StrCat(std::string(name()), " in dtype ", DTypeText(dtype()))
                                 : std::string(name());
  return CheckSupported(math, MathModes(), "math mode", "MATH_", family);
}

absl::Status Family::ValidateLayout(v1::Layout layout) const {
  return CheckSupported(layout, Layouts(), "layout", "LAYOUT_", std::string(name()));
}

absl::Status Family::ValidateEpilogue(v1::Epilogue epilogue) const {
  const std::string family = DTypes().size() > 1
                                 ? absl::StrCat(std::string(name()), " in dtype ", DTypeText(dtype()))
                                 : std::string(name());
  TUNED_RETURN_IF_ERROR(CheckSupported(epilogue, Epilogues(), "epilogue", "EPILOGUE_", family));
  if (epilogue != this->epilogue()) {
    return absl::InvalidArgumentError(absl::StrCat(
        family, " applies epilogue ", EnumName(epilogue), " in its form for it (ForEpilogue), not in this one"));
  }
  return absl::OkStatus();
}

absl::Status Family::ValidateDType(v1::DType dtype) const {
  TUNED_RETURN_IF_ERROR(CheckSupported(dtype, DTypes(), "dtype", "DTYPE_", std::string(name())));
  if (dtype != this->dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(name()), " tunes dtype ", EnumName(dtype), " in its form for it (ForDType), not in this one"));
  }
  return absl::OkStatus();
}

const Family* InForm(const Family* family, const v1::Problem& problem) {
  if (family == nullptr) return nullptr;
  const Family* form =
      problem.dtype() == v1::DTYPE_UNSPECIFIED ? nullptr : family->ForDType(problem.dtype());
  if (form == nullptr) form = family;
  const Family* fused = form->ForEpilogue(problem.epilogue());
  return fused != nullptr ? fused : form;
}

std::string DTypeText(v1::DType dtype) {
  return absl::AsciiStrToLower(absl::StripPrefix(EnumName(dtype), "DTYPE_"));
}

std::vector<Config> Family::ValidSpace(const v1::Device& device, std::vector<Pruned>* pruned,
                                       v1::Math math, v1::Layout layout) const {
  std::vector<Config> valid;
  for (auto& nn : Space()) {
    Config c = InLayout(std::move(nn), layout);
    if (!AdmitsIn(c, math, layout)) continue;
    if (auto s = Check(c, device); s.ok()) {
      valid.push_back(std::move(c));
    } else if (pruned != nullptr) {
      pruned->push_back({std::move(c), std::string(s.message())});
    }
  }
  return valid;
}

std::vector<Config> Family::ValidSpace(const v1::Device& device, const Shape& shape,
                                       std::vector<Pruned>* pruned, v1::Math math,
                                       v1::Layout layout) const {
  std::vector<Config> suited;
  for (auto& c : ValidSpace(device, pruned, math, layout)) {
    if (auto s = SuitsShape(c, shape); s.ok()) {
      suited.push_back(std::move(c));
    } else if (pruned != nullptr) {
      pruned->push_back({std::move(c), std::string(s.message())});
    }
  }
  return suited;
}

void Family::VisitReach(int rounds,
                        const std::function<bool(std::string name, Config& config)>& visit) const {
  // Breadth first, each name once (its first config), holding only the
  // configs of the round being expanded.
  std::set<std::string> seen;
  std::vector<Config> frontier;
  bool done = false;
  // The frontier holds the configs of LAYOUT_NN, whose neighbours in
  // another layout are the other layout's neighbours (LAYOUT is not stepped).
  const std::vector<v1::Layout> layouts = Layouts();
  auto see = [&](Config& c, std::vector<Config>* next) {
    std::string name = ConfigName(c);
    if (done || !seen.insert(name).second) return;
    if (next != nullptr) next->push_back(c);
    for (v1::Layout layout : layouts) {
      if (layout == v1::LAYOUT_NN || done) continue;
      Config in = InLayout(c, layout);
      std::string in_name = ConfigName(in);
      if (seen.insert(in_name).second) done = visit(std::move(in_name), in);
    }
    if (!done) done = visit(std::move(name), c);
  };
  for (Config& c : Space()) see(c, rounds > 0 ? &frontier : nullptr);
  for (int round = 1; round <= rounds && !frontier.empty() && !done; ++round) {
    std::vector<Config> next;
    for (Config& c : frontier) {
      for (Config& n : Neighbours(c)) see(n, round < rounds ? &next : nullptr);
      c = Config();
    }
    frontier = std::move(next);
  }
}

std::map<std::string, Config> Family::ByName(int rounds) const {
  std::map<std::string, Config> by_name;
  VisitReach(rounds, [&](std::string name, Config& c) {
    by_name.emplace(std::move(name), std::move(c));
    return false;
  });
  return by_name;
}

std::map<std::string, Config> Family::ByName(int rounds,
                                             const std::set<std::string>& names) const {
  std::map<std::string, Config> found;
  VisitReach(rounds, [&](std::string name, Config& c) {
    if (names.count(name) != 0) found.emplace(std::move(name), std::move(c));
    return found.size() == names.size();
  });
  return found;
}

std::vector<Config> Family::Neighbours(const Config& config) const {
  std::vector<Config> out;
  for (const auto& p : params()) {
    if (p.from_problem) continue;
    auto at = config.find(p.name);
    if (at == config.end() && !p.if_absent) continue;
    const int64_t value = at != config.end() ? at->second : *p.if_absent;
    auto it = std::find(p.values.begin(), p.values.end(), value);
    if (it == p.values.end()) continue;
    for (auto next : {it == p.values.begin() ? p.values.end() : it - 1, it + 1}) {
      if (next == p.values.end()) continue;
      Config c = config;
      c[p.name] = *next;
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<Config> Refinements(const Family& family, const v1::Device& device,
                                const std::vector<Config>& best,
                                const std::set<std::string>& measured,
                                std::set<std::string>* refined, v1::Math math,
                                const Shape& shape, v1::Layout layout) {
  std::vector<Config> out;
  std::set<std::string> names;
  for (const Config& config : best) {
    if (!refined->insert(family.ConfigName(config)).second) continue;
    for (Config& c : family.Neighbours(config)) {
      const std::string name = family.ConfigName(c);
      if (measured.count(name) != 0 || names.count(name) != 0 || !family.AdmitsIn(c, math, layout) ||
          !family.Check(c, device).ok() || (!shape.empty() && !family.SuitsShape(c, shape).ok())) {
        continue;
      }
      names.insert(name);
      out.push_back(std::move(c));
    }
  }
  return out;
}

absl::Status Family::CheckParams(const Config& config) const {
  for (const auto& [key, value] : config) {
    auto p = std::find_if(params().begin(), params().end(),
                          [&key = key](const Param& q) { return q.name == key; });
    if (p == params().end()) {
      return absl::FailedPreconditionError(absl::StrCat("unknown parameter '", key, "'"));
    }
    if (std::find(p->values.begin(), p->values.end(), value) == p->values.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          key, "=", value, " is not one of the supported values ", absl::StrJoin(p->values, ", ")));
    }
  }
  for (const auto& p : params()) {
    if (!config.contains(p.name) && !p.if_absent) {
      return absl::FailedPreconditionError(absl::StrCat("missing parameter '", p.name, "'"));
    }
  }
  return absl::OkStatus();
}

std::string Family::ConfigKey(const Config& config) const {
  std::vector<std::string> parts;
  for (const auto& p : params()) {
    auto it = config.find(p.name);
    if (it != config.end()) parts.push_back(absl::StrCat(p.name, "=", it->second));
  }
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<Config> Family::ParseConfigKey(std::string_view key) const {
  Config config;
  const std::string text(key);
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(part, '=');
    int64_t value = 0;
    if (!absl::SimpleAtoi(kv.second, &value)) {
      return absl::InvalidArgumentError(absl::StrCat("bad parameter '", part, "' in '", text, "'"));
    }
    config[std::string(kv.first)] = value;
  }
  return config;
}

std::string Family::ShapeString(const Shape& shape) { return absl::StrJoin(shape, "x"); }

double ShapeDistance(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += std::abs(std::log2(static_cast<double>(a[i]) / static_cast<double>(b[i])));
  }
  return d;
}

std::optional<Shape> NearestShape(const Shape& shape, const std::vector<Shape>& tuned) {
  std::optional<Shape> best;
  double best_d = kMaxNearestDistance;
  for (const Shape& t : tuned) {
    const double d = ShapeDistance(shape, t);
    if (d < best_d || (d == best_d && !best)) {
      best = t;
      best_d = d;
    }
  }
  return best;
}

namespace {
std::atomic<bool> fault_test_enabled{false};

/// The code family whose id is `id`, or nullptr.
const Family* CodeFamilyOf(v1::Family id) {
  for (const Family* f : BuiltinCodeFamilies()) {
    if (f->id() == id) return f;
  }
  return nullptr;
}

/// A spec-made built-in's name: its enum value's, lower case without
/// "FAMILY_" (tuner.proto names each built-in family: FAMILY_TRANSPOSE is
/// transpose); empty for FAMILY_UNSPECIFIED, a value this build does not
/// know, or a code family's id.
std::string SpecMadeName(v1::Family id) {
  if (id == v1::FAMILY_UNSPECIFIED || !v1::Family_IsValid(id) || CodeFamilyOf(id) != nullptr) {
    return "";
  }
  return absl::AsciiStrToLower(absl::StripPrefix(v1::Family_Name(id), "FAMILY_"));
}
}  // namespace

void EnableFaultTestFamily() { fault_test_enabled = true; }
bool FaultTestFamilyEnabled() { return fault_test_enabled; }

const Family* FindCodeFamily(const v1::Problem& problem) {
  const Family* f = problem.family_name().empty() ? CodeFamilyOf(problem.family()) : nullptr;
  if (f == nullptr) return nullptr;
  return InForm(f, problem);
}

v1::Family BuiltinFamilyId(std::string_view name) {
  for (const Family* f : BuiltinCodeFamilies()) {
    if (f->name() == name || (!f->alias().empty() && f->alias() == name)) {
      return f->test_only() && !FaultTestFamilyEnabled() ? v1::FAMILY_UNSPECIFIED : f->id();
    }
  }
  const google::protobuf::EnumDescriptor* families = v1::Family_descriptor();
  for (int i = 0; i < families->value_count(); ++i) {
    const auto id = static_cast<v1::Family>(families->value(i)->number());
    if (!name.empty() && SpecMadeName(id) == name) return id;
  }
  return v1::FAMILY_UNSPECIFIED;
}

std::string BuiltinFamilyName(v1::Family id) {
  if (const Family* f = CodeFamilyOf(id); f != nullptr) return std::string(f->name());
  return SpecMadeName(id);
}

v1::Device Sm90ReferenceDevice() {
  v1::Device d;
  d.set_name("sm_90 reference (H100 SXM limits)");
  d.set_cc_major(9);
  d.set_cc_minor(0);
  d.set_sm_count(132);
  d.set_total_memory_bytes(int64_t{80} << 30);
  d.set_max_threads_per_block(1024);
  d.set_shared_memory_per_block(48 * 1024);
  d.set_shared_memory_per_block_optin(227 * 1024);
  d.set_registers_per_block(64 * 1024);
  d.set_registers_per_sm(64 * 1024);
  d.set_max_threads_per_sm(2048);
  d.set_l2_cache_bytes(50 * 1024 * 1024);
  return d;
}

}  // namespace tuned
