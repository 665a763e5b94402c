// A kernel family: its search space, the constraints that prune it, the CUDA
// source of each config, its launch geometry and its metric. CPU-only: no
// CUDA, NVRTC, jobs or store here (the worker side lives in server/worker/).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/config.h"
#include "core/problem_key.h"
#include "absl/status/statusor.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// A named parameter and the values the space takes.
struct Param {
  std::string name;
  std::vector<int64_t> values;
  std::string doc;
  /// The value a config stored before the parameter existed has (it lacks
  /// the parameter); nullopt: every config must name it.
  std::optional<int64_t> if_absent = std::nullopt;
  /// Set from the problem, not searched (sgemm's LAYOUT): InLayout() gives
  /// it its value, and Neighbours() never steps it.
  bool from_problem = false;
};

/// What NVRTC needs to build one config: the kernel files its source is
/// made of, the template instantiation to lower (Kernel Launcher style), and
/// extra options. The text itself is SourceText(*this) (kernel_text.h,
/// library tuned_kernel_text), which the client library does not link.
struct KernelSource {
  /// Embedded kernel files, "<family>/<file>" (e.g. "gemm/sgemm.cuh"),
  /// in the order their text is joined.
  std::vector<std::string> parts;
  std::string name_expression;  // e.g. "sgemm_tiled<128,128,8,8,8,4,4,0,1>"
  std::vector<std::string> options;
  /// Or the text itself (a user's kernel spec): used where parts is empty.
  std::string text;
};

/// A config that was dropped before compiling, and why.
struct Pruned {
  Config config;
  std::string reason;
};

class Family {
 public:
  virtual ~Family() = default;

  virtual v1::Family id() const = 0;
  /// Lower-case name used by the CLI and the store, e.g. "sgemm".
  virtual std::string_view name() const = 0;
  /// Names of the shape's dimensions, e.g. {"M", "N", "K"}.
  virtual std::vector<std::string> dims() const = 0;
  /// "GFLOPS" or "GB/s".
  virtual std::string_view metric_unit() const = 0;
  /// Name of the baseline timed in the same job, e.g. "cuBLAS".
  virtual std::string_view baseline_name() const = 0;
  /// True if the baseline computes the same result (cuBLAS for sgemm), so a
  /// client may call it instead where it beat every generated kernel; false
  /// where it is only a yardstick (a copy for transpose).
  virtual bool baseline_is_candidate() const { return false; }
  /// Whether the baseline is the answer where no config passed
  /// verification: a library call (sgemm's cuBLAS), not a kernel spec's
  /// default config, which is one of the configs that failed.
  bool baseline_serves_alone() const { return baseline_is_candidate() && spec() == nullptr; }
  /// The parameters, in canonical order.
  virtual const std::vector<Param>& params() const = 0;
  /// The math modes (tuner.proto Math) the family tunes: MATH_IEEE_FP32
  /// only, unless it says otherwise (sgemm: all three).
  virtual std::vector<v1::Math> MathModes() const { return {v1::MATH_IEEE_FP32}; }
  /// Whether `config` is a candidate of math mode `math` (its arithmetic
  /// meets the mode's kind: sgemm's tensor-core kinds are no candidates of
  /// MATH_IEEE_FP32). Every config is a candidate of MATH_IEEE_FP32 only,
  /// unless the family says otherwise. Independent of the device and shape.
  virtual bool Admits(const Config& config, v1::Math math) const {
    (void)config;
    return math == v1::MATH_IEEE_FP32;
  }
  /// The element type of the family's problems: DTYPE_F32, or a 16-bit
  /// variant's own (sgemm's BF16 and F16 GEMM, families/gemm/op16.cc).
  virtual v1::DType dtype() const { return v1::DTYPE_F32; }
  /// The element types the family takes (tuner.proto DType): DTYPE_F32
  /// only, unless it says otherwise (sgemm: F32, BF16 and F16).
  virtual std::vector<v1::DType> DTypes() const { return {v1::DTYPE_F32}; }
  /// The family that tunes problems of `dtype`: this one for its own
  /// dtype(), a variant for another of DTypes() (sgemm's 16-bit GEMM, with
  /// its own kinds, space and kernels under the same name), nullptr for a
  /// dtype it does not take.
  virtual const Family* ForDType(v1::DType dtype) const {
    return dtype == this->dtype() ? this : nullptr;
  }
  /// The operand layouts (tuner.proto Layout) the family's problems take:
  /// LAYOUT_NN only, unless it says otherwise (sgemm: all four).
  virtual std::vector<v1::Layout> Layouts() const { return {v1::LAYOUT_NN}; }
  /// `config` (one of Space(), whose configs are those of LAYOUT_NN) made
  /// for problems in `layout`: sgemm sets its LAYOUT parameter (a kind that
  /// does not handle the layout refuses it in Check). The config itself by
  /// default.
  virtual Config InLayout(Config config, v1::Layout layout) const {
    (void)layout;
    return config;
  }
  /// The layout a config was made for (InLayout): LAYOUT_NN by default.
  virtual v1::Layout LayoutOf(const Config& config) const {
    (void)config;
    return v1::LAYOUT_NN;
  }
  /// The epilogues (tuner.proto Epilogue) the family's problems of this
  /// form's dtype take: EPILOGUE_NONE only, unless it says otherwise
  /// (sgemm's 16-bit forms: all five).
  virtual std::vector<v1::Epilogue> Epilogues() const { return {v1::EPILOGUE_NONE}; }
  /// The epilogue this form's kernels apply: EPILOGUE_NONE by default.
  /// A form with another one sets it in its configs (InLayout), whose
  /// kernels then take the bias after C (Arguments()).
  virtual v1::Epilogue epilogue() const { return v1::EPILOGUE_NONE; }
  /// The form that applies `epilogue` (one of Epilogues()): this one for
  /// its own epilogue(), a variant for another; nullptr for an epilogue
  /// the form does not take.
  virtual const Family* ForEpilogue(v1::Epilogue epilogue) const {
    return epilogue == this->epilogue() ? this : nullptr;
  }

  /// Work per run: flops (sgemm: 2*M*N*K) or bytes moved (read + written).
  /// metric = Work / (median_ms * 1e6).
  virtual double Work(const Shape& shape) const = 0;
  /// Device memory a job on this shape allocates in the math mode, in bytes
  /// (at its peak).
  virtual int64_t BufferBytes(const Shape& shape, v1::Math math) const = 0;

  /// The whole space, before pruning; each config appears once.
  virtual std::vector<Config> Space() const = 0;
  /// OK if the config can run on the device for any shape; otherwise
  /// FAILED_PRECONDITION with the reason (threads, shared memory, registers,
  /// tile divisibility). Shape-independent: every valid config is correct for
  /// every shape.
  virtual absl::Status Check(const Config& config, const v1::Device& device) const = 0;
  /// Canonical, unique, human-readable name, e.g. "sgemm_tiled_128x128x8_8x8_p4_v4_l0_m1".
  virtual std::string ConfigName(const Config& config) const = 0;
  /// Kernel files, instantiation and options for the config.
  virtual KernelSource Source(const Config& config) const = 0;
  /// Grid, block and dynamic shared memory of the config for the shape on
  /// `device` (a persistent grid, sgemm's stream-K, is sized by its SMs).
  virtual v1::LaunchGeometry Geometry(const Config& config, const Shape& shape,
                                      const v1::Device& device) const = 0;
  /// The kernel's arguments in order, e.g. {"int M", "int N", ...}.
  virtual std::vector<std::string> Arguments() const = 0;
  /// OK if a job on `shape` searches `config` (one that Check admits);
  /// otherwise FAILED_PRECONDITION with the reason. A kind built for some
  /// shapes only (sgemm's gemv: M or N of at most 8) is left out of the other
  /// shapes' jobs, where it cannot win; it stays correct for every shape, as
  /// a best is served for nearby shapes. Every config suits every shape by
  /// default.
  virtual absl::Status SuitsShape(const Config& /*config*/, const Shape& /*shape*/) const {
    return absl::OkStatus();
  }
  /// OK if `config` (one that Check admits) computes the right result at
  /// `shape`: what serving a best at a nearby shape needs. Every config runs
  /// at every shape by default; a kernel spec's restrictions over dimensions
  /// say where its configs run (FAILED_PRECONDITION with the reason).
  virtual absl::Status RunsAt(const Config& /*config*/, const Shape& /*shape*/) const {
    return absl::OkStatus();
  }
  /// Features of `config` at `shape` on `device` that the model strategy's
  /// cost model (server/search/strategy.h) adds to the generic ones (the
  /// dimensions, the parameters, the launch's blocks, threads and waves):
  /// what the family knows of its kernels' cost. None by default; sgemm's
  /// tiles (families/gemm/op.cc: TileFeatures).
  virtual std::vector<float> ModelFeatures(const Config& /*config*/, const Shape& /*shape*/,
                                           const v1::Device& /*device*/) const {
    return {};
  }
  /// The kernel spec the family is made of (families/spec_family.h), or
  /// nullptr for a family written as code (sgemm).
  virtual const v1::KernelSpec* spec() const { return nullptr; }
  /// Whether the daemon ships the family (its code, or a spec built in, as
  /// transpose's); false for a user's kernel spec.
  virtual bool is_builtin() const { return true; }
  /// Another name that finds the family (FindFamily, the clients), or empty:
  /// "gemm" for sgemm, which tunes 16-bit GEMMs too.
  virtual std::string_view alias() const { return {}; }
  /// Whether the family exists for tests only (fault_test): served once
  /// EnableFaultTestFamily() is called.
  virtual bool test_only() const { return false; }
  /// A user's kernel spec's version (its content hash, 64 hex digits); empty
  /// for a built-in family.
  virtual std::string_view spec_hash() const { return {}; }
  /// The embedded kernel files ("<family>/<file>") of a built-in
  /// spec family, whose stored spec carries no source; empty otherwise.
  virtual std::vector<std::string> builtin_parts() const { return {}; }
  /// The config a kernel spec serves where no tuned one is surely faster
  /// (its baseline, a kernel like the others); empty for a family whose
  /// baseline is a library call (sgemm: cuBLAS) or a spec without one.
  virtual Config DefaultConfig() const { return {}; }
  /// A kernel spec's arguments evaluated at `shape` (buffers' sizes,
  /// scalars' values), which a client passes in this order; empty for a
  /// family whose arguments are fixed (sgemm's 8: Arguments()).
  /// INVALID_ARGUMENT where a dimension is missing or an expression fails.
  virtual absl::StatusOr<std::vector<v1::KernelArgument>> KernelArguments(const Shape& shape) const {
    (void)shape;
    return std::vector<v1::KernelArgument>{};
  }

  // ---- shared helpers (family.cc) ----

  /// Checks the shape's rank, that every dimension is >= 1, and that no buffer
  /// has 2^31 or more elements (the kernels index with int). INVALID_ARGUMENT.
  absl::Status ValidateShape(const Shape& shape) const;
  /// ValidateShape plus BufferBytes against the device's memory (RESOURCE_EXHAUSTED).
  absl::Status ValidateProblem(const Shape& shape, const v1::Device& device,
                               v1::Math math = v1::MATH_IEEE_FP32) const;
  /// INVALID_ARGUMENT unless `math` is one of MathModes() (naming them).
  absl::Status ValidateMath(v1::Math math) const;
  /// INVALID_ARGUMENT unless `layout` is one of Layouts() (naming them).
  absl::Status ValidateLayout(v1::Layout layout) const;
  /// INVALID_ARGUMENT unless `epilogue` is one of Epilogues() (naming
  /// them) and this form's epilogue() (FindFamily(problem) gives the form).
  absl::Status ValidateEpilogue(v1::Epilogue epilogue) const;
  /// INVALID_ARGUMENT unless `dtype` is one of DTypes() (naming them) and
  /// this form's dtype() (FindFamily(problem) gives the form).
  absl::Status ValidateDType(v1::DType dtype) const;
  /// The configs of Space() that `math` admits (Admits), split into the
  /// valid ones and the pruned ones with reasons; the others are left out,
  /// not pruned (sgemm's MATH_IEEE_FP32 space is that of its CUDA-core
  /// kinds, whose stored configs name no math mode).
  /// In layout `layout`, the configs are InLayout(c, layout) of Space()'s,
  /// those the layout admits (LayoutOf) and Check passes.
  std::vector<Config> ValidSpace(const v1::Device& device, std::vector<Pruned>* pruned,
                                 v1::Math math = v1::MATH_IEEE_FP32,
                                 v1::Layout layout = v1::LAYOUT_NN) const;
  /// What a job on `shape` in mode `math` searches: ValidSpace(device,
  /// pruned, math) less the configs that do not suit the shape (SuitsShape),
  /// which join `pruned` too.
  std::vector<Config> ValidSpace(const v1::Device& device, const Shape& shape,
                                 std::vector<Pruned>* pruned,
                                 v1::Math math = v1::MATH_IEEE_FP32,
                                 v1::Layout layout = v1::LAYOUT_NN) const;
  /// Whether a job in `math` and `layout` may measure `config`: Admits(config,
  /// math) and LayoutOf(config) == layout.
  bool AdmitsIn(const Config& config, v1::Math math, v1::Layout layout) const {
    return Admits(config, math) && LayoutOf(config) == layout;
  }
  /// The configs one step from `config` along one parameter: that parameter
  /// set to the value before or after its own in Param::values (a parameter
  /// the config lacks has its if_absent value), the others unchanged; in
  /// parameter order, each once. Not checked (Check prunes them). The job
  /// runner measures the neighbours of a sweep's best few: a local search
  /// where Space() samples the parameters sparsely.
  std::vector<Config> Neighbours(const Config& config) const;
  /// Every config of Space() and of `rounds` rounds of Neighbours() from it
  /// (what a job's refinement can reach), each in every one of Layouts()
  /// (InLayout), by ConfigName: to read config
  /// names back (recorded results, a probe's arguments).
  std::map<std::string, Config> ByName(int rounds) const;
  /// ByName(rounds)'s entries of `names` (those it has), without holding
  /// the configs of the others (sgemm's ByName(3) holds 500,000): the way to
  /// read back a few names.
  std::map<std::string, Config> ByName(int rounds, const std::set<std::string>& names) const;
  /// Calls `visit` with each config ByName(rounds) holds, in the order of
  /// the search (Space(), then each round of Neighbours()), each name once,
  /// until it returns true. `config` may be moved from.
  void VisitReach(int rounds,
                  const std::function<bool(std::string name, Config& config)>& visit) const;
  /// "BM=128,BN=128,..." in canonical order, and back.
  std::string ConfigKey(const Config& config) const;
  absl::StatusOr<Config> ParseConfigKey(std::string_view key) const;
  /// "1024x1024x1024".
  static std::string ShapeString(const Shape& shape);
  /// FAILED_PRECONDITION unless the config has exactly the family's
  /// parameters (a parameter with an `if_absent` value may be missing), each
  /// with one of its listed values.
  absl::Status CheckParams(const Config& config) const;
  /// Largest number of elements of one buffer for the shape.
  virtual int64_t MaxBufferElements(const Shape& shape) const = 0;
};

/// The next round of a job's local search around its best (JobRunner's
/// Refine): the neighbours (Family::Neighbours) of each of `best` (the job's
/// best configs, fastest first) whose name is not yet in `refined`, that
/// the job's math mode `math` admits, that pass Check on `device` (and,
/// where `shape` is given, SuitsShape) and whose names are not in
/// `measured`; each once, in order. Adds the names of the configs it
/// refines to `refined`. The neighbours keep the layout of their config
/// (from_problem parameters are not stepped), which must be `layout`.
std::vector<Config> Refinements(const Family& family, const v1::Device& device,
                                const std::vector<Config>& best,
                                const std::set<std::string>& measured,
                                std::set<std::string>* refined,
                                v1::Math math = v1::MATH_IEEE_FP32, const Shape& shape = {},
                                v1::Layout layout = v1::LAYOUT_NN);

/// Distance between two shapes of one family: the sum over dimensions of
/// |log2(a_i / b_i)|, so doubling one dimension costs 1 whatever its size.
/// Infinite if the ranks differ.
double ShapeDistance(const Shape& a, const Shape& b);
/// A tuned shape serves an untuned one if their distance is at most this
/// (e.g. 1024^3 serves 1100x1000x900 at 0.32, and 2048x1024x512 at 2).
inline constexpr double kMaxNearestDistance = 3.0;
/// The closest of `tuned` to `shape` within kMaxNearestDistance (ties: the
/// first), or nullopt.
std::optional<Shape> NearestShape(const Shape& shape, const std::vector<Shape>& tuned);

/// The built-in family for an id or name (its DTYPE_F32 form); nullptr if
/// unknown. Registered in registry.cc.
const Family* FindFamily(v1::Family id);
const Family* FindFamily(std::string_view name);
/// The built-in families.
std::vector<const Family*> AllFamilies();
/// The family of a problem: a built-in one by `family` or `family_name`,
/// in the form for the problem's dtype (Family::ForDType; the F32 form
/// where the family does not take the dtype, which FamilyOf refuses) and
/// epilogue (Family::ForEpilogue; the dtype's form where it does not take
/// the epilogue, which FamilyOf refuses too), or a
/// kernel spec family that AddSpecFamily holds by family_name and
/// spec_hash; nullptr if none.
const Family* FindFamily(const v1::Problem& problem);
/// Where a process finds a kernel spec's version that it does not hold yet
/// (the daemon: its store): the spec of version `hash` of `name`.
using SpecLoader =
    std::function<absl::StatusOr<v1::KernelSpec>(const std::string& name, const std::string& hash)>;
/// The family of a problem key, resolved to its variant: FindFamily's form
/// for the key's dtype and epilogue, checked to take the key's dtype, math
/// mode, layout and epilogue; a kernel spec's version is loaded with
/// `load_spec` (AddSpecFamily) the first time. INVALID_ARGUMENT for an
/// unknown family, element types that no dtype names, or a variant the
/// family does not tune (and a dtype for a kernel spec, whose arguments have
/// their own types); `load_spec`'s errors (NOT_FOUND for an unregistered
/// version).
absl::StatusOr<const Family*> FamilyOf(const ProblemKey& key, const SpecLoader& load_spec);
/// `family` (a built-in one; may be null) in its form for the problem's
/// dtype (unset: F32) and epilogue, or in the nearest form it has: where it
/// has no form of the dtype, itself; where that has none of the epilogue,
/// the dtype's form (whose Validate* then refuse the problem).
const Family* InForm(const Family* family, const v1::Problem& problem);
/// ALREADY_EXISTS where `name` is a built-in family's, which no kernel spec
/// may take.
absl::Status CheckSpecFamilyName(std::string_view name);
/// Makes `spec` a family of this process (validated: INVALID_ARGUMENT as
/// spec::ValidateSpec), held until the process ends under its name and
/// content hash; the family held already where that version was added
/// before. ALREADY_EXISTS for the name of a built-in family.
absl::StatusOr<const Family*> AddSpecFamily(const v1::KernelSpec& spec);
/// Drops every kernel spec family AddSpecFamily holds. Only for a process
/// that starts over from a fresh store (the fuzzer, between inputs): no
/// pointer AddSpecFamily or FindFamily handed out may be used after.
void ForgetSpecFamilies();

/// The API name of an enum value of tuner.proto (e.g. "FAMILY_SGEMM"), or its
/// number (e.g. "77") for a value this build does not know: a request's enum
/// may hold any number, and protobuf's Family_Name() gives "" for those.
/// "f32", "bf16", "f16" (the API name without its prefix, lower case); a
/// number for a value this build does not know.
std::string DTypeText(v1::DType dtype);

template <typename Enum>
std::string EnumName(Enum value) {
  const auto* v = google::protobuf::GetEnumDescriptor<Enum>()->FindValueByNumber(value);
  return v != nullptr ? v->name() : std::to_string(static_cast<int>(value));
}

}  // namespace tuned

namespace tuned {
/// Limits of an sm_90 GPU (H100 SXM, CUDA C Programming Guide, compute
/// capability 9.0 table): used by compile-only mode and by tests.
v1::Device Sm90ReferenceDevice();
}  // namespace tuned

namespace tuned {
/// The built-in families, in the order of their tuned_family lines in
/// CMakeLists.txt (generated by cmake/family.cmake; each is a folder under
/// families/), test-only ones included.
const std::vector<const Family*>& BuiltinFamilies();
/// Those of BuiltinFamilies() made of code alone (no spec.toml; library
/// tuned_code_families, which the client library links without the spec
/// parser), test-only ones included.
const std::vector<const Family*>& BuiltinCodeFamilies();
/// The code family of `problem` (its family id among BuiltinCodeFamilies(),
/// in the form of its dtype and epilogue, as FindFamily), or nullptr: a spec-made built-in
/// (transpose), a user's kernel spec, an unknown id or a dtype the family
/// has no form of.
const Family* FindCodeFamily(const v1::Problem& problem);
/// The id of the built-in family named `name` (its name or alias; a
/// test-only family once EnableFaultTestFamily was called), from the code
/// families and the proto's enum (FAMILY_<NAME>: the spec-made built-ins);
/// FAMILY_UNSPECIFIED for any other name (a user's kernel spec).
v1::Family BuiltinFamilyId(std::string_view name);
/// The name of built-in family `id` (BuiltinFamilyId's reverse, test-only
/// ones included); empty for FAMILY_UNSPECIFIED or a value this build does
/// not know.
std::string BuiltinFamilyName(v1::Family id);
/// The built-in families by name, for the code and tests that name one
/// (families/gemm/, families/transpose/, families/fault_test/).
const Family& GemmFamily();
const Family& TransposeFamily();
/// Test-only; served once EnableFaultTestFamily() is called.
const Family& FaultTestFamily();
/// Makes FindFamily and AllFamilies include the test-only families
/// (fault_test; daemon flag --enable-fault-test-family, tests). Call before
/// serving.
void EnableFaultTestFamily();
/// Whether EnableFaultTestFamily was called.
bool FaultTestFamilyEnabled();
}  // namespace tuned
