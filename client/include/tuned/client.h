// C++ client of the tuned daemon (proto/tuned/v1/tuner.proto).
//
//   tuned::Client client(tuned::DefaultServerAddress());
//   auto job = client.SubmitSweep(tuned::GemmProblem(1024, 1024, 1024));
//   auto best = client.GetBest(tuned::GemmProblem(1024, 1024, 1024));
//
// Every call returns the daemon's gRPC status as an absl::Status with the same
// code (INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED, UNAVAILABLE, ...).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tuned/kernel.h"
#include "tuned/v1/tuner.grpc.pb.h"

namespace tuned {

/// "unix:<path>" of the default socket of the daemon owning GPU `gpu`
/// (see core/paths.h), or $TUNED_SERVER when set.
std::string DefaultServerAddress(int gpu = 0);

/// How to reach a daemon over TCP ("host:port"), which is always TLS with a
/// bearer token (docs/operating.md, "Operating tuned"); ignored for "unix:" addresses.
/// Paths are PEM files.
struct ClientOptions {
  std::string tls_ca;           // CA of the daemon's certificate; empty: the system's roots
  std::string tls_cert;         // client certificate, for a daemon with --tls-client-ca
  std::string tls_key;          // its private key
  std::string tls_server_name;  // name to check the certificate against, if not the host
  std::string token;            // sent as "authorization: Bearer <token>"
};

/// Options from the environment: TUNED_TLS_CA, TUNED_TLS_CERT, TUNED_TLS_KEY,
/// TUNED_TLS_SERVER_NAME, and TUNED_TOKEN or else the first line of the
/// file named by TUNED_TOKEN_FILE.
ClientOptions DefaultClientOptions();

/// The first line of `path` without surrounding whitespace (a token file of
/// the client side); NOT_FOUND if it cannot be read, PERMISSION_DENIED if
/// others may read it (as ssh refuses such a private key).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

/// A GEMM problem (family gemm), row-major C(MxN) = op(A) * op(B), in math mode
/// `math` (tuner.proto Math: MATH_IEEE_FP32, today's kernels, by default;
/// MATH_FP32_ACCURATE admits 3xTF32 tensor-core kernels, MATH_TF32 one-pass
/// TF32) and operand layout `layout` (tuner.proto Layout: LAYOUT_NN, A(MxK)
/// and B(KxN) row-major, by default; LAYOUT_NT takes B stored N x K, as
/// torch's F.linear weight; LAYOUT_TN A stored K x M; LAYOUT_TT both), of
/// element type `dtype` (DTYPE_F32; DTYPE_BF16 and DTYPE_F16 are 16-bit A,
/// B and C with fp32 accumulation, math mode MATH_IEEE_FP32 only).
v1::Problem GemmProblem(int64_t m, int64_t n, int64_t k, v1::Math math = v1::MATH_IEEE_FP32,
                        v1::Layout layout = v1::LAYOUT_NN, v1::DType dtype = v1::DTYPE_F32);
/// GemmProblem by the family's other name (sgemm).
inline v1::Problem SgemmProblem(int64_t m, int64_t n, int64_t k,
                                v1::Math math = v1::MATH_IEEE_FP32,
                                v1::Layout layout = v1::LAYOUT_NN,
                                v1::DType dtype = v1::DTYPE_F32) {
  return GemmProblem(m, n, k, math, layout, dtype);
}
/// The dtype of a name as the CLI and the Python client write it: "f32",
/// "bf16", "f16", "bf16_f32", "f16_f32" (DTypeText). INVALID_ARGUMENT, naming them, for any other
/// text.
absl::StatusOr<v1::DType> ParseDType(std::string_view name);
/// A layout's name as the CLI and the Python client write it: "nn", "nt",
/// "tn", "tt" (the number for an unknown value).
std::string LayoutName(v1::Layout layout);
/// The layout of a name written by LayoutName. INVALID_ARGUMENT, naming the
/// four, for any other text.
absl::StatusOr<v1::Layout> ParseLayout(std::string_view name);
/// An epilogue's name as the CLI and the Python client write it: "none",
/// "bias", "bias_relu", "bias_gelu_tanh", "bias_gelu_erf" (the number for
/// an unknown value).
std::string EpilogueName(v1::Epilogue epilogue);
/// The epilogue of a name written by EpilogueName. INVALID_ARGUMENT, naming
/// the five, for any other text.
absl::StatusOr<v1::Epilogue> ParseEpilogue(std::string_view name);
/// A math mode's name as the CLI and the Python client write it:
/// "ieee_fp32", "fp32_accurate", "tf32" (the number for an unknown value).
std::string MathName(v1::Math math);
/// The math mode of a name written by MathName. INVALID_ARGUMENT, naming the
/// three, for any other text.
absl::StatusOr<v1::Math> ParseMath(std::string_view name);
/// An fp32 transpose problem: out(COLS x ROWS) = in(ROWS x COLS)^T, row-major.
v1::Problem TransposeProblem(int64_t rows, int64_t cols);
/// A problem of the family `name` at `shape`: a built-in family's name
/// ("sgemm": M N K, "transpose": ROWS COLS) sets Problem.family (dtype f32,
/// MATH_IEEE_FP32); any other name is sent as Problem.family_name, a
/// registered kernel spec's (RegisterFamily), whose shape lists the values of
/// its dims in their order, and `spec_hash` picks its version ("" = the
/// newest). The daemon validates the name and the shape (INVALID_ARGUMENT or
/// NOT_FOUND).
v1::Problem FamilyProblem(std::string_view name, std::vector<int64_t> shape,
                          std::string_view spec_hash = "");
/// True for the names of the built-in families ("sgemm", "transpose", ...).
bool IsBuiltinFamily(std::string_view name);
/// The family's name of a problem: the built-in family's ("sgemm") or
/// family_name; "family N" for an enum value this build does not know.
std::string ProblemFamilyName(const v1::Problem& problem);

/// Writes `best` to `dir` as `tunectl export` does: kernel.cu (source),
/// kernel.cubin, kernel.ptx and kernel.json (everything else, protobuf JSON).
absl::Status SaveKernel(const v1::BestKernel& best, const std::string& dir);
/// Reads a directory written by ExportKernel; the cubin is optional (without
/// it the kernel loads from PTX). NOT_FOUND if kernel.json is missing.
absl::StatusOr<v1::BestKernel> LoadKernelDescription(const std::string& dir);

class Client {
 public:
  /// `address`: "unix:/path/to.sock" or "host:port". Connects lazily. A
  /// file of `options` that cannot be read fails every call (NOT_FOUND).
  explicit Client(const std::string& address, const ClientOptions& options = DefaultClientOptions());

  /// `strategy` ("exhaustive", "model") and `budget` ("10s", "64"): "" is
  /// the daemon's default (SubmitSweepRequest).
  absl::StatusOr<v1::Job> SubmitSweep(const v1::Problem& problem, const std::string& strategy = "",
                                      const std::string& budget = "");
  absl::StatusOr<v1::Job> GetJob(int64_t id);
  /// Calls `on_update` with the job on every change until it ends; returns
  /// the final state.
  absl::StatusOr<v1::Job> WatchJob(int64_t id, const std::function<void(const v1::Job&)>& on_update);
  absl::StatusOr<v1::Job> CancelJob(int64_t id);
  /// Newest first; limit <= 0 means the server's default (50).
  absl::StatusOr<std::vector<v1::Job>> ListJobs(int limit = 0);
  /// The tuned kernel: source, cubin, PTX, entry, launch geometry, timings.
  /// For an untuned shape, the nearest tuned shape's kernel (match =
  /// MATCH_NEAREST); `tune_if_missing` also queues a sweep for the shape.
  /// NOT_FOUND if no tuned shape is near (kMaxNearestDistance).
  absl::StatusOr<v1::BestKernel> GetBest(const v1::Problem& problem, bool tune_if_missing = false);
  /// Measurements of the problem, best first; top = 0 for all.
  /// GetBest, then loads the kernel on the current GPU, ready to launch.
  absl::StatusOr<TunedKernel> Get(const v1::Problem& problem, bool tune_if_missing = false);
  absl::StatusOr<std::vector<v1::Measurement>> ListMeasurements(const v1::Problem& problem,
                                                                int top = 0);
  absl::StatusOr<v1::Device> DescribeDevice();
  /// The prior the daemon loaded (prior/README.md) and where it uses it.
  absl::StatusOr<v1::PriorInfo> DescribePrior();
  /// Problems with a tuned kernel on the daemon's device (family 0: all).
  absl::StatusOr<std::vector<v1::Problem>> ListTuned(v1::Family family = v1::FAMILY_UNSPECIFIED);
  /// Stores a kernel exported from a daemon on the same device kind.
  absl::StatusOr<v1::Job> ImportKernel(const v1::BestKernel& kernel);
  /// The daemons sharing the daemon's database (the fleet): host, GPU,
  /// kind, heartbeat age, current job; live ones unless `all`.
  absl::StatusOr<std::vector<v1::Daemon>> ListDaemons(bool all = false);
  /// Registers a kernel spec as a family (e.g. spec::LoadSpecFile's result):
  /// the daemon validates it, compiles one config and stores it under its
  /// name and content hash. Returns the family with spec_hash, space_size
  /// and created (false: this very version was registered before).
  /// INVALID_ARGUMENT naming the field for a bad spec; FAILED_PRECONDITION
  /// unless the daemon allows user kernels (--allow-user-kernels);
  /// ALREADY_EXISTS for a built-in family's name; PERMISSION_DENIED over TCP
  /// without the "register" scope.
  absl::StatusOr<v1::FamilyInfo> RegisterFamily(const v1::KernelSpec& spec);
  /// The built-in families, then the newest version of each kernel spec by name.
  absl::StatusOr<std::vector<v1::FamilyInfo>> ListFamilies();
  /// One family with its spec; `spec_hash` "" is the newest version (a
  /// prefix is not accepted: the full hex hash). NOT_FOUND for an unknown
  /// name or version.
  absl::StatusOr<v1::FamilyInfo> GetFamily(const std::string& name,
                                           const std::string& spec_hash = "");
  /// The standard health check (grpc.health.v1): true if `service` ("" for
  /// the daemon as a whole) is SERVING, false if NOT_SERVING (e.g. draining).
  absl::StatusOr<bool> Serving(const std::string& service = "");

  const std::string& address() const { return address_; }

 private:
  absl::Status Convert(const grpc::Status& status) const;
  std::string address_;
  absl::Status init_;  // a TLS or token file that could not be read
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Tuner::Stub> stub_;
};

}  // namespace tuned
