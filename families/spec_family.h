// A family made of a kernel spec (tuner.proto KernelSpec): a user's kernel
// registered over the API, or a built-in family described as data
// (transpose). Everything the job runner, the strategies, the serving rule
// and the clients ask of a family comes from the spec's expressions.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "families/family.h"
#include "families/spec/spec.h"

namespace tuned {

/// A spec launch's geometry as the API's LaunchGeometry (grid and block x,
/// y, z; dynamic shared memory in bytes).
v1::LaunchGeometry LaunchGeometryOf(const spec::Geometry& geometry);

class SpecFamily : public Family {
 public:
  /// A built-in family made of a spec: its enum value, and the kernel files
  /// ("<family>/<file>") its source is made of, in place of the
  /// spec's inline source (the client library embeds no kernel text).
  struct BuiltIn {
    v1::Family id = v1::FAMILY_UNSPECIFIED;
    std::vector<std::string> parts;
    /// Config names as the family's stored results have them; unset: the
    /// spec family's own (ConfigName).
    std::function<std::string(const Config&)> config_name;
  };

  /// Validates `spec` (spec::ValidateSpec; without the source checks for a
  /// built-in one) and enumerates its space. INVALID_ARGUMENT as
  /// ValidateSpec.
  static absl::StatusOr<std::unique_ptr<SpecFamily>> Create(v1::KernelSpec spec, BuiltIn builtin);
  static absl::StatusOr<std::unique_ptr<SpecFamily>> Create(v1::KernelSpec spec) {
    return Create(std::move(spec), BuiltIn());
  }

  v1::Family id() const override { return builtin_.id; }
  std::string_view name() const override { return spec_.name(); }
  std::vector<std::string> dims() const override { return {spec_.dims().begin(), spec_.dims().end()}; }
  /// work.unit, or "" where the spec has no work (results print time only).
  std::string_view metric_unit() const override { return spec_.work().unit(); }
  /// "default config <name>" where the spec has one, else "reference kernel
  /// <name>" or "reference config <name>".
  std::string_view baseline_name() const override { return baseline_name_; }
  /// The default config is a config of the same kernel: where it is faster
  /// the daemon serves it (service.cc). No default config: nothing to serve.
  bool baseline_is_candidate() const override { return !spec_.default_config().empty(); }
  const std::vector<Param>& params() const override { return params_; }
  const v1::KernelSpec* spec() const override { return &spec_; }
  /// The content hash (spec::SpecHash) of the spec as registered.
  const std::string& hash() const { return hash_; }
  const BuiltIn& builtin() const { return builtin_; }
  bool is_builtin() const override { return builtin_.id != v1::FAMILY_UNSPECIFIED; }
  std::string_view spec_hash() const override { return is_builtin() ? std::string_view() : hash_; }
  std::vector<std::string> builtin_parts() const override { return builtin_.parts; }

  /// work.expression at the shape, evaluated with the default config (or,
  /// where that breaks a restriction there, the first config of the shape's
  /// space); 0 without work or where no config holds.
  double Work(const Shape& shape) const override;
  /// The buffers, plus a copy of each output's initial fill (the worker
  /// restores outputs from it before each verification), in bytes.
  int64_t BufferBytes(const Shape& shape, v1::Math math) const override;
  int64_t MaxBufferElements(const Shape& shape) const override;

  /// spec::EnumerateSpace(spec): restrictions over parameters only.
  std::vector<Config> Space() const override { return space_; }
  /// FAILED_PRECONDITION unless the config has the spec's parameters with
  /// listed values and holds every restriction over parameters only.
  absl::Status Check(const Config& config, const v1::Device& device) const override;
  /// FAILED_PRECONDITION with spec::EvaluateLaunch's reason where the config
  /// breaks a restriction or a launch or buffer limit at the shape: a spec's
  /// config may be wrong at other shapes (RunsAt).
  absl::Status SuitsShape(const Config& config, const Shape& shape) const override;
  absl::Status RunsAt(const Config& config, const Shape& shape) const override {
    return SuitsShape(config, shape);
  }
  /// "<name>_<P1><v1>_<P2><v2>..." in parameter order, e.g.
  /// "matmul_TILE16_UNROLL4" (a built-in family may name its own).
  std::string ConfigName(const Config& config) const override;
  /// The spec's source (or the built-in's kernel files), the kernel's name
  /// expression with the template parameters' values, and -DNAME=value for
  /// the others.
  KernelSource Source(const Config& config) const override;
  /// launch.block, launch.grid and launch.shared_memory_bytes at the shape;
  /// an empty geometry (no grid) where the config does not run there.
  v1::LaunchGeometry Geometry(const Config& config, const Shape& shape,
                              const v1::Device& device) const override;
  /// C declarations in order, e.g. {"const float* A", "float* C", "int n"}.
  std::vector<std::string> Arguments() const override;

  /// Every argument evaluated at the shape (buffers' sizes, scalars'
  /// values). INVALID_ARGUMENT where a dimension is missing or an
  /// expression fails.
  absl::StatusOr<std::vector<v1::KernelArgument>> KernelArguments(const Shape& shape) const override;
  /// spec::EvaluateLaunch for `config` at `shape`.
  absl::StatusOr<spec::SpecLaunch> Launch(const Config& config, const Shape& shape) const;
  /// The config whose launch stands for the shape's (Work, the reference
  /// kernel's parameters): the default config where it holds at the shape,
  /// else the first of the shape's space. NOT_FOUND where none holds.
  absl::StatusOr<Config> RepresentativeConfig(const Shape& shape) const;
  /// The default config (empty if the spec has none).
  Config DefaultConfig() const override { return {spec_.default_config().begin(), spec_.default_config().end()}; }

  /// A kernel that preparing a problem needs before any candidate runs: the
  /// daemon's compiler process compiles it (confined, as every config) and
  /// the GPU worker loads its binary (server/worker/spec_problem.cc); the
  /// GPU worker compiles no spec code.
  struct PrepareKernel {
    /// What results call it: "reference kernel K", "reference config C" or
    /// baseline_name() ("default config C").
    std::string name;
    KernelSource source;
    v1::LaunchGeometry geometry;
  };
  /// The kernels of the problem at `shape`, in order: the reference
  /// (verification.reference_kernel, with the defines of the config that
  /// RepresentativeConfig picks, or verification.reference_config), then,
  /// where the default config runs at the shape, the default config, timed
  /// as the baseline (without it the reference is). Errors of
  /// RepresentativeConfig and Launch (a reference config that does not run
  /// at the shape: INVALID_ARGUMENT).
  absl::StatusOr<std::vector<PrepareKernel>> PrepareKernels(const Shape& shape) const;

 private:
  SpecFamily() = default;
  spec::Dims DimsOf(const Shape& shape) const;
  /// Runs `f` with a compiled spec from the pool (muParser evaluates in place).
  template <typename F>
  auto WithCompiled(F&& f) const;

  v1::KernelSpec spec_;
  BuiltIn builtin_;
  std::string hash_;
  std::string baseline_name_;
  std::vector<Param> params_;
  std::vector<Config> space_;
  std::set<Config> in_space_;
  mutable absl::Mutex mu_;
  mutable std::vector<std::unique_ptr<spec::CompiledSpec>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tuned
