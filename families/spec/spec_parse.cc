// Reading kernel specs: TOML (toml++) and JSON (nlohmann-json) are both
// converted to one JSON tree, which one reader turns into v1::KernelSpec, so
// that both formats take the same keys and give the same messages.
#include <fstream>
#include <filesystem>
#include <initializer_list>
#include <sstream>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "families/spec/spec.h"

namespace tuned::spec {
namespace {

/// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no
/// surrogates, at most U+10FFFF); where not, `*at` is the first bad byte's
/// offset. Neither the standard library nor Abseil's public API has this.
bool IsUtf8(std::string_view s, size_t* at) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    // Continuation bytes after the lead byte: 0 (ASCII) to 3; -1: no lead byte.
    const int n = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xE ? 2 : (b >> 3) == 0x1E ? 3 : -1;
    if (n < 0 || i + n >= s.size()) {
      *at = i;
      return false;
    }
    uint32_t cp = n == 0 ? b : b & (0x3F >> n);
    for (int k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c >> 6) != 0x2) {
        *at = i;
        return false;
      }
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *at = i;
      return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> ReadTextFile(const std::filesystem::path& path, int64_t max_bytes,
                                         std::string_view what_view) {
  const std::string what(what_view);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return absl::NotFoundError(absl::StrCat(what, ": cannot read ", path.string()));
  }
  if (!std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", path.string(),
        std::filesystem::is_directory(status) ? " is a folder" : " is not a regular file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(what, ": cannot read ", path.string()));
  std::string text(static_cast<size_t>(max_bytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (std::ssize(text) > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", path.string(), " has more than the limit of ", max_bytes, " bytes"));
  }
  if (size_t at = 0; !IsUtf8(text, &at)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", path.string(), " is not UTF-8 text (byte ", at, ")"));
  }
  return text;
}

namespace {

using json = nlohmann::json;

absl::StatusOr<json> TomlToJson(const toml::node& n, const std::string& path) {
  if (const auto* t = n.as_table()) {
    json o = json::object();
    for (const auto& [k, v] : *t) {
      auto c = TomlToJson(v, path.empty() ? std::string(k.str()) : absl::StrCat(path, ".", std::string(k.str())));
      if (!c.ok()) return c.status();
      o[std::string(k.str())] = *std::move(c);
    }
    return o;
  }
  if (const auto* a = n.as_array()) {
    json o = json::array();
    for (size_t i = 0; i < a->size(); ++i) {
      auto c = TomlToJson((*a)[i], absl::StrCat(path, "[", i, "]"));
      if (!c.ok()) return c.status();
      o.push_back(*std::move(c));
    }
    return o;
  }
  if (auto v = n.value_exact<std::string>()) return json(*v);
  if (auto v = n.value_exact<int64_t>()) return json(*v);
  if (auto v = n.value_exact<double>()) return json(*v);
  if (auto v = n.value_exact<bool>()) return json(*v);
  return FieldError(path, "dates and times are not spec values");
}

class Reader {
 public:
  explicit Reader(std::optional<std::filesystem::path> dir) : dir_(std::move(dir)) {}

  absl::Status Keys(const json& o, const std::string& path, std::initializer_list<std::string> allowed) {
    if (!o.is_object()) return FieldError(path.empty() ? "spec" : path, "expected a table");
    for (const auto& [k, v] : o.items()) {
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        return FieldError(Join(path, k), absl::StrCat("unknown key (known: ", absl::StrJoin(allowed, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }
  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  }
  // Sets *out to o[key] if present.
  absl::Status Str(const json& o, const std::string& path, const std::string& key, std::string* out) {
    auto it = o.find(key);
    if (it == o.end()) return absl::OkStatus();
    if (!it->is_string()) return FieldError(Join(path, key), "expected a string");
    *out = it->get<std::string>();
    return absl::OkStatus();
  }
  absl::Status Num(const json& o, const std::string& path, const std::string& key, double* out) {
    auto it = o.find(key);
    if (it == o.end()) return absl::OkStatus();
    if (!it->is_number()) return FieldError(Join(path, key), "expected a number");
    *out = it->get<double>();
    return absl::OkStatus();
  }
  // An expression: a string, or an integer written as a number.
  absl::Status ExprStr(const json& v, const std::string& path, std::string* out) {
    if (v.is_string()) {
      *out = v.get<std::string>();
    } else if (v.is_number_integer()) {
      *out = std::to_string(v.get<int64_t>());
    } else {
      return FieldError(path, "expected an expression (a string or an integer)");
    }
    return absl::OkStatus();
  }
  absl::Status ExprList(const json& o, const std::string& path, const std::string& key,
                        google::protobuf::RepeatedPtrField<std::string>* out) {
    auto it = o.find(key);
    if (it == o.end()) return absl::OkStatus();
    const std::string p = Join(path, key);
    if (!it->is_array()) return ExprStr(*it, p, out->Add());
    for (size_t i = 0; i < it->size(); ++i) {
      TUNED_RETURN_IF_ERROR(ExprStr((*it)[i], absl::StrCat(p, "[", i, "]"), out->Add()));
    }
    return absl::OkStatus();
  }
  absl::Status StrList(const json& o, const std::string& path, const std::string& key,
                       google::protobuf::RepeatedPtrField<std::string>* out) {
    auto it = o.find(key);
    if (it == o.end()) return absl::OkStatus();
    const std::string p = Join(path, key);
    if (!it->is_array()) return FieldError(p, "expected a list of strings");
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) return FieldError(absl::StrCat(p, "[", i, "]"), "expected a string");
      out->Add((*it)[i].get<std::string>());
    }
    return absl::OkStatus();
  }
  absl::Status IntMap(const json& v, const std::string& path, google::protobuf::Map<std::string, int64_t>* out) {
    if (!v.is_object()) return FieldError(path, "expected a table of integers");
    for (const auto& [k, x] : v.items()) {
      if (!x.is_number_integer()) return FieldError(Join(path, k), "expected an integer");
      (*out)[k] = x.get<int64_t>();
    }
    return absl::OkStatus();
  }
  template <typename E>
  absl::Status Enum(const json& o, const std::string& path, const std::string& key,
                    std::initializer_list<std::pair<std::string, E>> names, E* out) {
    std::string s;
    if (auto st = Str(o, path, key, &s); !st.ok() || s.empty()) return st;
    std::vector<std::string> known;
    for (const auto& [n, e] : names) {
      if (n == s) {
        *out = e;
        return absl::OkStatus();
      }
      known.push_back(n);
    }
    return FieldError(Join(path, key), absl::StrCat("unknown ", key, " \"", s, "\" (known: ", absl::StrJoin(known, ", "), ")"));
  }
  absl::Status Type(const json& o, const std::string& path, v1::SpecType* out) {
    using namespace v1;
    return Enum<SpecType>(o, path, "type",
                          {{"f32", SPEC_TYPE_F32}, {"f64", SPEC_TYPE_F64}, {"f16", SPEC_TYPE_F16},
                           {"bf16", SPEC_TYPE_BF16}, {"i32", SPEC_TYPE_I32}, {"u8", SPEC_TYPE_U8},
                           {"i64", SPEC_TYPE_I64}},
                          out);
  }
  absl::Status Launch(const json& o, const std::string& path, v1::SpecLaunchExpr* out) {
    TUNED_RETURN_IF_ERROR(Keys(o, path, {"block", "grid", "shared_memory_bytes"}));
    TUNED_RETURN_IF_ERROR(ExprList(o, path, "block", out->mutable_block()));
    TUNED_RETURN_IF_ERROR(ExprList(o, path, "grid", out->mutable_grid()));
    if (auto it = o.find("shared_memory_bytes"); it != o.end()) {
      return ExprStr(*it, Join(path, "shared_memory_bytes"), out->mutable_shared_memory_bytes());
    }
    return absl::OkStatus();
  }

  absl::Status Param(const json& o, const std::string& path, v1::SpecParam* p) {
    TUNED_RETURN_IF_ERROR(Keys(o, path, {"name", "values", "pass", "doc"}));
    TUNED_RETURN_IF_ERROR(Str(o, path, "name", p->mutable_name()));
    TUNED_RETURN_IF_ERROR(Str(o, path, "doc", p->mutable_doc()));
    v1::SpecPass pass = v1::SPEC_PASS_DEFINE;
    if (auto s = Enum<v1::SpecPass>(o, path, "pass", {{"define", v1::SPEC_PASS_DEFINE}, {"template", v1::SPEC_PASS_TEMPLATE}}, &pass);
        !s.ok()) {
      return s;
    }
    p->set_pass(pass);
    auto it = o.find("values");
    if (it == o.end()) return absl::OkStatus();
    if (!it->is_array()) return FieldError(Join(path, "values"), "expected a list of integers");
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_number_integer()) return FieldError(absl::StrCat(path, ".values[", i, "]"), "expected an integer");
      p->add_values((*it)[i].get<int64_t>());
    }
    return absl::OkStatus();
  }

  // `fill`: a name ("uniform"), or a table of one distribution and its two
  // parameters ({ uniform = [0, 255] }, { normal = [0, 2] }).
  absl::Status Fill(const json& o, const std::string& path, v1::SpecBuffer* b, v1::SpecFill* out) {
    using namespace v1;
    const std::initializer_list<std::pair<std::string, SpecFill>> names = {
        {"uniform", SPEC_FILL_UNIFORM}, {"normal", SPEC_FILL_NORMAL}, {"zeros", SPEC_FILL_ZEROS},
        {"constant", SPEC_FILL_CONSTANT}};
    auto it = o.find("fill");
    if (it == o.end() || !it->is_object()) return Enum<SpecFill>(o, path, "fill", names, out);
    const std::string p = Join(path, "fill");
    if (it->size() != 1 || !(it->contains("uniform") || it->contains("normal"))) {
      return FieldError(p, "expected a name, or a table of one key: uniform = [low, high] or normal = [mean, deviation]");
    }
    for (const auto& [key, range] : it->items()) {
      if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number()) {
        return FieldError(Join(p, key), key == "uniform" ? "expected [low, high]" : "expected [mean, deviation]");
      }
      *out = key == "uniform" ? SPEC_FILL_UNIFORM : SPEC_FILL_NORMAL;
      b->add_fill_parameters(range[0].get<double>());
      b->add_fill_parameters(range[1].get<double>());
    }
    return absl::OkStatus();
  }

  absl::Status Argument(const json& o, const std::string& path, v1::SpecArgument* a) {
    TUNED_RETURN_IF_ERROR(Keys(o, path, {"name", "type", "size", "role", "fill", "fill_value", "reset", "value"}));
    TUNED_RETURN_IF_ERROR(Str(o, path, "name", a->mutable_name()));
    const bool has_size = o.contains("size"), has_value = o.contains("value");
    if (has_size == has_value) {
      return FieldError(path, "give either `size` (a buffer) or `value` (a scalar), not both or neither");
    }
    v1::SpecType type = v1::SPEC_TYPE_UNSPECIFIED;
    TUNED_RETURN_IF_ERROR(Type(o, path, &type));
    if (has_value) {
      for (const char* k : {"role", "fill", "fill_value", "reset"}) {
        if (o.contains(k)) return FieldError(Join(path, k), "only buffers (with `size`) take it");
      }
      a->mutable_scalar()->set_type(type);
      return ExprStr(o["value"], Join(path, "value"), a->mutable_scalar()->mutable_value());
    }
    v1::SpecBuffer* b = a->mutable_buffer();
    b->set_type(type);
    TUNED_RETURN_IF_ERROR(ExprStr(o["size"], Join(path, "size"), b->mutable_size()));
    using namespace v1;
    SpecRole role = SPEC_ROLE_UNSPECIFIED;
    if (auto s = Enum<SpecRole>(o, path, "role", {{"in", SPEC_ROLE_IN}, {"out", SPEC_ROLE_OUT}, {"inout", SPEC_ROLE_INOUT}}, &role);
        !s.ok()) {
      return s;
    }
    b->set_role(role);
    SpecFill fill = SPEC_FILL_UNSPECIFIED;
    TUNED_RETURN_IF_ERROR(Fill(o, path, b, &fill));
    b->set_fill(fill);
    SpecReset reset = SPEC_RESET_UNSPECIFIED;
    if (auto s = Enum<SpecReset>(o, path, "reset",
                                 {{"verification", SPEC_RESET_VERIFICATION}, {"every_run", SPEC_RESET_EVERY_RUN}},
                                 &reset);
        !s.ok()) {
      return s;
    }
    b->set_reset(reset);
    double v = 0;
    TUNED_RETURN_IF_ERROR(Num(o, path, "fill_value", &v));
    if (o.contains("fill_value") && fill != SPEC_FILL_CONSTANT) {
      return FieldError(Join(path, "fill_value"), "only fill = \"constant\" takes it");
    }
    b->set_fill_value(v);
    return absl::OkStatus();
  }

  absl::StatusOr<v1::KernelSpec> Spec(const json& o) {
    v1::KernelSpec spec;
    if (auto s = Keys(o, "", {"name", "description", "source", "source_file", "kernel", "params", "restrictions",
                             "dims", "arguments", "launch", "verification", "work", "default_config", "sample_dims"});
        !s.ok()) {
      return s;
    }
    for (auto [key, field] : {std::pair{"name", spec.mutable_name()}, {"description", spec.mutable_description()},
                              {"source", spec.mutable_source()}, {"kernel", spec.mutable_kernel()}}) {
      TUNED_RETURN_IF_ERROR(Str(o, "", key, field));
    }
    if (o.contains("source_file")) {
      if (o.contains("source")) return FieldError("source_file", "give either `source` or `source_file`, not both");
      std::string file;
      TUNED_RETURN_IF_ERROR(Str(o, "", "source_file", &file));
      if (!dir_) return FieldError("source_file", "only LoadSpecFile reads files; give the CUDA text in `source`");
      auto source = ReadTextFile(*dir_ / file, kMaxSourceBytes, "source_file");
      if (!source.ok()) return source.status();
      spec.set_source(*std::move(source));
    }
    TUNED_RETURN_IF_ERROR(StrList(o, "", "restrictions", spec.mutable_restrictions()));
    TUNED_RETURN_IF_ERROR(StrList(o, "", "dims", spec.mutable_dims()));
    for (auto [key, is_param] : {std::pair{"params", true}, {"arguments", false}}) {
      auto it = o.find(key);
      if (it == o.end()) continue;
      if (!it->is_array()) return FieldError(key, "expected a list of tables");
      for (size_t i = 0; i < it->size(); ++i) {
        const std::string p = absl::StrCat(key, "[", i, "]");
        auto s = is_param ? Param((*it)[i], p, spec.add_params()) : Argument((*it)[i], p, spec.add_arguments());
        if (!s.ok()) return s;
      }
    }
    if (auto it = o.find("launch"); it != o.end()) {
      TUNED_RETURN_IF_ERROR(Launch(*it, "launch", spec.mutable_launch()));
    }
    if (auto it = o.find("verification"); it != o.end()) {
      const json& v = *it;
      v1::SpecVerification* ver = spec.mutable_verification();
      TUNED_RETURN_IF_ERROR(Keys(v, "verification", {"reference", "launch", "config", "rtol", "atol"}));
      TUNED_RETURN_IF_ERROR(Str(v, "verification", "reference", ver->mutable_reference_kernel()));
      if (auto l = v.find("launch"); l != v.end()) {
        TUNED_RETURN_IF_ERROR(Launch(*l, "verification.launch", ver->mutable_reference_launch()));
      }
      if (auto c = v.find("config"); c != v.end()) {
        TUNED_RETURN_IF_ERROR(IntMap(*c, "verification.config", ver->mutable_reference_config()));
      }
      double rtol = 0, atol = 0;
      TUNED_RETURN_IF_ERROR(Num(v, "verification", "rtol", &rtol));
      TUNED_RETURN_IF_ERROR(Num(v, "verification", "atol", &atol));
      ver->set_rtol(rtol);
      ver->set_atol(atol);
    }
    if (auto it = o.find("work"); it != o.end()) {
      TUNED_RETURN_IF_ERROR(Keys(*it, "work", {"expression", "unit"}));
      if (auto e = it->find("expression"); e != it->end()) {
        TUNED_RETURN_IF_ERROR(ExprStr(*e, "work.expression", spec.mutable_work()->mutable_expression()));
      }
      TUNED_RETURN_IF_ERROR(Str(*it, "work", "unit", spec.mutable_work()->mutable_unit()));
    }
    if (auto it = o.find("default_config"); it != o.end()) {
      TUNED_RETURN_IF_ERROR(IntMap(*it, "default_config", spec.mutable_default_config()));
    }
    if (auto it = o.find("sample_dims"); it != o.end()) {
      if (!it->is_array()) return FieldError("sample_dims", "expected a list of tables");
      for (size_t i = 0; i < it->size(); ++i) {
        auto s = IntMap((*it)[i], absl::StrCat("sample_dims[", i, "]"), spec.add_sample_dims()->mutable_dims());
        if (!s.ok()) return s;
      }
    }
    return spec;
  }

 private:
  std::optional<std::filesystem::path> dir_;
};

absl::StatusOr<json> ParseToml(std::string_view text) {
  try {
    toml::table t = toml::parse(text);
    return TomlToJson(t, "");
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat("TOML: ", std::string(e.description()), " at line ", static_cast<int>(e.source().begin.line),
                                                   ", column ", static_cast<int>(e.source().begin.column)));
  }
}

absl::StatusOr<json> ParseJson(std::string_view text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("JSON: ", e.what()));
  }
}

}  // namespace

absl::StatusOr<v1::KernelSpec> ParseSpecToml(std::string_view text) {
  if (std::ssize(text) > kMaxSpecFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat("spec: TOML of ", text.size(),
                                                   " bytes, more than the limit of ", kMaxSpecFileBytes));
  }
  auto j = ParseToml(text);
  if (!j.ok()) return j.status();
  return Reader(std::nullopt).Spec(*j);
}

absl::StatusOr<v1::KernelSpec> ParseSpecJson(std::string_view text) {
  if (std::ssize(text) > kMaxSpecFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat("spec: JSON of ", text.size(),
                                                   " bytes, more than the limit of ", kMaxSpecFileBytes));
  }
  auto j = ParseJson(text);
  if (!j.ok()) return j.status();
  return Reader(std::nullopt).Spec(*j);
}

absl::StatusOr<v1::KernelSpec> LoadSpecFile(const std::string& path) {
  auto read = ReadTextFile(path, kMaxSpecFileBytes, "spec file");
  if (!read.ok()) return read.status();
  const std::string text = *std::move(read);
  const std::filesystem::path p(path);
  auto j = p.extension() == ".json" ? ParseJson(text) : ParseToml(text);
  if (!j.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", j.status().message()));
  return Reader(p.parent_path()).Spec(*j);
}

}  // namespace tuned::spec
