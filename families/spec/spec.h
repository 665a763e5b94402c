// Kernel specs (tuner.proto KernelSpec): a user's CUDA kernel, its tunable
// parameters, restrictions, arguments and launch, read from TOML or JSON,
// validated, and its space enumerated. CPU-only: no CUDA, NVRTC or server.
//
// File format (TOML; JSON has the same keys and nesting), see
// examples/kernels/ for complete specs:
//   name = "matmul"                  # KernelSpec.name
//   kernel = "matmul_tiled"          # or "softmax<THREADS, VEC>"
//   source = '''...'''               # or source_file = "matmul.cu" (LoadSpecFile)
//   dims = ["m", "n", "k"]
//   restrictions = ["m % TILE == 0"]
//   params = [{ name = "TILE", values = [8, 16, 32], pass = "define", doc = "..." }]
//                                    # pass: "define" (default) or "template"
//   arguments = [                    # in the kernel's order
//     { name = "A", type = "f32", size = "m * k", role = "in", fill = "uniform" },
//                                    # fill: a name, or { uniform = [low, high] } or
//                                    # { normal = [mean, deviation] } (FillRule)
//     { name = "C", type = "i32", size = "m * n", role = "inout", fill = "zeros",
//       reset = "every_run" },       # outputs: "verification" (default) or "every_run"
//     { name = "n", type = "i32", value = "n" },   # a scalar has `value`
//   ]
//   launch = { block = ["TILE", "TILE"], grid = ["n / TILE", "m / TILE"],
//              shared_memory_bytes = "0" }
//   verification = { reference = "matmul_naive", rtol = 1e-5, atol = 1e-5,
//                    launch = { block = [16, 16], grid = ["ceil_div(n, 16)", "ceil_div(m, 16)"] } }
//                                    # or: config = { TILE = 8 }, a reference config
//   work = { expression = "2 * m * n * k", unit = "GFLOPS" }   # optional
//   default_config = { TILE = 16 }                              # optional
//   sample_dims = [{ m = 512, n = 512, k = 512 }]              # optional
// Block and grid entries may be TOML integers or expression strings.
//
// Libraries: toml++ (Debian libtomlplusplus-dev) parses TOML 1.0 with
// line:column errors and keeps 64-bit integers apart from floats;
// nlohmann-json (nlohmann-json3-dev) parses JSON, and is the one tree that
// both formats are converted from, so that both give the same field paths
// and messages. Expressions: families/spec/expr.h (muParser).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/config.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned::spec {

// A config is tuned::Config (core/config.h): a value for each tunable parameter.
/// A problem: a value for each dimension.
using Dims = std::map<std::string, int64_t>;

inline constexpr int64_t kMaxSourceBytes = 1 << 20;      // KernelSpec.source
inline constexpr int64_t kMaxSpecFileBytes = 2 << 20;    // a spec file, its source inline
inline constexpr int64_t kMaxSpaceConfigs = 100'000;     // after restrictions
inline constexpr int64_t kMaxEnumerated = 10'000'000;    // partial configs visited
/// Fewer than 2^31 elements a buffer: the kernels index with int (as
/// Family::ValidateShape refuses a problem whose buffers reach 2^31).
inline constexpr int64_t kMaxBufferElements = (int64_t{1} << 31) - 1;
inline constexpr int kMaxParams = 32;
inline constexpr int kMaxValuesPerParam = 1024;
inline constexpr int kMaxArguments = 64;
inline constexpr int kMaxDims = 16;
inline constexpr int kMaxRestrictions = 64;
inline constexpr int kMaxExpressionChars = 1024;
inline constexpr int kMaxSampleDims = 16;
/// Text fields: a spec is stored and sent to every reader of `tunectl
/// families`, so each field has a size a person writes, not a file's.
inline constexpr int kMaxDescriptionBytes = 4096;  // KernelSpec.description
inline constexpr int kMaxDocBytes = 1024;          // SpecParam.doc
inline constexpr int kMaxNameChars = 64;           // every name: dims, params, arguments, kernels, unit

/// INVALID_ARGUMENT "<path>: <why>": a spec error that names its field's
/// path (e.g. "arguments[2].role").
absl::Status FieldError(const std::string& path, const std::string& why);

/// Parses a TOML spec. INVALID_ARGUMENT for TOML that does not parse (with
/// line and column), an unknown key, a value of the wrong type or an unknown
/// enum name (type, role, fill, pass, unit), naming the key's path (e.g.
/// "arguments[2].role"). `source_file` is refused: only LoadSpecFile reads
/// files. Does not validate (ValidateSpec).
absl::StatusOr<v1::KernelSpec> ParseSpecToml(std::string_view text);
/// Parses a JSON spec with the same keys as the TOML one; errors as ParseSpecToml.
absl::StatusOr<v1::KernelSpec> ParseSpecJson(std::string_view text);
/// Reads a .toml or .json spec file (ReadTextFile, at most
/// kMaxSpecFileBytes); a `source_file` key names a file, relative to the
/// spec's folder, whose text becomes `source` (at most kMaxSourceBytes).
/// Errors as ReadTextFile's for either file; otherwise as ParseSpecToml.
/// Does not validate.
absl::StatusOr<v1::KernelSpec> LoadSpecFile(const std::string& path);
/// The text of the regular file at `path`, `what` naming it in errors
/// ("spec file", "source_file"): NOT_FOUND where it does not exist or cannot
/// be opened; INVALID_ARGUMENT for a folder or another file that is not a
/// regular one (a device such as /dev/zero never ends), for more than
/// `max_bytes` (it reads no further), and for text that is not UTF-8
/// (naming the first bad byte's offset).
absl::StatusOr<std::string> ReadTextFile(const std::filesystem::path& path, int64_t max_bytes,
                                         std::string_view what);

/// OK unless `source` opens a file at compile time other than a CUDA
/// toolkit header by name: an #include of a path, a quoted or computed
/// #include, #include_next, #import, #embed, __has_include, and pragmas
/// other than unroll, nounroll, once, pack and the diagnostic ones (in
/// #pragma or _Pragma). Reads the source as the preprocessor does (line
/// splices, comments, the %: digraph). INVALID_ARGUMENT naming the line and
/// the directive as written; no file is read.
absl::Status CheckSourceReads(std::string_view source);

/// Checks a spec: names, limits, every expression (syntax, names, restriction
/// booleans), the kernels in the source, the space over parameters (not empty,
/// at most kMaxSpaceConfigs), verification, tolerances, the default config,
/// and ValidateProblem at each sample_dims. INVALID_ARGUMENT naming the field
/// path and the reason, e.g. "params[1].values: empty".
/// `check_source` false: a built-in spec family whose source lives in kernel
/// files (KernelSource::parts) and is empty here; the source-free checks
/// only (tests check the spec with its text).
absl::Status ValidateSpec(const v1::KernelSpec& spec, bool check_source = true);

/// Checks a problem of a valid spec: a value >= 1 for every dimension and no
/// other; at least one config in the space; for every config of the space,
/// every launch, buffer, scalar and work expression (launch limits, buffer
/// sizes of 1 to 2^31 elements, division by zero); the reference config (if
/// any) in the space. The default config may be outside it (then the problem
/// has no baseline). INVALID_ARGUMENT naming the field, the config and the
/// reason.
absl::Status ValidateProblem(const v1::KernelSpec& spec, const Dims& dims);

/// The spec's content hash: lower-case hex SHA-256 of its deterministic
/// protobuf serialization. Equal specs give equal hashes in every process and
/// on every machine; any changed field (the source, a value) changes it.
std::string SpecHash(const v1::KernelSpec& spec);

/// The configs of the space, in order (the last parameter varies fastest),
/// under the restrictions that use parameters only; those that use a
/// dimension are left for EnumerateSpace(spec, dims). INVALID_ARGUMENT for an
/// invalid expression, more than kMaxSpaceConfigs configs, or more than
/// kMaxEnumerated partial configs visited.
absl::StatusOr<std::vector<Config>> EnumerateSpace(const v1::KernelSpec& spec);
/// The configs valid for the problem `dims`: every restriction holds with
/// them. Errors as above, and INVALID_ARGUMENT for a missing, extra or
/// non-positive dimension. An empty result is no error.
absl::StatusOr<std::vector<Config>> EnumerateSpace(const v1::KernelSpec& spec, const Dims& dims);

/// Threads (block) or blocks (grid) along x, y, z.
struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
};

/// A kernel's launch: geometry and dynamic shared memory in bytes.
struct Geometry {
  Dim3 block, grid;
  int64_t shared_memory_bytes = 0;
};

/// One argument's value for a problem and config.
struct ArgumentValue {
  std::string name;
  bool is_buffer = false;
  v1::SpecType type = v1::SPEC_TYPE_UNSPECIFIED;
  int64_t elements = 0;  // buffers: number of elements
  int64_t bytes = 0;     // buffers: elements * the element's size
  double scalar = 0;     // scalars: the value (an integer for i32/i64)
};

/// Everything a launcher needs for one config of one problem.
struct SpecLaunch {
  Geometry kernel;
  /// The reference kernel's launch (verification.reference_kernel), if any.
  std::optional<Geometry> reference;
  std::vector<ArgumentValue> arguments;  // in the kernel's order
  /// FLOPs or bytes per launch (work.expression), if the spec has work.
  std::optional<double> work;
  std::string name_expression;       // NVRTC name expression, e.g. "softmax<128, 4>"
  std::vector<std::string> defines;  // NVRTC options, e.g. "-DTILE=16"
};

/// Evaluates the launch of `config` for the problem `dims`. INVALID_ARGUMENT
/// (naming the field) for a config that lacks a parameter, has an unknown one
/// or a value outside its list, breaks a restriction, for bad dims, or for an
/// expression that fails or breaks a launch or buffer limit.
absl::StatusOr<SpecLaunch> EvaluateLaunch(const v1::KernelSpec& spec, const Config& config,
                                          const Dims& dims);

/// What NVRTC compiles for a config: the kernel's name expression with the
/// template parameters' values (e.g. "softmax<128, 4>") and -DNAME=value
/// for the define parameters, in parameter order. A parameter the config
/// lacks takes 0 (EvaluateLaunch refuses such a config).
struct KernelInstance {
  std::string name_expression;
  std::vector<std::string> defines;
};
KernelInstance Instantiate(const v1::KernelSpec& spec, const Config& config);

/// A spec's expressions compiled once, to evaluate many configs and
/// problems: what EvaluateLaunch and EnumerateSpace do, without compiling
/// each time. Not thread-safe (muParser evaluates in place): one per thread,
/// or a pool.
class CompiledSpec {
 public:
  /// Errors as ValidateSpec's structural checks (it does not enumerate).
  static absl::StatusOr<std::unique_ptr<CompiledSpec>> Create(const v1::KernelSpec& spec,
                                                             bool check_source = true);
  ~CompiledSpec();
  /// As EvaluateLaunch(spec, config, dims).
  absl::StatusOr<SpecLaunch> Launch(const Config& config, const Dims& dims) const;
  /// As EnumerateSpace(spec, dims) and EnumerateSpace(spec).
  absl::StatusOr<std::vector<Config>> Space(const Dims& dims) const;
  absl::StatusOr<std::vector<Config>> Space() const;
  /// Every argument at the problem `dims`: buffers' sizes and scalars' values,
  /// which are over the dimensions only (any config has the same).
  /// INVALID_ARGUMENT as EvaluateLaunch for bad dims or an expression that
  /// fails or breaks a buffer limit.
  absl::StatusOr<std::vector<ArgumentValue>> Arguments(const Dims& dims) const;

 private:
  struct Impl;
  explicit CompiledSpec(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The names of the __global__ functions in `source` (a textual scan that
/// skips comments, string literals, templates and __launch_bounds__).
std::vector<std::string> GlobalKernels(std::string_view source);

/// Checks the compiled kernel `entry` of `ptx` against the spec's arguments:
/// as many parameters, each of the argument's size (a buffer: an 8-byte
/// pointer; a scalar: its type's bytes), read from the PTX's `.entry`
/// declaration (PTX ISA, "Kernel Function Parameters"). INVALID_ARGUMENT
/// naming the first argument that does not match ("arguments: the kernel
/// takes 4 parameters, the spec passes 3: ..."); OK where the PTX does not
/// declare `entry` (nothing to check against).
absl::Status CheckKernelParameters(const v1::KernelSpec& spec, std::string_view ptx,
                                   std::string_view entry);

/// The spec's element type names ("f32", ...) and their sizes in bytes.
std::string_view TypeName(v1::SpecType type);
int TypeBytes(v1::SpecType type);

/// A buffer's fill with its defaults resolved (v1::SpecFill; the table of
/// docs/kernel-specs.md "Fills"): what the worker writes into the buffer,
/// from the job's seed, before the reference's run and each reset.
struct FillRule {
  v1::SpecFill fill = v1::SPEC_FILL_ZEROS;  // never SPEC_FILL_UNSPECIFIED
  /// uniform: [a, b] (integers a to b; floats in [a, b)); normal: mean a,
  /// deviation b; constant: a.
  double a = 0, b = 0;
  /// An integer type: draws are whole numbers, normal's clamped to [min, max].
  bool integer = false;
  double min = 0, max = 0;
};
/// `buffer`'s fill: unset is uniform for in and inout, zeros for out; unset
/// fill_parameters are the fill's defaults for the buffer's type.
FillRule ResolveFill(const v1::SpecBuffer& buffer);

/// Checks a buffer's fill and reset (ValidateSpec): fill_parameters only for
/// uniform and normal, two finite numbers; uniform's low under high
/// (integer types: whole numbers within the type, low <= high); normal's
/// deviation >= 0; fill_value finite; reset on outputs only.
/// INVALID_ARGUMENT naming `path`'s field (e.g. "arguments[0].fill").
absl::Status CheckFill(const v1::SpecBuffer& buffer, const std::string& path);

/// Whether the output `buffer` goes back to its fill before every timed run
/// (reset = "every_run"), outside the timing; otherwise only before the
/// reference's run and each verification run (the default).
bool ResetsEveryRun(const v1::SpecBuffer& buffer);

/// Draws a buffer's elements as its FillRule says: one sampler per buffer,
/// elements in order, from the job's generator.
class FillSampler {
 public:
  explicit FillSampler(const FillRule& rule);
  /// The next element, as a double (an integer type's: a whole number).
  double Next(std::mt19937_64& rng);

 private:
  FillRule rule_;
  std::uniform_real_distribution<double> uniform_;
  std::normal_distribution<double> normal_;
  std::uniform_int_distribution<int64_t> integers_;
};

}  // namespace tuned::spec
