#include "families/spec_family.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace tuned {

namespace {

/// The C type of an element type, as the kernel declares it.
const char* CType(v1::SpecType type) {
  switch (type) {
    case v1::SPEC_TYPE_F32: return "float";
    case v1::SPEC_TYPE_F64: return "double";
    case v1::SPEC_TYPE_F16: return "__half";
    case v1::SPEC_TYPE_BF16: return "__nv_bfloat16";
    case v1::SPEC_TYPE_I32: return "int";
    case v1::SPEC_TYPE_I64: return "long long";
    case v1::SPEC_TYPE_U8: return "unsigned char";
    default: return "void";
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<SpecFamily>> SpecFamily::Create(v1::KernelSpec spec, BuiltIn builtin) {
  const bool inline_source = builtin.parts.empty();
  TUNED_RETURN_IF_ERROR(spec::ValidateSpec(spec, /*check_source=*/inline_source));
  auto compiled = spec::CompiledSpec::Create(spec, inline_source);
  if (!compiled.ok()) return compiled.status();
  auto space = (*compiled)->Space();
  if (!space.ok()) return space.status();
  auto f = std::unique_ptr<SpecFamily>(new SpecFamily());
  f->hash_ = spec::SpecHash(spec);
  f->spec_ = std::move(spec);
  f->builtin_ = std::move(builtin);
  f->space_ = *std::move(space);
  f->in_space_ = std::set<Config>(f->space_.begin(), f->space_.end());
  for (const auto& p : f->spec_.params()) {
    f->params_.push_back({p.name(), {p.values().begin(), p.values().end()}, p.doc()});
  }
  const v1::SpecVerification& v = f->spec_.verification();
  if (!f->spec_.default_config().empty()) {
    f->baseline_name_ = absl::StrCat("default config ", f->ConfigName(f->DefaultConfig()));
  } else if (!v.reference_kernel().empty()) {
    f->baseline_name_ = absl::StrCat("reference kernel ", v.reference_kernel());
  } else {
    f->baseline_name_ = absl::StrCat(
        "reference config ", f->ConfigName(Config(v.reference_config().begin(), v.reference_config().end())));
  }
  f->idle_.push_back(*std::move(compiled));
  return f;
}

template <typename F>
auto SpecFamily::WithCompiled(F&& f) const {
  std::unique_ptr<spec::CompiledSpec> c;
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      c = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (c == nullptr) {
    // The spec compiled once in Create: it compiles again.
    c = *spec::CompiledSpec::Create(spec_, builtin_.parts.empty());
  }
  auto result = f(*c);
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(c));
  return result;
}

spec::Dims SpecFamily::DimsOf(const Shape& shape) const {
  spec::Dims dims;
  for (int i = 0; i < spec_.dims_size() && i < static_cast<int>(shape.size()); ++i) {
    dims[spec_.dims(i)] = shape[i];
  }
  return dims;
}

absl::StatusOr<spec::SpecLaunch> SpecFamily::Launch(const Config& config, const Shape& shape) const {
  const spec::Dims dims = DimsOf(shape);
  return WithCompiled([&](const spec::CompiledSpec& c) { return c.Launch(config, dims); });
}

absl::StatusOr<Config> SpecFamily::RepresentativeConfig(const Shape& shape) const {
  const Config def = DefaultConfig();
  if (!def.empty() && Launch(def, shape).ok()) return def;
  const spec::Dims dims = DimsOf(shape);
  auto space = WithCompiled([&](const spec::CompiledSpec& c) { return c.Space(dims); });
  if (!space.ok()) return space.status();
  for (const Config& c : *space) {
    if (Launch(c, shape).ok()) return c;
  }
  return absl::NotFoundError(absl::StrCat("no config of ", spec_.name(), " runs at ", ShapeString(shape)));
}

double SpecFamily::Work(const Shape& shape) const {
  if (!spec_.has_work()) return 0;
  auto config = RepresentativeConfig(shape);
  if (!config.ok()) return 0;
  auto launch = Launch(*config, shape);
  return launch.ok() && launch->work ? *launch->work : 0;
}

absl::StatusOr<std::vector<v1::KernelArgument>> SpecFamily::KernelArguments(const Shape& shape) const {
  const spec::Dims dims = DimsOf(shape);
  auto values = WithCompiled([&](const spec::CompiledSpec& c) { return c.Arguments(dims); });
  if (!values.ok()) return values.status();
  std::vector<v1::KernelArgument> out;
  for (int i = 0; i < spec_.arguments_size(); ++i) {
    const v1::SpecArgument& a = spec_.arguments(i);
    const spec::ArgumentValue& v = (*values)[i];
    v1::KernelArgument k;
    k.set_name(a.name());
    k.set_type(v.type);
    k.set_is_buffer(v.is_buffer);
    if (v.is_buffer) {
      k.set_role(a.buffer().role());
      k.set_elements(v.elements);
    } else if (v.type == v1::SPEC_TYPE_I32 || v.type == v1::SPEC_TYPE_I64) {
      k.set_int_value(static_cast<int64_t>(v.scalar));
      k.set_value(v.scalar);
    } else {
      k.set_value(v.scalar);
    }
    out.push_back(std::move(k));
  }
  return out;
}

int64_t SpecFamily::BufferBytes(const Shape& shape, v1::Math) const {
  auto args = KernelArguments(shape);
  if (!args.ok()) return 0;
  int64_t bytes = 0;
  for (const v1::KernelArgument& a : *args) {
    if (!a.is_buffer()) continue;
    const int64_t b = a.elements() * spec::TypeBytes(a.type());
    bytes += a.role() == v1::SPEC_ROLE_IN ? b : 2 * b;
  }
  return bytes;
}

int64_t SpecFamily::MaxBufferElements(const Shape& shape) const {
  auto args = KernelArguments(shape);
  if (!args.ok()) return 0;
  int64_t most = 0;
  for (const v1::KernelArgument& a : *args) {
    if (a.is_buffer()) most = std::max(most, a.elements());
  }
  return most;
}

absl::Status SpecFamily::Check(const Config& config, const v1::Device& /*device*/) const {
  TUNED_RETURN_IF_ERROR(CheckParams(config));
  if (!in_space_.contains(config)) {
    return absl::FailedPreconditionError(
        absl::StrCat(ConfigName(config), " breaks a restriction of ", spec_.name()));
  }
  return absl::OkStatus();
}

absl::Status SpecFamily::SuitsShape(const Config& config, const Shape& shape) const {
  auto launch = Launch(config, shape);
  if (!launch.ok()) return absl::FailedPreconditionError(launch.status().message());
  return absl::OkStatus();
}

std::string SpecFamily::ConfigName(const Config& config) const {
  if (builtin_.config_name) return builtin_.config_name(config);
  std::string name = spec_.name();
  for (const auto& p : spec_.params()) {
    auto it = config.find(p.name());
    absl::StrAppend(&name, "_", p.name(), it == config.end() ? std::string("?") : std::to_string(it->second));
  }
  return name;
}

KernelSource SpecFamily::Source(const Config& config) const {
  KernelSource source;
  source.parts = builtin_.parts;
  if (source.parts.empty()) source.text = spec_.source();
  spec::KernelInstance k = spec::Instantiate(spec_, config);
  source.name_expression = std::move(k.name_expression);
  source.options = std::move(k.defines);
  return source;
}

absl::StatusOr<std::vector<SpecFamily::PrepareKernel>> SpecFamily::PrepareKernels(const Shape& shape) const {
  auto representative = RepresentativeConfig(shape);
  if (!representative.ok()) return representative.status();
  std::vector<PrepareKernel> out;
  const v1::SpecVerification& v = spec_.verification();
  if (!v.reference_kernel().empty()) {
    auto launch = Launch(*representative, shape);
    if (!launch.ok()) return launch.status();
    if (!launch->reference) return absl::InternalError("the spec's reference kernel has no launch");
    KernelSource source = Source(*representative);
    source.name_expression = v.reference_kernel();
    out.push_back({absl::StrCat("reference kernel ", v.reference_kernel()), std::move(source),
                   LaunchGeometryOf(*launch->reference)});
  } else {
    const Config config(v.reference_config().begin(), v.reference_config().end());
    auto launch = Launch(config, shape);
    if (!launch.ok()) return launch.status();
    out.push_back({absl::StrCat("reference config ", ConfigName(config)), Source(config),
                   LaunchGeometryOf(launch->kernel)});
  }
  if (const Config def = DefaultConfig(); !def.empty() && RunsAt(def, shape).ok()) {
    auto launch = Launch(def, shape);
    if (!launch.ok()) return launch.status();
    out.push_back({std::string(baseline_name()), Source(def), LaunchGeometryOf(launch->kernel)});
  }
  return out;
}

v1::LaunchGeometry LaunchGeometryOf(const spec::Geometry& geometry) {
  v1::LaunchGeometry g;
  for (int64_t v : {geometry.grid.x, geometry.grid.y, geometry.grid.z}) g.add_grid(static_cast<uint32_t>(v));
  for (int64_t v : {geometry.block.x, geometry.block.y, geometry.block.z}) g.add_block(static_cast<uint32_t>(v));
  g.set_dynamic_shared_bytes(static_cast<uint32_t>(geometry.shared_memory_bytes));
  return g;
}

v1::LaunchGeometry SpecFamily::Geometry(const Config& config, const Shape& shape,
                                        const v1::Device& /*device*/) const {
  auto launch = Launch(config, shape);
  return launch.ok() ? LaunchGeometryOf(launch->kernel) : v1::LaunchGeometry();
}

std::vector<std::string> SpecFamily::Arguments() const {
  std::vector<std::string> out;
  for (const auto& a : spec_.arguments()) {
    if (a.has_buffer()) {
      const bool in = a.buffer().role() == v1::SPEC_ROLE_IN;
      out.push_back(absl::StrCat(in ? "const " : "", CType(a.buffer().type()), "* ", a.name()));
    } else {
      out.push_back(absl::StrCat(CType(a.scalar().type()), " ", a.name()));
    }
  }
  return out;
}

}  // namespace tuned
