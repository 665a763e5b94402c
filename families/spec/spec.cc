// Validation, enumeration and launch evaluation of kernel specs.
#include "families/spec/spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "families/spec/expr.h"

namespace tuned::spec {

absl::Status FieldError(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", why));
}

namespace {

absl::Status Prefix(const std::string& path, const absl::Status& s) {
  return s.ok() ? s : absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Why `name` cannot name a dimension, parameter or argument, which the
// kernel's source sees (as a -D macro, a template argument or a parameter):
// "" if it can. A C++ keyword, or a name the implementation reserves (with
// "__", or "_" and a capital: __CUDA_ARCH__ would redefine the target;
// C++17 [lex.name]/3).
std::string Unusable(std::string_view name_view) {
  const std::string name(name_view);
  static const std::set<std::string_view> kKeywords = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
  if (!IsIdentifier(name)) return absl::StrCat("\"", name, "\" is not a C identifier");
  if (kKeywords.contains(name)) return absl::StrCat("\"", name, "\" is a C++ keyword");
  if (name.find("__") != std::string::npos ||
      (name.size() > 1 && name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1])))) {
    return absl::StrCat("\"", name, "\" is reserved: names with \"__\", or \"_\" and a capital, "
                        "belong to the compiler");
  }
  return "";
}

// The kernel's base name and the text of its template arguments ("" if none).
std::pair<std::string, std::string> SplitKernel(std::string_view kernel) {
  const size_t lt = kernel.find('<');
  std::string base(kernel.substr(0, lt));
  while (!base.empty() && std::isspace(static_cast<unsigned char>(base.back()))) base.pop_back();
  while (!base.empty() && std::isspace(static_cast<unsigned char>(base.front()))) base.erase(0, 1);
  return {base, lt == std::string_view::npos ? "" : std::string(kernel.substr(lt))};
}

// The identifiers of a template argument text, in order.
std::vector<std::pair<size_t, size_t>> Identifiers(std::string_view t) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < t.size();) {
    if (std::isdigit(static_cast<unsigned char>(t[i]))) {
      while (i < t.size() && std::isalnum(static_cast<unsigned char>(t[i]))) ++i;
    } else if (std::isalpha(static_cast<unsigned char>(t[i])) || t[i] == '_') {
      size_t j = i;
      while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_')) ++j;
      out.emplace_back(i, j - i);
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

std::string Describe(const std::vector<std::string>& vars, absl::Span<const int64_t> vals) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < vars.size(); ++i) parts.push_back(absl::StrCat(vars[i], "=", vals[i]));
  return absl::StrJoin(parts, " ");
}

// Every expression of a spec, compiled over its dims then its params.
struct Compiled {
  struct Launch {
    std::vector<Expr> block, grid;
    std::optional<Expr> smem;
  };
  std::vector<std::string> vars;
  int ndims = 0;
  std::vector<Expr> restrictions;
  std::vector<bool> uses_dims;
  std::vector<int> level;  // the last param each restriction uses; -1: none
  Launch launch;
  std::optional<Launch> reference;
  std::vector<Expr> args;  // a buffer's size or a scalar's value
  std::optional<Expr> work;
};

// Every text field's size (spec.h's limits), before anything reads one: a
// spec of a 60 MiB description is refused at once.
absl::Status CheckSizes(const v1::KernelSpec& spec) {
  if (std::ssize(spec.description()) > kMaxDescriptionBytes) {
    return FieldError("description", absl::StrCat(spec.description().size(), " bytes, more than the limit of ",
                                                  kMaxDescriptionBytes));
  }
  auto name = [](const std::string& path, const std::string& text) {
    return std::ssize(text) <= kMaxNameChars
               ? absl::OkStatus()
               : FieldError(path, absl::StrCat(text.size(), " characters, more than the limit of ",
                                               kMaxNameChars, " for a name"));
  };
  TUNED_RETURN_IF_ERROR(name("name", spec.name()));
  TUNED_RETURN_IF_ERROR(name("verification.reference", spec.verification().reference_kernel()));
  TUNED_RETURN_IF_ERROR(name("work.unit", spec.work().unit()));
  if (std::ssize(spec.kernel()) > kMaxExpressionChars) {
    return FieldError("kernel", absl::StrCat(spec.kernel().size(), " characters, more than the limit of ",
                                             kMaxExpressionChars));
  }
  if (spec.dims_size() > kMaxDims) return FieldError("dims", absl::StrCat("more than ", kMaxDims));
  for (int i = 0; i < spec.dims_size(); ++i) {
    TUNED_RETURN_IF_ERROR(name(absl::StrCat("dims[", i, "]"), spec.dims(i)));
  }
  if (spec.params_size() > kMaxParams) return FieldError("params", absl::StrCat("more than ", kMaxParams));
  for (int i = 0; i < spec.params_size(); ++i) {
    const v1::SpecParam& p = spec.params(i);
    TUNED_RETURN_IF_ERROR(name(absl::StrCat("params[", i, "].name"), p.name()));
    if (std::ssize(p.doc()) > kMaxDocBytes) {
      return FieldError(absl::StrCat("params[", i, "].doc"),
                        absl::StrCat(p.doc().size(), " bytes, more than the limit of ", kMaxDocBytes));
    }
    if (p.values_size() > kMaxValuesPerParam) {
      return FieldError(absl::StrCat("params[", i, "].values"), absl::StrCat("more than ", kMaxValuesPerParam));
    }
  }
  if (spec.arguments_size() > kMaxArguments) {
    return FieldError("arguments", absl::StrCat("more than ", kMaxArguments));
  }
  for (int i = 0; i < spec.arguments_size(); ++i) {
    TUNED_RETURN_IF_ERROR(name(absl::StrCat("arguments[", i, "].name"), spec.arguments(i).name()));
  }
  for (const auto& [key, value] : spec.default_config()) {
    TUNED_RETURN_IF_ERROR(name("default_config", key));
  }
  for (const auto& [key, value] : spec.verification().reference_config()) {
    TUNED_RETURN_IF_ERROR(name("verification.config", key));
  }
  if (spec.sample_dims_size() > kMaxSampleDims) {
    return FieldError("sample_dims", absl::StrCat("more than ", kMaxSampleDims));
  }
  // The rest (expressions, the source) have their own limits; the whole
  // message is bounded as a spec file is.
  if (std::ssize(spec.source()) <= kMaxSourceBytes &&
      static_cast<int64_t>(spec.ByteSizeLong()) > kMaxSpecFileBytes) {
    return FieldError("spec", absl::StrCat(spec.ByteSizeLong(), " bytes, more than the limit of ",
                                           kMaxSpecFileBytes));
  }
  return absl::OkStatus();
}

absl::Status CheckStructure(const v1::KernelSpec& spec, bool check_source) {
  TUNED_RETURN_IF_ERROR(CheckSizes(spec));
  const std::string& name = spec.name();
  if (name.empty()) return FieldError("name", "missing");
  if (name.size() > 64 || !std::isalpha(static_cast<unsigned char>(name[0])) ||
      !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      })) {
    return FieldError("name", absl::StrCat("\"", name, "\" is not 1-64 letters, digits, '_', '-' or '.' starting with a letter"));
  }
  if (check_source && spec.source().empty()) return FieldError("source", "missing");
  if (std::ssize(spec.source()) > kMaxSourceBytes) {
    return FieldError("source", absl::StrCat(spec.source().size(), " bytes, more than the limit of ", kMaxSourceBytes));
  }
  if (check_source) TUNED_RETURN_IF_ERROR(CheckSourceReads(spec.source()));
  const std::vector<std::string> kernels = GlobalKernels(spec.source());
  if (check_source && kernels.empty()) return FieldError("source", "no __global__ function");
  auto has_kernel = [&](const std::string& k) {
    return !check_source || std::find(kernels.begin(), kernels.end(), k) != kernels.end();
  };
  if (spec.kernel().empty()) return FieldError("kernel", "missing");
  const auto [base, targs] = SplitKernel(spec.kernel());
  if (!IsIdentifier(base)) return FieldError("kernel", absl::StrCat("\"", spec.kernel(), "\" is not a name or name<args>"));
  if (!has_kernel(base)) {
    return FieldError("kernel", absl::StrCat("no __global__ function \"", base, "\" in the source (found: ",
                                      absl::StrJoin(kernels, ", "), ")"));
  }
  if (spec.params_size() > kMaxParams) return FieldError("params", absl::StrCat("more than ", kMaxParams));
  if (spec.dims_size() > kMaxDims) return FieldError("dims", absl::StrCat("more than ", kMaxDims));
  if (spec.arguments_size() > kMaxArguments) return FieldError("arguments", absl::StrCat("more than ", kMaxArguments));
  if (spec.restrictions_size() > kMaxRestrictions) return FieldError("restrictions", absl::StrCat("more than ", kMaxRestrictions));
  if (spec.sample_dims_size() > kMaxSampleDims) return FieldError("sample_dims", absl::StrCat("more than ", kMaxSampleDims));
  std::set<std::string> names;
  for (int i = 0; i < spec.dims_size(); ++i) {
    const std::string path = absl::StrCat("dims[", i, "]"), &d = spec.dims(i);
    if (const std::string why = Unusable(d); !why.empty()) return FieldError(path, why);
    if (IsFunction(d)) return FieldError(path, absl::StrCat("\"", d, "\" is a function of the expressions"));
    if (!names.insert(d).second) return FieldError(path, absl::StrCat("duplicate dimension \"", d, "\""));
  }
  std::set<std::string> template_params;
  for (int i = 0; i < spec.params_size(); ++i) {
    const v1::SpecParam& p = spec.params(i);
    const std::string path = absl::StrCat("params[", i, "]");
    if (p.name().empty()) return FieldError(path + ".name", "missing");
    if (const std::string why = Unusable(p.name()); !why.empty()) return FieldError(path + ".name", why);
    if (IsFunction(p.name())) {
      return FieldError(path + ".name", absl::StrCat("\"", p.name(), "\" is a function of the expressions"));
    }
    if (!names.insert(p.name()).second) {
      const bool dim = std::find(spec.dims().begin(), spec.dims().end(), p.name()) != spec.dims().end();
      return FieldError(path + ".name", absl::StrCat(dim ? "parameter \"" : "duplicate parameter \"", p.name(),
                                              dim ? "\" has the name of a dimension" : "\""));
    }
    if (p.values().empty()) return FieldError(path + ".values", "empty");
    if (p.values_size() > kMaxValuesPerParam) return FieldError(path + ".values", absl::StrCat("more than ", kMaxValuesPerParam));
    if (std::set<int64_t>(p.values().begin(), p.values().end()).size() != static_cast<size_t>(p.values_size())) {
      return FieldError(path + ".values", "duplicate value");
    }
    if (p.pass() == v1::SPEC_PASS_TEMPLATE) template_params.insert(p.name());
  }
  for (const auto& [pos, len] : Identifiers(targs)) {
    const std::string id = targs.substr(pos, len);
    if (!template_params.contains(id)) {
      return FieldError("kernel", absl::StrCat("template argument \"", id, "\" is not a parameter with pass = \"template\""));
    }
    template_params.erase(id);
  }
  if (!template_params.empty()) {
    return FieldError("kernel", absl::StrCat("parameter \"", *template_params.begin(),
                                      "\" has pass = \"template\" but is not a template argument of the kernel"));
  }
  std::set<std::string> arg_names;
  bool has_output = false;
  for (int i = 0; i < spec.arguments_size(); ++i) {
    const v1::SpecArgument& a = spec.arguments(i);
    const std::string path = absl::StrCat("arguments[", i, "]");
    if (a.name().empty()) return FieldError(path + ".name", "missing");
    if (const std::string why = Unusable(a.name()); !why.empty()) return FieldError(path + ".name", why);
    if (!arg_names.insert(a.name()).second) return FieldError(path + ".name", absl::StrCat("duplicate argument \"", a.name(), "\""));
    if (a.has_buffer()) {
      if (a.buffer().type() == v1::SPEC_TYPE_UNSPECIFIED) return FieldError(path + ".type", "missing");
      if (a.buffer().role() == v1::SPEC_ROLE_UNSPECIFIED) return FieldError(path + ".role", "missing (in, out or inout)");
      has_output |= a.buffer().role() != v1::SPEC_ROLE_IN;
      TUNED_RETURN_IF_ERROR(CheckFill(a.buffer(), path));
    } else if (a.has_scalar()) {
      const v1::SpecType t = a.scalar().type();
      if (t == v1::SPEC_TYPE_UNSPECIFIED) return FieldError(path + ".type", "missing");
      if (t != v1::SPEC_TYPE_F32 && t != v1::SPEC_TYPE_F64 && t != v1::SPEC_TYPE_I32 && t != v1::SPEC_TYPE_I64) {
        return FieldError(path + ".type", absl::StrCat("a scalar is f32, f64, i32 or i64, not ", std::string(TypeName(t))));
      }
    } else {
      return FieldError(path, "neither a buffer nor a scalar");
    }
  }
  if (!has_output) return FieldError("arguments", "no output buffer (role out or inout) to verify");
  const v1::SpecVerification& v = spec.verification();
  const bool by_kernel = !v.reference_kernel().empty(), by_config = !v.reference_config().empty();
  if (by_kernel == by_config) {
    return FieldError("verification", "give either a reference kernel (reference) or a reference config (config)");
  }
  if (by_kernel && !has_kernel(v.reference_kernel())) {
    return FieldError("verification.reference", absl::StrCat("no __global__ function \"", v.reference_kernel(), "\" in the source"));
  }
  if (!by_kernel && v.has_reference_launch()) return FieldError("verification.launch", "only a reference kernel takes it");
  if (!std::isfinite(v.rtol()) || v.rtol() < 0 || v.rtol() >= 1) {
    return FieldError("verification.rtol", absl::StrCat(v.rtol(), " is not in [0, 1)"));
  }
  if (!std::isfinite(v.atol()) || v.atol() < 0) return FieldError("verification.atol", absl::StrCat(v.atol(), " is not >= 0"));
  if (spec.has_work()) {
    if (spec.work().unit() != "GFLOPS" && spec.work().unit() != "GB/s") {
      return FieldError("work.unit", absl::StrCat("unknown unit \"", spec.work().unit(), "\" (GFLOPS or GB/s)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Expr> CompileAt(const std::string& path, const std::string& text, const std::vector<std::string>& vars) {
  if (std::ssize(text) > kMaxExpressionChars) {
    return FieldError(path, absl::StrCat("expression of ", text.size(), " characters, more than ", kMaxExpressionChars));
  }
  auto e = Expr::Compile(text, vars);
  if (!e.ok()) return Prefix(path, e.status());
  return e;
}

absl::StatusOr<Compiled::Launch> CompileLaunch(const std::string& path, const v1::SpecLaunchExpr& l,
                                               const std::vector<std::string>& vars) {
  Compiled::Launch out;
  for (auto [key, list, into] : {std::tuple{"block", &l.block(), &out.block}, {"grid", &l.grid(), &out.grid}}) {
    if (list->empty()) return FieldError(absl::StrCat(path, ".", key), "missing");
    if (list->size() > 3) return FieldError(absl::StrCat(path, ".", key), "more than 3 entries (x, y, z)");
    for (int i = 0; i < list->size(); ++i) {
      auto e = CompileAt(absl::StrCat(path, ".", key, "[", i, "]"), list->Get(i), vars);
      if (!e.ok()) return e.status();
      into->push_back(*std::move(e));
    }
  }
  if (!l.shared_memory_bytes().empty()) {
    auto e = CompileAt(path + ".shared_memory_bytes", l.shared_memory_bytes(), vars);
    if (!e.ok()) return e.status();
    out.smem = *std::move(e);
  }
  return out;
}

absl::StatusOr<Compiled> CompileSpec(const v1::KernelSpec& spec, bool check_source = true) {
  TUNED_RETURN_IF_ERROR(CheckStructure(spec, check_source));
  Compiled c;
  c.vars.assign(spec.dims().begin(), spec.dims().end());
  c.ndims = spec.dims_size();
  for (const auto& p : spec.params()) c.vars.push_back(p.name());
  for (int i = 0; i < spec.restrictions_size(); ++i) {
    const std::string path = absl::StrCat("restrictions[", i, "]");
    auto e = CompileAt(path, spec.restrictions(i), c.vars);
    if (!e.ok()) return e.status();
    if (!e->IsBoolean()) {
      return FieldError(path, absl::StrCat("\"", e->text(), "\" is not boolean: its top-level operator must be a "
                                    "comparison (== != < <= > >=) or logical (&& || !)"));
    }
    bool dims = false;
    int level = -1;
    for (const std::string& u : e->used()) {
      const int at = static_cast<int>(std::find(c.vars.begin(), c.vars.end(), u) - c.vars.begin());
      if (at < c.ndims) dims = true;
      else level = std::max(level, at - c.ndims);
    }
    c.uses_dims.push_back(dims);
    c.level.push_back(level);
    c.restrictions.push_back(*std::move(e));
  }
  auto l = CompileLaunch("launch", spec.launch(), c.vars);
  if (!l.ok()) return l.status();
  c.launch = *std::move(l);
  if (!spec.verification().reference_kernel().empty()) {
    auto r = CompileLaunch("verification.launch", spec.verification().reference_launch(), c.vars);
    if (!r.ok()) return r.status();
    c.reference = *std::move(r);
  }
  for (int i = 0; i < spec.arguments_size(); ++i) {
    const v1::SpecArgument& a = spec.arguments(i);
    // A buffer's size and a scalar's value are over the dims only: every
    // config of a problem runs on the same arguments.
    const std::vector<std::string> dim_vars(c.vars.begin(), c.vars.begin() + c.ndims);
    auto e = a.has_buffer() ? CompileAt(absl::StrCat("arguments[", i, "].size"), a.buffer().size(), dim_vars)
                            : CompileAt(absl::StrCat("arguments[", i, "].value"), a.scalar().value(), dim_vars);
    if (!e.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          e.status().message(), " (a buffer's size and a scalar's value may use the dimensions only)"));
    }
    if (!e.ok()) return e.status();
    c.args.push_back(*std::move(e));
  }
  if (spec.has_work()) {
    auto e = CompileAt("work.expression", spec.work().expression(), c.vars);
    if (!e.ok()) return e.status();
    c.work = *std::move(e);
  }
  return c;
}

// Depth-first over the params in order, pruning with each restriction as
// soon as its last param has a value. `vals` holds the dims' values.
absl::StatusOr<std::vector<Config>> Enumerate(const v1::KernelSpec& spec, const Compiled& c,
                                              std::vector<int64_t> vals, bool with_dims) {
  std::vector<Config> out;
  int64_t visited = 0;
  const int n = spec.params_size();
  auto holds = [&](int level) -> absl::StatusOr<bool> {
    for (size_t r = 0; r < c.restrictions.size(); ++r) {
      if (c.level[r] != level || (c.uses_dims[r] && !with_dims)) continue;
      auto b = c.restrictions[r].EvaluateBool(vals);
      if (!b.ok()) return Prefix(absl::StrCat("restrictions[", r, "]"), b.status());
      if (!*b) return false;
    }
    return true;
  };
  std::function<absl::Status(int)> dfs = [&](int level) -> absl::Status {
    if (level == n) {
      Config cfg;
      for (int i = 0; i < n; ++i) cfg[spec.params(i).name()] = vals[c.ndims + i];
      out.push_back(std::move(cfg));
      if (std::ssize(out) > kMaxSpaceConfigs) {
        return FieldError("params", absl::StrCat("the space has more than ", kMaxSpaceConfigs,
                                          " configs after restrictions (the limit); add restrictions or drop values"));
      }
      return absl::OkStatus();
    }
    for (int64_t v : spec.params(level).values()) {
      if (++visited > kMaxEnumerated) {
        return FieldError("params", absl::StrCat("more than ", kMaxEnumerated, " partial configs to enumerate; add "
                                          "restrictions over fewer parameters or drop values"));
      }
      vals[c.ndims + level] = v;
      auto ok = holds(level);
      if (!ok.ok()) return ok.status();
      if (*ok) {
        TUNED_RETURN_IF_ERROR(dfs(level + 1));
      }
    }
    return absl::OkStatus();
  };
  vals.resize(c.vars.size(), 0);
  auto ok = holds(-1);
  if (!ok.ok()) return ok.status();
  if (*ok) {
    TUNED_RETURN_IF_ERROR(dfs(0));
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> DimValues(const v1::KernelSpec& spec, const Dims& dims) {
  std::vector<int64_t> vals;
  for (const std::string& d : spec.dims()) {
    auto it = dims.find(d);
    if (it == dims.end()) return FieldError("dims", absl::StrCat("no value for dimension \"", d, "\""));
    if (it->second < 1) return FieldError("dims", absl::StrCat("dimension ", d, " = ", it->second, " is not >= 1"));
    vals.push_back(it->second);
  }
  for (const auto& [k, v] : dims) {
    if (std::find(spec.dims().begin(), spec.dims().end(), k) == spec.dims().end()) {
      return FieldError("dims", absl::StrCat("\"", k, "\" is not a dimension of the spec"));
    }
  }
  return vals;
}

// Whether `config` names every parameter with one of its values and nothing else.
absl::Status CheckConfig(const v1::KernelSpec& spec, const Config& config) {
  for (const auto& p : spec.params()) {
    auto it = config.find(p.name());
    if (it == config.end()) return absl::InvalidArgumentError(absl::StrCat("no value for parameter \"", p.name(), "\""));
    if (std::find(p.values().begin(), p.values().end(), it->second) == p.values().end()) {
      return absl::InvalidArgumentError(absl::StrCat(p.name(), " = ", it->second, " is not one of its values"));
    }
  }
  if (config.size() != static_cast<size_t>(spec.params_size())) {
    for (const auto& entry : config) {
      const std::string& k = entry.first;  // a name, not a structured binding: clang 14 captures none
      if (std::none_of(spec.params().begin(), spec.params().end(), [&](const auto& p) { return p.name() == k; })) {
        return absl::InvalidArgumentError(absl::StrCat("\"", k, "\" is not a parameter"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Geometry> EvalGeometry(const std::string& path, const Compiled::Launch& l,
                                      absl::Span<const int64_t> vals, const std::string& at) {
  Geometry g;
  for (auto [key, exprs, d] : {std::tuple{"block", &l.block, &g.block}, {"grid", &l.grid, &g.grid}}) {
    int64_t* xyz[3] = {&d->x, &d->y, &d->z};
    for (size_t i = 0; i < exprs->size(); ++i) {
      const std::string p = absl::StrCat(path, ".", key, "[", i, "]");
      auto v = (*exprs)[i].EvaluateInt(vals);
      if (!v.ok()) return Prefix(p, absl::Status(v.status().code(), absl::StrCat(v.status().message(), " at ", at)));
      if (*v < 1) return FieldError(p, absl::StrCat("value ", *v, " at ", at, ": each must be at least 1"));
      *xyz[i] = *v;
    }
  }
  const std::string b = path + ".block";
  if (g.block.x > 1024 || g.block.y > 1024 || g.block.z > 64 || g.block.x * g.block.y * g.block.z > 1024) {
    return FieldError(b, absl::StrCat(g.block.x, "x", g.block.y, "x", g.block.z, " threads at ", at,
                               ": CUDA allows x, y <= 1024, z <= 64, x*y*z <= 1024 (restrict the parameters)"));
  }
  if (g.grid.x > 2147483647 || g.grid.y > 65535 || g.grid.z > 65535) {
    return FieldError(path + ".grid", absl::StrCat(g.grid.x, "x", g.grid.y, "x", g.grid.z, " blocks at ", at,
                                            ": CUDA allows x < 2^31, y, z <= 65535"));
  }
  if (l.smem) {
    auto v = l.smem->EvaluateInt(vals);
    const std::string p = path + ".shared_memory_bytes";
    if (!v.ok()) return Prefix(p, absl::Status(v.status().code(), absl::StrCat(v.status().message(), " at ", at)));
    if (*v < 0 || *v > 232448) return FieldError(p, absl::StrCat(*v, " bytes at ", at, ": not in [0, 232448 (227 KiB)]"));
    g.shared_memory_bytes = *v;
  }
  return g;
}

// Every argument's value (buffers' sizes, scalars), over the dims' values
// `dim_vals`; `at` names the point in errors.
absl::StatusOr<std::vector<ArgumentValue>> ArgumentsAt(const v1::KernelSpec& spec, const Compiled& c,
                                                       absl::Span<const int64_t> dim_vals, const std::string& at) {
  std::vector<ArgumentValue> out;
  for (int i = 0; i < spec.arguments_size(); ++i) {
    const v1::SpecArgument& a = spec.arguments(i);
    ArgumentValue v{.name = a.name(), .is_buffer = a.has_buffer()};
    const std::string path = absl::StrCat("arguments[", i, "].", a.has_buffer() ? "size" : "value");
    auto fail = [&](const absl::Status& s) {
      return Prefix(path, absl::Status(s.code(), absl::StrCat(s.message(), " at ", at)));
    };
    if (a.has_buffer()) {
      v.type = a.buffer().type();
      auto n = c.args[i].EvaluateInt(dim_vals);
      if (!n.ok()) return fail(n.status());
      if (*n < 1 || *n > kMaxBufferElements) {
        return FieldError(path, absl::StrCat("buffer \"", a.name(), "\" of ", *n, " elements at ", at,
                                      ": not in [1, 2^31 - 1]"));
      }
      v.elements = *n;
      v.bytes = *n * TypeBytes(v.type);
    } else {
      v.type = a.scalar().type();
      const bool integer = v.type == v1::SPEC_TYPE_I32 || v.type == v1::SPEC_TYPE_I64;
      absl::StatusOr<double> x = c.args[i].Evaluate(dim_vals);
      if (integer && x.ok()) {
        auto y = c.args[i].EvaluateInt(dim_vals);
        x = y.ok() ? absl::StatusOr<double>(static_cast<double>(*y)) : y.status();
      }
      if (!x.ok()) return fail(x.status());
      if (v.type == v1::SPEC_TYPE_I32 && (*x < -2147483648.0 || *x > 2147483647.0)) {
        return FieldError(path, absl::StrCat("value ", *x, " at ", at, " does not fit i32"));
      }
      v.scalar = *x;
    }
    out.push_back(std::move(v));
  }
  return out;
}

absl::StatusOr<SpecLaunch> LaunchAt(const v1::KernelSpec& spec, const Compiled& c, absl::Span<const int64_t> vals) {
  const std::string at = Describe(c.vars, vals);
  SpecLaunch out;
  auto g = EvalGeometry("launch", c.launch, vals, at);
  if (!g.ok()) return g.status();
  out.kernel = *g;
  if (c.reference) {
    auto r = EvalGeometry("verification.launch", *c.reference, vals, at);
    if (!r.ok()) return r.status();
    out.reference = *r;
  }
  auto args = ArgumentsAt(spec, c, vals.subspan(0, c.ndims), at);
  if (!args.ok()) return args.status();
  out.arguments = *std::move(args);
  if (c.work) {
    auto w = c.work->Evaluate(vals);
    if (!w.ok()) return Prefix("work.expression", absl::Status(w.status().code(), absl::StrCat(w.status().message(), " at ", at)));
    if (*w < 0) return FieldError("work.expression", absl::StrCat("value ", *w, " at ", at, " is negative"));
    out.work = *w;
  }
  Config config;
  for (int i = 0; i < spec.params_size(); ++i) config[spec.params(i).name()] = vals[c.ndims + i];
  KernelInstance k = Instantiate(spec, config);
  out.name_expression = std::move(k.name_expression);
  out.defines = std::move(k.defines);
  return out;
}

// The values of dims then params for `config` at `dims`.
std::vector<int64_t> Values(const v1::KernelSpec& spec, std::vector<int64_t> dim_vals, const Config& config) {
  for (const auto& p : spec.params()) dim_vals.push_back(config.at(p.name()));
  return dim_vals;
}

// The limits that `vals`' config breaks at every problem: a block or a
// shared memory size that no dimension changes (the expressions that use a
// dimension are checked at each problem, by LaunchAt). `at` names the config.
absl::Status CheckFixedLimits(const std::string& path, const Compiled::Launch& l, const Compiled& c,
                              absl::Span<const int64_t> vals, const std::string& at) {
  const std::vector<std::string> dims(c.vars.begin(), c.vars.begin() + c.ndims);
  auto fixed = [&](const Expr& e) {
    return std::none_of(e.used().begin(), e.used().end(), [&](const std::string& v) {
      return std::find(dims.begin(), dims.end(), v) != dims.end();
    });
  };
  int64_t xyz[3] = {1, 1, 1};  // a component that uses a dimension counts as 1 (its least)
  for (size_t i = 0; i < l.block.size(); ++i) {
    if (!fixed(l.block[i])) continue;
    auto v = l.block[i].EvaluateInt(vals);
    const std::string p = absl::StrCat(path, ".block[", i, "]");
    if (!v.ok()) return Prefix(p, absl::Status(v.status().code(), absl::StrCat(v.status().message(), " at ", at)));
    if (*v < 1) return FieldError(p, absl::StrCat("value ", *v, " at ", at, ": each must be at least 1"));
    xyz[i] = *v;
  }
  if (xyz[0] > 1024 || xyz[1] > 1024 || xyz[2] > 64 || xyz[0] * xyz[1] * xyz[2] > 1024) {
    return FieldError(path + ".block", absl::StrCat(xyz[0], "x", xyz[1], "x", xyz[2], " threads at ", at,
                                            " for every problem: CUDA allows x, y <= 1024, z <= 64, "
                                            "x*y*z <= 1024 (restrict the parameters)"));
  }
  if (l.smem && fixed(*l.smem)) {
    auto v = l.smem->EvaluateInt(vals);
    const std::string p = path + ".shared_memory_bytes";
    if (!v.ok()) return Prefix(p, absl::Status(v.status().code(), absl::StrCat(v.status().message(), " at ", at)));
    if (*v < 0 || *v > 232448) {
      return FieldError(p, absl::StrCat(*v, " bytes at ", at,
                                 " for every problem: not in [0, 232448 (227 KiB)] (restrict the parameters)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ProblemAt(const v1::KernelSpec& spec, const Compiled& c, const Dims& dims) {
  auto dv = DimValues(spec, dims);
  if (!dv.ok()) return dv.status();
  auto space = Enumerate(spec, c, *dv, true);
  if (!space.ok()) return space.status();
  const std::vector<std::string> dim_names(spec.dims().begin(), spec.dims().end());
  const std::string at = Describe(dim_names, *dv);
  if (space->empty()) return FieldError("restrictions", absl::StrCat("no config of the space holds at ", at));
  for (const Config& config : *space) {
    if (auto l = LaunchAt(spec, c, Values(spec, *dv, config)); !l.ok()) return l.status();
  }
  // The reference config must hold at every problem; the default config
  // need not (such a problem has no baseline).
  if (const auto& ref = spec.verification().reference_config(); !ref.empty()) {
    if (std::find(space->begin(), space->end(), Config(ref.begin(), ref.end())) == space->end()) {
      return FieldError("verification.config", absl::StrCat("not in the space at ", at, " (a restriction fails)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

KernelInstance Instantiate(const v1::KernelSpec& spec, const Config& config) {
  auto value = [&](const std::string& name) {
    auto it = config.find(name);
    return it == config.end() ? std::string("0") : std::to_string(it->second);
  };
  auto [base, targs] = SplitKernel(spec.kernel());
  std::string args = targs;
  const auto ids = Identifiers(targs);
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    args.replace(it->first, it->second, value(targs.substr(it->first, it->second)));
  }
  KernelInstance out{base + args, {}};
  for (const auto& p : spec.params()) {
    if (p.pass() == v1::SPEC_PASS_DEFINE) out.defines.push_back(absl::StrCat("-D", p.name(), "=", value(p.name())));
  }
  return out;
}

absl::Status ValidateSpec(const v1::KernelSpec& spec, bool check_source) {
  auto c = CompileSpec(spec, check_source);
  if (!c.ok()) return c.status();
  auto space = Enumerate(spec, *c, std::vector<int64_t>(c->ndims, 0), false);
  if (!space.ok()) return space.status();
  if (space->empty()) return FieldError("restrictions", "the space is empty: no config holds every restriction");
  for (auto [path, map] : {std::pair{"default_config", &spec.default_config()},
                           {"verification.config", &spec.verification().reference_config()}}) {
    if (map->empty()) continue;
    const Config config(map->begin(), map->end());
    if (auto s = CheckConfig(spec, config); !s.ok()) return Prefix(path, s);
    if (std::find(space->begin(), space->end(), config) == space->end()) {
      return FieldError(path, "not in the space (a restriction fails)");
    }
  }
  // Without sample_dims too: a config whose block or shared memory breaks
  // CUDA's limits whatever the problem could never run.
  const std::vector<std::string> params(c->vars.begin() + c->ndims, c->vars.end());
  for (const Config& config : *space) {
    const std::vector<int64_t> vals = Values(spec, std::vector<int64_t>(c->ndims, 0), config);
    const std::string at = Describe(params, absl::Span<const int64_t>(vals).subspan(c->ndims));
    TUNED_RETURN_IF_ERROR(CheckFixedLimits("launch", c->launch, *c, vals, at));
    if (c->reference) TUNED_RETURN_IF_ERROR(CheckFixedLimits("verification.launch", *c->reference, *c, vals, at));
  }
  for (int i = 0; i < spec.sample_dims_size(); ++i) {
    const Dims dims(spec.sample_dims(i).dims().begin(), spec.sample_dims(i).dims().end());
    if (auto s = ProblemAt(spec, *c, dims); !s.ok()) return Prefix(absl::StrCat("sample_dims[", i, "]"), s);
  }
  return absl::OkStatus();
}

absl::Status ValidateProblem(const v1::KernelSpec& spec, const Dims& dims) {
  auto c = CompileSpec(spec);
  if (!c.ok()) return c.status();
  return ProblemAt(spec, *c, dims);
}

absl::StatusOr<std::vector<Config>> EnumerateSpace(const v1::KernelSpec& spec) {
  auto c = CompileSpec(spec);
  if (!c.ok()) return c.status();
  return Enumerate(spec, *c, std::vector<int64_t>(c->ndims, 0), false);
}

absl::StatusOr<std::vector<Config>> EnumerateSpace(const v1::KernelSpec& spec, const Dims& dims) {
  auto c = CompileSpec(spec);
  if (!c.ok()) return c.status();
  auto dv = DimValues(spec, dims);
  if (!dv.ok()) return dv.status();
  return Enumerate(spec, *c, *dv, true);
}

namespace {
absl::StatusOr<SpecLaunch> LaunchOf(const v1::KernelSpec& spec, const Compiled& c, const Config& config,
                                    const Dims& dims) {
  auto dv = DimValues(spec, dims);
  if (!dv.ok()) return dv.status();
  if (auto s = CheckConfig(spec, config); !s.ok()) return Prefix("config", s);
  const std::vector<int64_t> vals = Values(spec, *dv, config);
  for (size_t r = 0; r < c.restrictions.size(); ++r) {
    auto b = c.restrictions[r].EvaluateBool(vals);
    if (!b.ok()) return Prefix(absl::StrCat("restrictions[", r, "]"), b.status());
    if (!*b) {
      return FieldError(absl::StrCat("restrictions[", r, "]"),
                 absl::StrCat("\"", c.restrictions[r].text(), "\" fails at ", Describe(c.vars, vals)));
    }
  }
  return LaunchAt(spec, c, vals);
}
}  // namespace

absl::StatusOr<SpecLaunch> EvaluateLaunch(const v1::KernelSpec& spec, const Config& config, const Dims& dims) {
  auto c = CompileSpec(spec);
  if (!c.ok()) return c.status();
  return LaunchOf(spec, *c, config, dims);
}

struct CompiledSpec::Impl {
  v1::KernelSpec spec;
  Compiled compiled;
};

absl::StatusOr<std::unique_ptr<CompiledSpec>> CompiledSpec::Create(const v1::KernelSpec& spec,
                                                                  bool check_source) {
  auto c = CompileSpec(spec, check_source);
  if (!c.ok()) return c.status();
  auto impl = std::make_unique<Impl>(Impl{spec, *std::move(c)});
  return std::unique_ptr<CompiledSpec>(new CompiledSpec(std::move(impl)));
}

CompiledSpec::CompiledSpec(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledSpec::~CompiledSpec() = default;

absl::StatusOr<SpecLaunch> CompiledSpec::Launch(const Config& config, const Dims& dims) const {
  return LaunchOf(impl_->spec, impl_->compiled, config, dims);
}

absl::StatusOr<std::vector<Config>> CompiledSpec::Space(const Dims& dims) const {
  auto dv = DimValues(impl_->spec, dims);
  if (!dv.ok()) return dv.status();
  return Enumerate(impl_->spec, impl_->compiled, *dv, true);
}

absl::StatusOr<std::vector<ArgumentValue>> CompiledSpec::Arguments(const Dims& dims) const {
  auto dv = DimValues(impl_->spec, dims);
  if (!dv.ok()) return dv.status();
  const std::vector<std::string> names(impl_->spec.dims().begin(), impl_->spec.dims().end());
  return ArgumentsAt(impl_->spec, impl_->compiled, *dv, Describe(names, *dv));
}

absl::StatusOr<std::vector<Config>> CompiledSpec::Space() const {
  return Enumerate(impl_->spec, impl_->compiled, std::vector<int64_t>(impl_->compiled.ndims, 0), false);
}

}  // namespace tuned::spec
