#include "tuned/client.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "families/family.h"
#include "core/paths.h"
#include "core/status.h"

namespace tuned {
namespace {

constexpr auto kCallTimeout = std::chrono::seconds(30);
// RegisterFamily compiles a config of the spec (NVRTC) before it answers.
constexpr auto kRegisterTimeout = std::chrono::seconds(120);

std::unique_ptr<grpc::ClientContext> Context(bool deadline = true,
                                             std::chrono::seconds timeout = kCallTimeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (deadline) ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

}  // namespace

std::string DefaultServerAddress(int gpu) {
  if (const char* env = std::getenv("TUNED_SERVER"); env != nullptr && *env != '\0') return env;
  return "unix:" + DefaultSocketPath(gpu);
}

v1::Problem GemmProblem(int64_t m, int64_t n, int64_t k, v1::Math math, v1::Layout layout,
                        v1::DType dtype) {
  v1::Problem p;
  p.set_family(v1::FAMILY_SGEMM);
  p.set_dtype(dtype);
  p.set_math(math);
  p.set_layout(layout);
  p.add_shape(m);
  p.add_shape(n);
  p.add_shape(k);
  return p;
}

std::string MathName(v1::Math math) {
  return absl::AsciiStrToLower(absl::StripPrefix(EnumName(math), "MATH_"));
}

absl::StatusOr<v1::Math> ParseMath(std::string_view name) {
  for (v1::Math m : {v1::MATH_IEEE_FP32, v1::MATH_FP32_ACCURATE, v1::MATH_TF32}) {
    if (name == MathName(m)) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown math mode '", std::string(name), "' (known: ieee_fp32, fp32_accurate, tf32)"));
}

absl::StatusOr<v1::DType> ParseDType(std::string_view name) {
  for (v1::DType d : {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_BF16_F32,
                      v1::DTYPE_F16_F32}) {
    if (name == DTypeText(d)) return d;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", std::string(name),
                                                 "' (known: f32, bf16, f16, bf16_f32, f16_f32)"));
}

std::string LayoutName(v1::Layout layout) {
  return absl::AsciiStrToLower(absl::StripPrefix(EnumName(layout), "LAYOUT_"));
}

absl::StatusOr<v1::Layout> ParseLayout(std::string_view name) {
  for (v1::Layout l : {v1::LAYOUT_NN, v1::LAYOUT_NT, v1::LAYOUT_TN, v1::LAYOUT_TT}) {
    if (name == LayoutName(l)) return l;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown layout '", std::string(name), "' (known: nn, nt, tn, tt)"));
}

std::string EpilogueName(v1::Epilogue epilogue) {
  return absl::AsciiStrToLower(absl::StripPrefix(EnumName(epilogue), "EPILOGUE_"));
}

absl::StatusOr<v1::Epilogue> ParseEpilogue(std::string_view name) {
  for (int e = v1::EPILOGUE_NONE; e <= v1::EPILOGUE_BIAS_GELU_ERF; ++e) {
    if (name == EpilogueName(static_cast<v1::Epilogue>(e))) return static_cast<v1::Epilogue>(e);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown epilogue '", std::string(name),
      "' (known: none, bias, bias_relu, bias_gelu_tanh, bias_gelu_erf)"));
}

v1::Problem TransposeProblem(int64_t rows, int64_t cols) {
  v1::Problem p;
  p.set_family(v1::FAMILY_TRANSPOSE);
  p.set_dtype(v1::DTYPE_F32);
  p.add_shape(rows);
  p.add_shape(cols);
  return p;
}

v1::Problem FamilyProblem(std::string_view name, std::vector<int64_t> shape,
                          std::string_view spec_hash) {
  v1::Problem p;
  if (const v1::Family id = BuiltinFamilyId(name); id != v1::FAMILY_UNSPECIFIED) {
    p.set_family(id);
    p.set_dtype(v1::DTYPE_F32);
  } else {
    p.set_family_name(std::string(name));
    p.set_spec_hash(std::string(spec_hash));
  }
  for (int64_t d : shape) p.add_shape(d);
  return p;
}

bool IsBuiltinFamily(std::string_view name) {
  return BuiltinFamilyId(name) != v1::FAMILY_UNSPECIFIED;
}

std::string ProblemFamilyName(const v1::Problem& problem) {
  if (!problem.family_name().empty()) return problem.family_name();
  if (std::string name = BuiltinFamilyName(problem.family()); !name.empty()) return name;
  return "family " + EnumName(problem.family());
}

namespace {

absl::Status WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

// The file's bytes, or nullopt if it does not exist.
std::optional<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::Status SaveKernel(const v1::BestKernel& best, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  const std::filesystem::path d(dir);
  v1::BestKernel description = best;
  description.clear_cubin();
  description.clear_source();
  description.clear_ptx();
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(description, &json, opts).ok()) {
    return absl::InternalError("cannot encode kernel.json");
  }
  for (const auto& [name, bytes] : {std::pair{"kernel.json", json}, {"kernel.cu", best.source()},
                                    {"kernel.cubin", best.cubin()}, {"kernel.ptx", best.ptx()}}) {
    TUNED_RETURN_IF_ERROR(WriteFile(d / name, bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::BestKernel> LoadKernelDescription(const std::string& dir) {
  const std::filesystem::path d(dir);
  auto json = ReadFile(d / "kernel.json");
  if (!json) return absl::NotFoundError(absl::StrCat("no kernel.json in ", dir));
  v1::BestKernel best;
  if (auto s = google::protobuf::util::JsonStringToMessage(*json, &best); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(dir, "/kernel.json: ", s.ToString()));
  }
  if (auto cubin = ReadFile(d / "kernel.cubin")) best.set_cubin(*cubin);
  if (auto ptx = ReadFile(d / "kernel.ptx")) best.set_ptx(*ptx);
  if (auto source = ReadFile(d / "kernel.cu")) best.set_source(*source);
  return best;
}

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The channel to `address`: plain on a Unix socket, TLS (+ token) over TCP.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address,
                                                          const ClientOptions& o) {
  if (address.rfind("unix:", 0) == 0) {
    return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  }
  grpc::SslCredentialsOptions ssl;
  for (auto [path, out, what] : {std::tuple{&o.tls_ca, &ssl.pem_root_certs, "--tls-ca"},
                                 {&o.tls_cert, &ssl.pem_cert_chain, "--tls-cert"},
                                 {&o.tls_key, &ssl.pem_private_key, "--tls-key"}}) {
    if (path->empty()) continue;
    if (out == &ssl.pem_private_key) {
      if (auto s = CheckSecretFile(*path, "--tls-key file"); absl::IsPermissionDenied(s)) return s;
    }
    auto pem = ReadFile(*path);
    if (!pem) return absl::NotFoundError(absl::StrCat("cannot read ", what, " file ", *path));
    *out = *pem;
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(ssl);
  if (!o.token.empty()) {
    creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(o.token));
  }
  grpc::ChannelArguments args;
  if (!o.tls_server_name.empty()) args.SetSslTargetNameOverride(o.tls_server_name);
  return grpc::CreateCustomChannel(address, creds, args);
}

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  if (auto s = CheckSecretFile(path, "token file"); absl::IsPermissionDenied(s)) return s;
  auto text = ReadFile(path);
  if (!text) return absl::NotFoundError(absl::StrCat("cannot read token file ", path));
  std::string line = text->substr(0, text->find('\n'));
  const auto first = line.find_first_not_of(" \t\r");
  const auto last = line.find_last_not_of(" \t\r");
  return first == std::string::npos ? "" : line.substr(first, last - first + 1);
}

ClientOptions DefaultClientOptions() {
  ClientOptions o{Env("TUNED_TLS_CA"), Env("TUNED_TLS_CERT"), Env("TUNED_TLS_KEY"),
                  Env("TUNED_TLS_SERVER_NAME"), Env("TUNED_TOKEN")};
  if (o.token.empty() && !Env("TUNED_TOKEN_FILE").empty()) {
    o.token = ReadTokenFile(Env("TUNED_TOKEN_FILE")).value_or("");
  }
  return o;
}

Client::Client(const std::string& address, const ClientOptions& options) : address_(address) {
  auto channel = MakeChannel(address, options);
  if (!channel.ok()) {
    init_ = channel.status();
    // A channel whose calls fail at once; Convert reports init_ instead.
    channel = grpc::CreateChannel("unix:/nonexistent/tuned.sock", grpc::InsecureChannelCredentials());
  }
  channel_ = *channel;
  stub_ = v1::Tuner::NewStub(channel_);
}

absl::Status Client::Convert(const grpc::Status& s) const {
  if (!init_.ok()) return init_;
  if (s.ok()) return absl::OkStatus();
  std::string msg = s.error_message();
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    msg = absl::StrCat("cannot reach tuned at ", address_, " (is the daemon running?): ", msg);
  } else if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    msg = absl::StrCat("the daemon at ", address_, " does not implement this call (it is older "
                       "than this client)", msg.empty() ? "" : ": " + msg);
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), msg);
}

absl::StatusOr<v1::Job> Client::SubmitSweep(const v1::Problem& problem, const std::string& strategy,
                                            const std::string& budget) {
  v1::SubmitSweepRequest req;
  *req.mutable_problem() = problem;
  req.set_strategy(strategy);
  req.set_budget(budget);
  v1::Job job;
  TUNED_RETURN_IF_ERROR(Convert(stub_->SubmitSweep(Context().get(), req, &job)));
  return job;
}

absl::StatusOr<v1::Job> Client::GetJob(int64_t id) {
  v1::GetJobRequest req;
  req.set_id(id);
  v1::Job job;
  TUNED_RETURN_IF_ERROR(Convert(stub_->GetJob(Context().get(), req, &job)));
  return job;
}

absl::StatusOr<v1::Job> Client::WatchJob(int64_t id,
                                         const std::function<void(const v1::Job&)>& on_update) {
  v1::GetJobRequest req;
  req.set_id(id);
  auto ended = [](v1::JobState s) {
    return s == v1::JOB_DONE || s == v1::JOB_FAILED || s == v1::JOB_CANCELLED;
  };
  v1::Job last;
  // The daemon ends a stream after a while (its per-RPC cap): watch again
  // until the job ends.
  do {
    auto ctx = Context(/*deadline=*/false);
    auto reader = stub_->WatchJob(ctx.get(), req);
    v1::JobEvent event;
    bool any = false;
    while (reader->Read(&event)) {
      last = event.job();
      any = true;
      on_update(last);
    }
    TUNED_RETURN_IF_ERROR(Convert(reader->Finish()));
    if (!any) return absl::InternalError("the daemon ended a watch without sending the job");
  } while (!ended(last.state()));
  return last;
}

absl::StatusOr<v1::Job> Client::CancelJob(int64_t id) {
  v1::CancelJobRequest req;
  req.set_id(id);
  v1::Job job;
  TUNED_RETURN_IF_ERROR(Convert(stub_->CancelJob(Context().get(), req, &job)));
  return job;
}

absl::StatusOr<std::vector<v1::Job>> Client::ListJobs(int limit) {
  v1::ListJobsRequest req;
  req.set_limit(limit);
  v1::ListJobsResponse resp;
  TUNED_RETURN_IF_ERROR(Convert(stub_->ListJobs(Context().get(), req, &resp)));
  return std::vector<v1::Job>(resp.jobs().begin(), resp.jobs().end());
}

absl::StatusOr<v1::BestKernel> Client::GetBest(const v1::Problem& problem, bool tune_if_missing) {
  v1::GetBestRequest req;
  *req.mutable_problem() = problem;
  req.set_tune_if_missing(tune_if_missing);
  v1::BestKernel best;
  TUNED_RETURN_IF_ERROR(Convert(stub_->GetBest(Context().get(), req, &best)));
  return best;
}

absl::StatusOr<TunedKernel> Client::Get(const v1::Problem& problem, bool tune_if_missing) {
  auto best = GetBest(problem, tune_if_missing);
  if (!best.ok()) return best.status();
  return TunedKernel::Load(*best);
}

absl::StatusOr<std::vector<v1::Measurement>> Client::ListMeasurements(const v1::Problem& problem,
                                                                      int top) {
  v1::ListMeasurementsRequest req;
  *req.mutable_problem() = problem;
  req.set_top(top);
  v1::ListMeasurementsResponse resp;
  TUNED_RETURN_IF_ERROR(Convert(stub_->ListMeasurements(Context().get(), req, &resp)));
  return std::vector<v1::Measurement>(resp.measurements().begin(), resp.measurements().end());
}

absl::StatusOr<v1::PriorInfo> Client::DescribePrior() {
  v1::PriorInfo info;
  TUNED_RETURN_IF_ERROR(Convert(stub_->DescribePrior(Context().get(), {}, &info)));
  return info;
}

absl::StatusOr<v1::Device> Client::DescribeDevice() {
  v1::Device device;
  TUNED_RETURN_IF_ERROR(Convert(stub_->DescribeDevice(Context().get(), {}, &device)));
  return device;
}

absl::StatusOr<std::vector<v1::Problem>> Client::ListTuned(v1::Family family) {
  v1::ListTunedRequest req;
  req.set_family(family);
  v1::ListTunedResponse resp;
  TUNED_RETURN_IF_ERROR(Convert(stub_->ListTuned(Context().get(), req, &resp)));
  return std::vector<v1::Problem>(resp.problems().begin(), resp.problems().end());
}

absl::StatusOr<bool> Client::Serving(const std::string& service) {
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  TUNED_RETURN_IF_ERROR(Convert(stub->Check(Context().get(), req, &resp)));
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

absl::StatusOr<v1::Job> Client::ImportKernel(const v1::BestKernel& kernel) {
  v1::ImportKernelRequest req;
  *req.mutable_kernel() = kernel;
  v1::Job job;
  TUNED_RETURN_IF_ERROR(Convert(stub_->ImportKernel(Context().get(), req, &job)));
  return job;
}

absl::StatusOr<std::vector<v1::Daemon>> Client::ListDaemons(bool all) {
  v1::ListDaemonsRequest req;
  req.set_all(all);
  v1::ListDaemonsResponse resp;
  TUNED_RETURN_IF_ERROR(Convert(stub_->ListDaemons(Context().get(), req, &resp)));
  return std::vector<v1::Daemon>(resp.daemons().begin(), resp.daemons().end());
}

absl::StatusOr<v1::FamilyInfo> Client::RegisterFamily(const v1::KernelSpec& spec) {
  v1::RegisterFamilyRequest req;
  *req.mutable_spec() = spec;
  v1::FamilyInfo info;
  TUNED_RETURN_IF_ERROR(Convert(stub_->RegisterFamily(Context(true, kRegisterTimeout).get(), req, &info)));
  return info;
}

absl::StatusOr<std::vector<v1::FamilyInfo>> Client::ListFamilies() {
  v1::ListFamiliesResponse resp;
  TUNED_RETURN_IF_ERROR(Convert(stub_->ListFamilies(Context().get(), {}, &resp)));
  return std::vector<v1::FamilyInfo>(resp.families().begin(), resp.families().end());
}

absl::StatusOr<v1::FamilyInfo> Client::GetFamily(const std::string& name,
                                                 const std::string& spec_hash) {
  v1::GetFamilyRequest req;
  req.set_name(name);
  req.set_spec_hash(spec_hash);
  v1::FamilyInfo info;
  TUNED_RETURN_IF_ERROR(Convert(stub_->GetFamily(Context().get(), req, &info)));
  return info;
}

}  // namespace tuned
