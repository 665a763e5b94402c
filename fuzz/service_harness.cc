#include "fuzz/service_harness.h"

#include "fuzz/fuzz_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <streambuf>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "families/family.h"
#include "server/best_pollers.h"
#include "server/health.h"
#include "server/jobs/jobs.h"
#include "server/service.h"
#include "server/worker_client.h"
#include "tuned/client.h"
#include "spdlog/spdlog.h"

namespace tuned::fuzz {

namespace {

[[noreturn]] void Die(const std::string& what) {
  fprintf(stderr, "fuzz harness: %s\n", what.c_str());
  abort();
}

std::string WorkerPath() {
  if (const char* env = std::getenv("TUNED_WORKER_PATH"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / "tuned-worker")) {
    return (self.parent_path() / "tuned-worker").string();
  }
  return TUNED_FUZZ_WORKER_PATH;
}

// A kernel spec the seeded store holds (examples/kernels/matmul, its source inline).
constexpr char kMatmulSpec[] = R"json({
  "name": "matmul_tiled", "kernel": "matmul_tiled", "dims": ["m", "n", "k"],
  "source": "__global__ void matmul_tiled(const float* A, const float* B, float* C, int m, int n, int k) {}\n__global__ void matmul_naive(const float* A, const float* B, float* C, int m, int n, int k) {}\n",
  "restrictions": ["m % TILE == 0 && n % TILE == 0 && k % TILE == 0"],
  "params": [{"name": "TILE", "values": [8, 16, 32]}, {"name": "PAD", "values": [0, 1]}],
  "arguments": [
    {"name": "A", "type": "f32", "size": "m * k", "role": "in", "fill": "uniform"},
    {"name": "B", "type": "f32", "size": "k * n", "role": "in", "fill": "uniform"},
    {"name": "C", "type": "f32", "size": "m * n", "role": "out"},
    {"name": "m", "type": "i32", "value": "m"}, {"name": "n", "type": "i32", "value": "n"},
    {"name": "k", "type": "i32", "value": "k"}],
  "launch": {"block": ["TILE", "TILE"], "grid": ["n / TILE", "m / TILE"]},
  "verification": {"reference": "matmul_naive", "rtol": 1e-4, "atol": 1e-4,
                   "launch": {"block": [16, 16], "grid": ["ceil_div(n, 16)", "ceil_div(m, 16)"]}},
  "work": {"expression": "2 * m * n * k", "unit": "GFLOPS"},
  "default_config": {"TILE": 16, "PAD": 0}
})json";

// Stand-ins for a kernel's binaries (nothing runs them).
const std::string kSeedCubin = std::string("\x7f" "ELF\x02\x01\x01", 7) + std::string(57, '\0');
constexpr char kSeedPtx[] = ".version 8.0\n.target sm_90\n.address_size 64\n";

}  // namespace

struct ServiceHarness::State {
  std::unique_ptr<Store> store;
  std::unique_ptr<JobRunner> runner;
  std::unique_ptr<TunerService> service;
  std::unique_ptr<BestPollers> best_pollers;
  HealthService health;
  std::unique_ptr<grpc::Server> server;
};

// Kept for the whole process: the worker is started once, for its device.
static std::unique_ptr<WorkerClient>* worker = nullptr;

ServiceHarness& ServiceHarness::Get() {
  static ServiceHarness* harness = [] {
    auto* h = new ServiceHarness();
    h->Build();
    return h;
  }();
  return *harness;
}

std::unique_ptr<grpc::ClientContext> ServiceHarness::Context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

void ServiceHarness::Open() {
  auto store = Store::Open(db_);
  if (!store.ok()) Die(absl::StrCat("store: ", store.status().ToString()));
  auto device_id = (*store)->UpsertDevice((*worker)->device());
  if (!device_id.ok()) Die(absl::StrCat("device: ", device_id.status().ToString()));
  state_ = std::make_unique<State>();
  state_->store = *std::move(store);
  // Never started: a sweep that passes every check is queued and stays so.
  // The worker stands in for the compiler too; only its device is used
  // (the runner's Stop, at the first reset, interrupts it: no matter).
  state_->runner = std::make_unique<JobRunner>(state_->store.get(), worker->get(), worker->get(),
                                               *device_id,
                                               DaemonIdentity{.host = "fuzz", .gpu = 0, .gpu_uuid = "fuzz"},
                                               JobRunnerOptions{.user_kernels = true});
  ServiceOptions options;
  options.allow_user_kernels = true;  // RegisterFamily checks specs but compiles nothing (no worker_path)
  static const auto prior = search::Prior::Shipped();  // DescribePrior's table over this store
  if (prior.ok()) options.prior = &*prior;
  options.max_jobs_per_client = 4;
  options.max_configs_per_client = 100000;
  state_->service = std::make_unique<TunerService>(state_->store.get(), state_->runner.get(), *device_id, options);
  grpc::ServerBuilder builder;
  builder.RegisterService(state_->service.get());
  builder.RegisterService(&state_->health);
  for (const std::string& name : {std::string(), std::string(v1::Tuner::service_full_name())}) {
    state_->health.SetServingStatus(name, true);
  }
  builder.experimental().SetInterceptorCreators(ServerInterceptors());
  builder.SetMaxReceiveMessageSize(64 << 20);
  state_->best_pollers = std::make_unique<BestPollers>(builder, state_->service.get(), 1);
  state_->server = builder.BuildAndStart();
  if (state_->server == nullptr) Die("the gRPC server did not start");
  state_->best_pollers->Start();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = state_->server->InProcessChannel(args);
  stub_ = v1::Tuner::NewStub(channel);
  health_ = grpc::health::v1::Health::NewStub(channel);
}

void ServiceHarness::Close() {
  stub_.reset();
  health_.reset();
  if (state_ != nullptr) {
    state_->health.Shutdown();
    state_->server->Shutdown(std::chrono::system_clock::now());
    state_->server->Wait();
    state_->best_pollers->Stop();
    state_->server.reset();
    state_->best_pollers.reset();
    state_->service.reset();
    state_->runner.reset();
    state_->store.reset();
    state_.reset();
  }
  ForgetSpecFamilies();
}

std::string ServiceHarness::FileStamp() const {
  std::string stamp;
  for (const std::string& path : {db_, db_ + "-wal"}) {
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) {
      stamp += "-;";
      continue;
    }
    absl::StrAppend(&stamp, st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ";");
  }
  return stamp;
}

void ServiceHarness::Build() {
  Quiet();
  spdlog::set_level(spdlog::level::off);
  dir_ = TempDir("tuned_fuzz");
  db_ = dir_ + "/t.db";
  template_ = dir_ + "/template.db";
  worker = new std::unique_ptr<WorkerClient>();
  // The worker is built with ASan too; its leaks are not this target's.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string saved = asan != nullptr ? asan : "";
  setenv("ASAN_OPTIONS", (saved.empty() ? std::string("detect_leaks=0") : saved + ":detect_leaks=0").c_str(), 1);
  auto started = WorkerClient::Start(WorkerPath(), {"--gpu", "0", "--compile-only", "--device-memory-mib", "1024"});
  if (asan != nullptr) {
    setenv("ASAN_OPTIONS", saved.c_str(), 1);
  } else {
    unsetenv("ASAN_OPTIONS");
  }
  if (!started.ok()) Die(absl::StrCat("worker ", WorkerPath(), ": ", started.status().ToString()));
  *worker = *std::move(started);

  // The seeded store: a kernel spec and an imported kernel of each family.
  Open();
  const v1::Device device = (*worker)->device();
  {
    v1::RegisterFamilyRequest req;
    req.set_json(kMatmulSpec);
    v1::FamilyInfo info;
    const grpc::Status s = stub_->RegisterFamily(Context().get(), req, &info);
    if (!s.ok()) Die(absl::StrCat("seed spec: ", s.error_message()));
  }
  auto import = [&](v1::Problem problem) {
    const Family* family = FindFamily(problem);
    if (family == nullptr) {  // the spec: GetFamily loads it and names its version
      v1::GetFamilyRequest get;
      get.set_name(problem.family_name());
      v1::FamilyInfo info;
      (void)stub_->GetFamily(Context().get(), get, &info);
      problem.set_spec_hash(info.spec_hash());
      family = FindFamily(problem);
      if (family == nullptr) Die("seed: no family for " + problem.ShortDebugString());
    }
    const Config config = family->Space().front();
    v1::ImportKernelRequest req;
    v1::BestKernel* k = req.mutable_kernel();
    *k->mutable_problem() = problem;
    *k->mutable_device() = device;
    for (int64_t d : problem.shape()) k->add_tuned_shape(d);
    v1::Measurement* m = k->mutable_measurement();
    m->set_status(v1::MEASUREMENT_OK);
    m->set_median_ms(0.5);
    m->set_metric(100);
    m->mutable_config()->set_name(family->ConfigName(config));
    for (const auto& [key, v] : config) (*m->mutable_config()->mutable_params())[key] = v;
    k->set_cubin(kSeedCubin);
    k->set_ptx(kSeedPtx);
    k->set_entry("kernel_entry");
    k->set_baseline_ms(0.6);
    k->set_baseline_metric(80);
    k->set_baseline_name(std::string(family->baseline_name()));
    k->set_speedup(1.2);
    k->set_speedup_ci_low(1.1);
    k->set_speedup_ci_high(1.3);
    k->set_speedup_pairs(20);
    v1::Job job;
    const grpc::Status s = stub_->ImportKernel(Context().get(), req, &job);
    if (!s.ok()) Die(absl::StrCat("seed import ", problem.ShortDebugString(), ": ", s.error_message()));
  };
  v1::Problem sgemm;
  sgemm.set_family(v1::FAMILY_SGEMM);
  sgemm.set_dtype(v1::DTYPE_F32);
  sgemm.set_math(v1::MATH_IEEE_FP32);
  for (int64_t d : {1024, 1024, 1024}) sgemm.add_shape(d);
  import(sgemm);
  v1::Problem transpose;
  transpose.set_family(v1::FAMILY_TRANSPOSE);
  transpose.set_dtype(v1::DTYPE_F32);
  transpose.set_math(v1::MATH_IEEE_FP32);
  for (int64_t d : {4096, 4096}) transpose.add_shape(d);
  import(transpose);
  v1::Problem spec;
  spec.set_family_name("matmul_tiled");
  for (int64_t d : {512, 512, 512}) spec.add_shape(d);
  import(spec);
  Close();
  std::filesystem::copy_file(db_, template_, std::filesystem::copy_options::overwrite_existing);
  Open();
  stamp_ = FileStamp();
}

void ServiceHarness::ResetIfChanged() {
  if (FileStamp() == stamp_) return;
  Close();
  std::error_code ec;
  std::filesystem::remove(db_ + "-wal", ec);
  std::filesystem::remove(db_ + "-shm", ec);
  std::filesystem::copy_file(template_, db_, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) Die("restoring the store: " + ec.message());
  Open();
  stamp_ = FileStamp();
}

}  // namespace tuned::fuzz

namespace tuned::fuzz {

namespace {

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

v1::Problem Problem(v1::Family family, std::vector<int64_t> shape, v1::Math math = v1::MATH_IEEE_FP32) {
  v1::Problem p;
  p.set_family(family);
  p.set_dtype(v1::DTYPE_F32);
  p.set_math(math);
  for (int64_t d : shape) p.add_shape(d);
  return p;
}

v1::Problem SpecProblem(std::vector<int64_t> shape) {
  v1::Problem p;
  p.set_family_name("matmul_tiled");
  for (int64_t d : shape) p.add_shape(d);
  return p;
}

}  // namespace

void ServiceHarness::WriteSeeds(const std::string& dir) {
  const std::string rpc = dir + "/rpc", import = dir + "/import_kernel";
  std::filesystem::create_directories(rpc);
  std::filesystem::create_directories(import);
  // rpc: the method's number (rpc_fuzz.cc), then the request.
  auto seed = [&](const std::string& name, int method, const google::protobuf::Message& req) {
    WriteFile(rpc + "/" + name, std::string(1, static_cast<char>(method)) + req.SerializeAsString());
  };
  const v1::Problem sgemm = Problem(v1::FAMILY_SGEMM, {1024, 1024, 1024});
  const v1::Problem transpose = Problem(v1::FAMILY_TRANSPOSE, {4096, 4096});
  const v1::Problem spec = SpecProblem({512, 512, 512});
  {
    v1::SubmitSweepRequest r;
    *r.mutable_problem() = Problem(v1::FAMILY_SGEMM, {512, 512, 512});
    seed("submit-sgemm", 0, r);
    r.set_strategy("model");
    r.set_budget("10s");
    seed("submit-sgemm-model", 0, r);
    *r.mutable_problem() = Problem(v1::FAMILY_TRANSPOSE, {64, 64});
    r.set_strategy("exhaustive");
    r.set_budget("64");
    seed("submit-transpose", 0, r);
    *r.mutable_problem() = SpecProblem({256, 256, 256});
    seed("submit-spec", 0, r);
    *r.mutable_problem() = Problem(v1::FAMILY_SGEMM, {8192, 8192, 16384}, v1::MATH_TF32);
    seed("submit-too-big", 0, r);
  }
  for (int64_t id : {1, 3}) {
    v1::GetJobRequest r;
    r.set_id(id);
    seed(absl::StrCat("get-job-", id), 1, r);
    seed(absl::StrCat("watch-job-", id), 2, r);
    v1::CancelJobRequest c;
    c.set_id(id);
    seed(absl::StrCat("cancel-job-", id), 3, c);
  }
  {
    v1::ListJobsRequest r;
    seed("list-jobs", 4, r);
    r.set_limit(2);
    seed("list-jobs-2", 4, r);
  }
  for (const auto& [name, problem] : {std::pair{"sgemm", sgemm}, {"transpose", transpose}, {"spec", spec},
                                      {"sgemm-nearest", Problem(v1::FAMILY_SGEMM, {1000, 17, 4097})},
                                      {"sgemm-tf32", Problem(v1::FAMILY_SGEMM, {1024, 1024, 1024}, v1::MATH_TF32)}}) {
    v1::GetBestRequest r;
    *r.mutable_problem() = problem;
    seed(absl::StrCat("get-best-", name), 5, r);
    r.set_view(v1::BEST_VIEW_BASIC);
    r.set_tune_if_missing(true);
    seed(absl::StrCat("get-best-basic-", name), 5, r);
    v1::ListMeasurementsRequest m;
    *m.mutable_problem() = problem;
    m.set_top(1);
    seed(absl::StrCat("list-measurements-", name), 6, m);
  }
  seed("describe-device", 7, v1::DescribeDeviceRequest());
  seed("describe-prior", 14, v1::DescribePriorRequest());
  {
    v1::ListTunedRequest r;
    seed("list-tuned", 8, r);
    r.set_family(v1::FAMILY_TRANSPOSE);
    seed("list-tuned-transpose", 8, r);
  }
  {
    v1::ListDaemonsRequest r;
    r.set_all(true);
    seed("list-daemons", 10, r);
  }
  {
    v1::RegisterFamilyRequest r;
    r.set_json(kMatmulSpec);
    seed("register-json", 11, r);
    v1::GetFamilyRequest g;
    g.set_name("matmul_tiled");
    v1::FamilyInfo info;
    (void)stub_->GetFamily(Context().get(), g, &info);
    v1::RegisterFamilyRequest as_message;
    *as_message.mutable_spec() = info.spec();
    as_message.mutable_spec()->set_name("matmul_copy");
    seed("register-message", 11, as_message);
    seed("get-family-spec", 13, g);
    g.set_spec_hash(info.spec_hash());
    seed("get-family-spec-hash", 13, g);
    g.set_name("sgemm");
    g.clear_spec_hash();
    seed("get-family-sgemm", 13, g);
  }
  seed("list-families", 12, v1::ListFamiliesRequest());
  for (const char* service : {"", "tuned.v1.Tuner", "no.such.Service"}) {
    grpc::health::v1::HealthCheckRequest h;
    h.set_service(service);
    seed(absl::StrCat("health-check-", *service ? service : "server"), 15, h);
    seed(absl::StrCat("health-watch-", *service ? service : "server"), 16, h);
  }
  // ImportKernel (rpc) and kernel files (import_kernel): what the store serves.
  for (const auto& [name, problem] : {std::pair{"sgemm", sgemm}, {"transpose", transpose}, {"spec", spec}}) {
    v1::GetBestRequest r;
    *r.mutable_problem() = problem;
    r.set_view(v1::BEST_VIEW_BASIC);  // the family's source (tens of KB) is never imported
    v1::BestKernel best;
    const grpc::Status s = stub_->GetBest(Context().get(), r, &best);
    if (!s.ok()) Die(absl::StrCat("seed GetBest ", name, ": ", s.error_message()));
    best.set_cubin(kSeedCubin);
    best.set_ptx(kSeedPtx);
    v1::ImportKernelRequest imp;
    *imp.mutable_kernel() = best;
    seed(absl::StrCat("import-", name), 9, imp);
    const std::string d = absl::StrCat(dir, "/.export-", name);
    if (auto saved = SaveKernel(best, d); !saved.ok()) Die(saved.ToString());
    std::string files;
    for (const char* f : {"kernel.json", "kernel.cubin", "kernel.ptx", "kernel.cu"}) {
      std::ifstream in(d + "/" + f, std::ios::binary);
      std::stringstream bytes;
      bytes << in.rdbuf();
      if (!files.empty() || std::string(f) != "kernel.json") files += "\n@@@\n";
      files += bytes.str();
    }
    std::filesystem::remove_all(d);
    WriteFile(absl::StrCat(import, "/export-", name), files);
    // Only the description (no cubin: the daemon refuses it).
    std::ifstream in(absl::StrCat(import, "/export-", name), std::ios::binary);
    std::stringstream all;
    all << in.rdbuf();
    WriteFile(absl::StrCat(import, "/json-only-", name), all.str().substr(0, all.str().find("\n@@@\n")));
  }
}

void MaybeWriteSeeds() {
  const char* dir = std::getenv("TUNED_FUZZ_WRITE_SEEDS");
  if (dir == nullptr || *dir == '\0') return;
  ServiceHarness::Get().WriteSeeds(dir);
  exit(0);
}

}  // namespace tuned::fuzz
