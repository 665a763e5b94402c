// Kernel specs through the real daemon (`tuned --compile-only`, real gRPC
// channel, real worker and compiler processes): registering the specs of
// examples/kernels/, refusing bad ones with nothing stored, sweeping a spec
// (every config compiled with NVRTC), and versions that never mix.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "db/store.h"
#include "families/spec/spec.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tuned/v1/tuner.grpc.pb.h"

namespace tuned {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const char* const kExamples[] = {"matmul", "reduction", "stencil", "softmax", "histogram"};

v1::KernelSpec Example(const std::string& name) {
  auto spec = spec::LoadSpecFile(std::string(TUNED_EXAMPLES_DIR) + "/" + name + "/spec.toml");
  EXPECT_TRUE(spec.ok()) << name << ": " << spec.status();
  return spec.ok() ? *spec : v1::KernelSpec();
}

class UserKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("tuned_user_kernels_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    daemon_.reset();
    fs::remove_all(dir_);
  }

  /// Starts the daemon with `flags` (and `env` in its environment) and connects.
  void Start(std::vector<std::string> flags = {"--allow-user-kernels"},
             std::vector<std::string> env = {}) {
    daemon_ = std::make_unique<DaemonProcess>(TUNED_DAEMON_PATH, dir_, flags, env);
    ASSERT_TRUE(daemon_->WaitServing()) << daemon_->RunLog();
    // A channel of its own connections: gRPC's shared pool may hand a new
    // channel the broken connection to a daemon that was restarted.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stub_ = v1::Tuner::NewStub(
        grpc::CreateCustomChannel(daemon_->address(), grpc::InsecureChannelCredentials(), args));
  }

  grpc::Status Register(const v1::KernelSpec& spec, v1::FamilyInfo* info) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 120s);
    v1::RegisterFamilyRequest req;
    *req.mutable_spec() = spec;
    return stub_->RegisterFamily(&ctx, req, info);
  }

  std::vector<v1::FamilyInfo> Families() {
    grpc::ClientContext ctx;
    v1::ListFamiliesResponse resp;
    const grpc::Status s = stub_->ListFamilies(&ctx, v1::ListFamiliesRequest(), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.families().begin(), resp.families().end()};
  }

  /// Submits a sweep of `problem` and waits for its end.
  v1::Job Sweep(const v1::Problem& problem) {
    grpc::ClientContext ctx;
    v1::SubmitSweepRequest req;
    *req.mutable_problem() = problem;
    v1::Job job;
    const grpc::Status s = stub_->SubmitSweep(&ctx, req, &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    if (!s.ok()) return job;
    for (int i = 0; i < 1200; ++i) {
      grpc::ClientContext c;
      v1::GetJobRequest get;
      get.set_id(job.id());
      EXPECT_TRUE(stub_->GetJob(&c, get, &job).ok());
      if (job.state() == v1::JOB_DONE || job.state() == v1::JOB_FAILED) return job;
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "job " << job.id() << " did not end: " << job.ShortDebugString();
    return job;
  }

  std::vector<v1::Measurement> Measurements(const v1::Problem& problem) {
    grpc::ClientContext ctx;
    v1::ListMeasurementsRequest req;
    *req.mutable_problem() = problem;
    v1::ListMeasurementsResponse resp;
    const grpc::Status s = stub_->ListMeasurements(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.measurements().begin(), resp.measurements().end()};
  }

  static v1::Problem SpecProblem(const std::string& name, std::vector<int64_t> shape,
                                 const std::string& hash = "") {
    v1::Problem p;
    p.set_family_name(name);
    p.set_spec_hash(hash);
    p.mutable_shape()->Assign(shape.begin(), shape.end());
    return p;
  }

  fs::path dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<v1::Tuner::Stub> stub_;
};

TEST_F(UserKernelsTest, RegisteringIsOffUnlessTheDaemonAllowsIt) {
  Start({});
  v1::FamilyInfo info;
  const grpc::Status s = Register(Example("softmax"), &info);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("--allow-user-kernels"), std::string::npos) << s.error_message();
  EXPECT_EQ(Families().size(), 2u);  // sgemm and transpose only
}

TEST_F(UserKernelsTest, TheExamplesRegisterOnceEachAndAreListedAndShown) {
  Start();
  std::set<std::string> names;
  for (const char* example : kExamples) {
    const v1::KernelSpec spec = Example(example);
    v1::FamilyInfo info;
    grpc::Status s = Register(spec, &info);
    ASSERT_TRUE(s.ok()) << example << ": " << s.error_message();
    EXPECT_TRUE(info.created()) << example;
    EXPECT_FALSE(info.builtin());
    EXPECT_EQ(info.name(), spec.name());
    EXPECT_EQ(info.spec_hash(), spec::SpecHash(spec));
    auto space = spec::EnumerateSpace(spec);
    ASSERT_TRUE(space.ok());
    EXPECT_EQ(info.space_size(), static_cast<int64_t>(space->size())) << example;
    EXPECT_EQ(info.versions(), 1);
    EXPECT_EQ(info.client(), "local");
    // Registering the same spec again changes nothing.
    v1::FamilyInfo again;
    s = Register(spec, &again);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(again.created());
    EXPECT_EQ(again.versions(), 1);
    names.insert(spec.name());
  }
  const auto families = Families();
  ASSERT_EQ(families.size(), 2u + names.size());
  EXPECT_EQ(families[0].name(), "sgemm");
  EXPECT_EQ(families[1].name(), "transpose");
  EXPECT_TRUE(families[1].builtin());
  for (size_t i = 2; i < families.size(); ++i) EXPECT_TRUE(names.contains(families[i].name()));

  grpc::ClientContext ctx;
  v1::GetFamilyRequest get;
  get.set_name("softmax_rows");
  v1::FamilyInfo shown;
  ASSERT_TRUE(stub_->GetFamily(&ctx, get, &shown).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(shown.spec(), Example("softmax")))
      << shown.spec().ShortDebugString();
  grpc::ClientContext ctx2;
  get.set_name("no_such_family");
  EXPECT_EQ(stub_->GetFamily(&ctx2, get, &shown).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(UserKernelsTest, BadSpecsAreRefusedNamingTheFieldAndNothingIsStored) {
  Start();
  struct Case {
    const char* what;
    std::function<void(v1::KernelSpec&)> change;
    grpc::StatusCode code;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {"unknown name", [](v1::KernelSpec& s) { s.mutable_launch()->set_grid(0, "rows2"); },
       grpc::StatusCode::INVALID_ARGUMENT, {"launch.grid[0]", "unknown name 'rows2'"}},
      {"missing kernel", [](v1::KernelSpec& s) { s.set_kernel("softmax2<THREADS, VEC>"); },
       grpc::StatusCode::INVALID_ARGUMENT, {"kernel", "no __global__ function \"softmax2\""}},
      {"empty space", [](v1::KernelSpec& s) { s.add_restrictions("THREADS > 4096"); },
       grpc::StatusCode::INVALID_ARGUMENT, {"restrictions", "empty"}},
      {"source that does not compile",
       [](v1::KernelSpec& s) { s.set_source(s.source() + "\n__global__ void broken() { this is not C++; }\n"); },
       grpc::StatusCode::INVALID_ARGUMENT, {"source", "does not compile"}},
      {"a built-in family's name", [](v1::KernelSpec& s) { s.set_name("transpose"); },
       grpc::StatusCode::ALREADY_EXISTS, {"built-in"}},
  };
  for (const Case& c : cases) {
    v1::KernelSpec spec = Example("softmax");
    c.change(spec);
    v1::FamilyInfo info;
    const grpc::Status s = Register(spec, &info);
    EXPECT_EQ(s.error_code(), c.code) << c.what << ": " << s.error_message();
    for (const std::string& e : c.expect) {
      EXPECT_NE(s.error_message().find(e), std::string::npos) << c.what << ": '" << s.error_message()
                                                              << "' lacks '" << e << "'";
    }
  }
  {  // a spec as a message and as JSON at once: which one was meant?
    grpc::ClientContext both_ctx;
    v1::RegisterFamilyRequest both;
    *both.mutable_spec() = Example("softmax");
    both.set_json(R"({"name": "softmax_json"})");
    v1::FamilyInfo info;
    const grpc::Status s = stub_->RegisterFamily(&both_ctx, both, &info);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find("not both"), std::string::npos) << s.error_message();
  }
  EXPECT_EQ(Families().size(), 2u);
  // Nor does this daemon hold a refused spec: its version cannot be swept.
  v1::KernelSpec broken = Example("softmax");
  cases[3].change(broken);
  grpc::ClientContext ctx;
  v1::SubmitSweepRequest sweep;
  *sweep.mutable_problem() = SpecProblem("softmax_rows", {256, 100}, spec::SpecHash(broken));
  v1::Job job;
  const grpc::Status s = stub_->SubmitSweep(&ctx, sweep, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
}

// --allow-user-kernels guards running a spec's code, not only registering
// it: a daemon without it lists a registered spec but refuses its sweep
// (nothing queued), and leaves a job of the spec that another daemon queued
// alone (not advanced, nothing compiled); the job runs once a daemon that
// allows user kernels is up.
TEST_F(UserKernelsTest, ADaemonWithoutTheFlagNeverCompilesOrRunsASpec) {
  Start();
  const v1::KernelSpec spec = Example("softmax");
  v1::FamilyInfo info;
  ASSERT_TRUE(Register(spec, &info).ok());
  v1::Device device;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->DescribeDevice(&ctx, v1::DescribeDeviceRequest(), &device).ok());
  }
  daemon_.reset();

  Start({});
  EXPECT_EQ(Families().size(), 3u);  // the spec is listed: reading it runs nothing
  const v1::Problem problem = SpecProblem("softmax_rows", {256, 100}, spec::SpecHash(spec));
  {
    grpc::ClientContext ctx;
    v1::SubmitSweepRequest req;
    *req.mutable_problem() = problem;
    v1::Job job;
    const grpc::Status s = stub_->SubmitSweep(&ctx, req, &job);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
    EXPECT_NE(s.error_message().find("--allow-user-kernels"), std::string::npos) << s.error_message();
  }
  // A job of the spec queued by a daemon that allows them, as a fleet's
  // other daemon would: this one leaves it queued.
  auto store = Store::Open((dir_ / "tuned.db").string());
  ASSERT_TRUE(store.ok()) << store.status();
  auto device_id = (*store)->UpsertDevice(device);
  ASSERT_TRUE(device_id.ok()) << device_id.status();
  auto id = (*store)->CreateJob(*device_id, problem, 8, 0);
  ASSERT_TRUE(id.ok()) << id.status();
  std::this_thread::sleep_for(3s);  // a dozen of the daemon's idle polls (JobRunner::kIdlePoll)
  auto waiting = (*store)->GetJob(*id);
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->state(), v1::JOB_QUEUED);
  EXPECT_EQ(waiting->round(), 0);
  EXPECT_TRUE(Measurements(problem).empty());
  daemon_.reset();

  Start();
  v1::Job done;
  for (int i = 0; i < 1200; ++i) {
    auto job = (*store)->GetJob(*id);
    ASSERT_TRUE(job.ok());
    done = *job;
    if (done.state() == v1::JOB_DONE || done.state() == v1::JOB_FAILED) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(done.state(), v1::JOB_DONE) << done.ShortDebugString();
  EXPECT_FALSE(Measurements(problem).empty());
}

// A spec whose source includes a file of the host (the daemon's
// environment, with a secret in it; the password file; a token file; a TLS
// key) is refused at registration naming the include, and neither the
// response nor the daemon's log carries the file's contents.
TEST_F(UserKernelsTest, ASpecCannotReadTheHostsFiles) {
  const std::string secret = "tuned-test-secret-5f3a9c";
  fs::create_directories(dir_);
  std::ofstream(dir_ / "tokens") << "alice:" << secret << " register\n";
  std::ofstream(dir_ / "tls.key") << "-----BEGIN PRIVATE KEY-----\n" << secret << "\n";
  Start({"--allow-user-kernels"}, {"TUNED_TEST_SECRET=" + secret});
  const v1::KernelSpec base = Example("softmax");
  for (const std::string& include :
       {std::string("#include \"/proc/self/environ\""), std::string("#include </etc/passwd>"),
        "#include \"" + (dir_ / "tokens").string() + "\"", "#include <" + (dir_ / "tls.key").string() + ">",
        std::string("#include \"../../../../proc/self/environ\""),
        std::string("#if __has_include(\"/proc/self/environ\")\n#endif")}) {
    SCOPED_TRACE(include);
    v1::KernelSpec spec = base;
    spec.set_source(include + "\n" + spec.source());
    v1::FamilyInfo info;
    const grpc::Status s = Register(spec, &info);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("source: line 1"), std::string::npos) << s.error_message();
    EXPECT_EQ(s.error_message().find(secret), std::string::npos);
    EXPECT_EQ(s.error_message().find("root:"), std::string::npos);  // /etc/passwd's first line
  }
  EXPECT_EQ(Families().size(), 2u);  // nothing stored
  EXPECT_EQ(daemon_->RunLog().find(secret), std::string::npos);
}

// A spec whose arguments do not match its kernel's parameters (one too few,
// one too many, a scalar of the wrong size) is refused at registration,
// naming the argument, rather than failing at run time.
TEST_F(UserKernelsTest, ArgumentsThatDoNotMatchTheKernelAreRefused) {
  Start();
  const v1::KernelSpec base = Example("softmax");  // x, y, rows, cols
  v1::KernelSpec fewer = base;
  fewer.mutable_arguments()->RemoveLast();
  v1::KernelSpec more = base;
  *more.add_arguments() = base.arguments(3);
  more.mutable_arguments(4)->set_name("extra");
  v1::KernelSpec wider = base;
  wider.mutable_arguments(2)->mutable_scalar()->set_type(v1::SPEC_TYPE_I64);
  v1::KernelSpec pointer = base;
  *pointer.mutable_arguments(3)->mutable_buffer() = base.arguments(0).buffer();
  for (const auto& [spec, want] :
       std::vector<std::pair<v1::KernelSpec, std::string>>{
           {fewer, "takes 4 parameters, the spec passes 3"},
           {more, "takes 4 parameters, the spec passes 5"},
           {wider, "arguments[2] (rows): the kernel's parameter 2 takes 4 bytes, the spec passes i64 of 8"},
           {pointer, "arguments[3] (cols): the kernel's parameter 3 takes 4 bytes, the spec passes a pointer"}}) {
    v1::FamilyInfo info;
    const grpc::Status s = Register(spec, &info);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << want;
    EXPECT_NE(s.error_message().find(want), std::string::npos) << s.error_message();
  }
  EXPECT_EQ(Families().size(), 2u);  // nothing stored
  v1::FamilyInfo info;
  EXPECT_TRUE(Register(base, &info).ok());
}

// The 12 digits of a version that `tunectl families` prints name it: a
// sweep by them runs the full version.
TEST_F(UserKernelsTest, AVersionIsNamedByThePrefixThatTunectlPrints) {
  Start();
  const v1::KernelSpec spec = Example("softmax");
  v1::FamilyInfo info;
  ASSERT_TRUE(Register(spec, &info).ok());
  const std::string hash = spec::SpecHash(spec);
  const v1::Job job = Sweep(SpecProblem("softmax_rows", {256, 100}, hash.substr(0, 12)));
  EXPECT_EQ(job.problem().spec_hash(), hash);
  EXPECT_EQ(job.state(), v1::JOB_DONE) << job.error();
}

TEST_F(UserKernelsTest, ASweepOfASpecCompilesEveryConfigOfItsProblem) {
  Start();
  const v1::KernelSpec spec = Example("softmax");
  v1::FamilyInfo info;
  ASSERT_TRUE(Register(spec, &info).ok());
  const v1::Job job = Sweep(SpecProblem("softmax_rows", {256, 100}));
  EXPECT_EQ(job.problem().family_name(), "softmax_rows");
  EXPECT_EQ(job.problem().spec_hash(), spec::SpecHash(spec));
  auto space = spec::EnumerateSpace(spec, {{"rows", 256}, {"cols", 100}});
  ASSERT_TRUE(space.ok());
  ASSERT_FALSE(space->empty());
  EXPECT_EQ(job.total(), static_cast<int>(space->size()));
  const auto ms = Measurements(SpecProblem("softmax_rows", {256, 100}));
  std::set<std::string> names;
  for (const auto& m : ms) {
    EXPECT_EQ(m.status(), v1::MEASUREMENT_COMPILED) << m.config().name() << ": " << m.message();
    names.insert(m.config().name());
  }
  EXPECT_EQ(names.size(), space->size());
  // THREADS * VEC <= 4 * cols = 400 holds for 64 x 4, not for 128 x 4.
  EXPECT_TRUE(names.contains("softmax_rows_THREADS64_VEC4")) << *names.begin();
  EXPECT_FALSE(names.contains("softmax_rows_THREADS128_VEC4"));
}

TEST_F(UserKernelsTest, AChangedSpecIsANewVersionAndResultsNeverMix) {
  Start();
  v1::KernelSpec v1spec = Example("reduction");
  v1::FamilyInfo a, b;
  ASSERT_TRUE(Register(v1spec, &a).ok());
  const v1::Job first = Sweep(SpecProblem("reduce_sum", {4096}));
  v1::KernelSpec v2spec = v1spec;
  v2spec.mutable_params(0)->clear_values();  // BLOCK: 128 and 256 only
  v2spec.mutable_params(0)->add_values(128);
  v2spec.mutable_params(0)->add_values(256);
  ASSERT_TRUE(Register(v2spec, &b).ok());
  EXPECT_NE(a.spec_hash(), b.spec_hash());
  EXPECT_EQ(b.versions(), 2);
  const v1::Job second = Sweep(SpecProblem("reduce_sum", {4096}));  // the newest version
  EXPECT_EQ(second.problem().spec_hash(), b.spec_hash());
  EXPECT_LT(second.total(), first.total());
  // Each version has its own measurements.
  const auto old_ms = Measurements(SpecProblem("reduce_sum", {4096}, a.spec_hash()));
  const auto new_ms = Measurements(SpecProblem("reduce_sum", {4096}));
  EXPECT_EQ(static_cast<int>(old_ms.size()), first.total());
  EXPECT_EQ(static_cast<int>(new_ms.size()), second.total());
  for (const auto& m : new_ms) EXPECT_EQ(m.job_id(), second.id());
}

// A spec kernel tuned elsewhere (tunectl export) imports as a finished job,
// and GetBest serves it with the launch a client needs for the asked shape:
// the geometry and every argument evaluated there (the nearest tuned shape's
// config where it runs at the asked one).
// A kernel of a spec brought by import is its author's code: a daemon
// without --allow-user-kernels refuses it, and one with it never stores nor
// serves the client's cubin. It queues a sweep of the problem instead, whose
// kernels it compiles from the spec and verifies itself.
TEST_F(UserKernelsTest, AnImportedSpecKernelIsNeverServedAsTheClientSentIt) {
  Start();
  const v1::KernelSpec spec = Example("softmax");
  v1::FamilyInfo info;
  ASSERT_TRUE(Register(spec, &info).ok());
  grpc::ClientContext c1;
  v1::Device device;
  ASSERT_TRUE(stub_->DescribeDevice(&c1, v1::DescribeDeviceRequest(), &device).ok());
  v1::ImportKernelRequest import;
  v1::BestKernel* k = import.mutable_kernel();
  *k->mutable_problem() = SpecProblem("softmax_rows", {4096, 1024});
  *k->mutable_device() = device;
  v1::Measurement* m = k->mutable_measurement();
  m->set_status(v1::MEASUREMENT_OK);
  m->set_median_ms(0.02);
  (*m->mutable_config()->mutable_params())["THREADS"] = 256;
  (*m->mutable_config()->mutable_params())["VEC"] = 4;
  k->set_cubin("a client's cubin");
  k->set_entry("softmax_entry");
  k->set_baseline_ms(0.03);
  auto get_best = [&](v1::BestKernel* best) {
    grpc::ClientContext ctx;
    v1::GetBestRequest req;
    *req.mutable_problem() = SpecProblem("softmax_rows", {4096, 1024});
    return stub_->GetBest(&ctx, req, best);
  };
  daemon_.reset();

  Start({});
  {
    grpc::ClientContext ctx;
    v1::Job job;
    const grpc::Status refused = stub_->ImportKernel(&ctx, import, &job);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << refused.error_message();
    EXPECT_NE(refused.error_message().find("--allow-user-kernels"), std::string::npos) << refused.error_message();
  }
  v1::BestKernel best;
  EXPECT_EQ(get_best(&best).error_code(), grpc::StatusCode::NOT_FOUND);
  daemon_.reset();

  Start();
  grpc::ClientContext c2;
  v1::Job job;
  const grpc::Status imported = stub_->ImportKernel(&c2, import, &job);
  ASSERT_TRUE(imported.ok()) << imported.error_message();
  EXPECT_EQ(job.problem().spec_hash(), info.spec_hash());
  EXPECT_GT(job.total(), 1) << job.ShortDebugString();  // a sweep of the problem's space
  EXPECT_EQ(job.client(), "local");
  // Until the sweep has verified a kernel there is nothing to serve, and the
  // client's cubin never is.
  const grpc::Status s = get_best(&best);
  if (s.ok()) {
    EXPECT_NE(best.cubin(), "a client's cubin");
  } else {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  }
  grpc::ClientContext c3;
  v1::CancelJobRequest cancel;
  cancel.set_id(job.id());
  EXPECT_TRUE(stub_->CancelJob(&c3, cancel, &job).ok());
}

// The compile-ahead compiles a spec's kernels only where the daemon runs
// specs' code: one without --allow-user-kernels counts none of them.
TEST_F(UserKernelsTest, TheCompileAheadLeavesSpecsToDaemonsThatRunThem) {
  Start();
  v1::FamilyInfo info;
  ASSERT_TRUE(Register(Example("softmax"), &info).ok());
  daemon_.reset();
  auto ahead_total = [&](std::vector<std::string> flags) -> int64_t {
    flags.insert(flags.end(), {"--compile-ahead", "--compile-batch", "1"});
    Start(flags);
    for (int i = 0; i < 300; ++i) {
      grpc::ClientContext ctx;
      v1::Device device;
      if (stub_->DescribeDevice(&ctx, v1::DescribeDeviceRequest(), &device).ok() &&
          device.compile_ahead_total() > 0) {
        return device.compile_ahead_total();
      }
      std::this_thread::sleep_for(100ms);
    }
    return 0;
  };
  const int64_t without = ahead_total({});
  EXPECT_NE(daemon_->RunLog().find("kernel specs not (no --allow-user-kernels)"), std::string::npos)
      << daemon_->RunLog();
  daemon_.reset();
  const int64_t with = ahead_total({"--allow-user-kernels"});
  EXPECT_GT(without, 0);
  EXPECT_GE(with - without, info.space_size()) << with << " vs " << without;  // softmax's configs
}

// A spec whose compile is a bomb (a macro of 10^8 tokens) is refused at
// the compile memory limit, naming the config and the limit, not after the
// compile timeout; a small limit here keeps it fast.
TEST_F(UserKernelsTest, ACompileBombIsRefusedAtItsLimit) {
  Start({"--allow-user-kernels", "--compile-memory-mib", "256"});
  std::string bomb = "#define X1 1+1+1+1+1+1+1+1+1+1\n";
  for (int i = 2; i <= 8; ++i) {
    bomb += "#define X" + std::to_string(i) + " ";
    for (int j = 0; j < 10; ++j) bomb += (j > 0 ? "+X" : "X") + std::to_string(i - 1);
    bomb += "\n";
  }
  v1::KernelSpec spec = Example("softmax");
  spec.set_source(bomb + "__device__ long bomb = X8;\n" + spec.source());
  v1::FamilyInfo info;
  const grpc::Status s = Register(spec, &info);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("source: compile of softmax_"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find(" exceeded 256 MiB of memory"), std::string::npos) << s.error_message();
  EXPECT_EQ(Families().size(), 2u);
}

// Registrations compile each in a process of its own: one queued behind a
// slow compile (constexpr work, little memory) is not held up by it, and
// the slow one ends at the compile CPU limit, saying so.
TEST_F(UserKernelsTest, ARegistrationDoesNotWaitBehindAnothersCompile) {
  Start({"--allow-user-kernels", "--compile-cpu-seconds", "10"});
  std::string slow =
      "__host__ __device__ constexpr long work(long n) {\n"
      "  long s = 0;\n"
      "  for (long i = 0; i < 200000; ++i) s += (i ^ n) % 7;\n"
      "  return s;\n"
      "}\n";
  for (int i = 0; i < 400; ++i) slow += "static_assert(work(" + std::to_string(i) + ") != -1, \"\");\n";
  v1::KernelSpec slow_spec = Example("softmax");
  slow_spec.set_source(slow + slow_spec.source());
  std::atomic<bool> slow_done{false};
  grpc::Status slow_status;
  std::thread slow_registration([&] {
    v1::FamilyInfo info;
    slow_status = Register(slow_spec, &info);
    slow_done = true;
  });
  std::this_thread::sleep_for(1s);  // its compile has begun
  v1::FamilyInfo info;
  const grpc::Status quick = Register(Example("reduction"), &info);
  EXPECT_TRUE(quick.ok()) << quick.error_message();
  EXPECT_FALSE(slow_done) << "the quick registration waited for the slow one";
  slow_registration.join();
  EXPECT_EQ(slow_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << slow_status.error_message();
  EXPECT_NE(slow_status.error_message().find("exceeded 10 s of CPU time"), std::string::npos)
      << slow_status.error_message();
}

// A client registers a bounded number of specs an hour: past its quota
// the next is refused at once, saying why and from when it is taken.
TEST_F(UserKernelsTest, RegistrationsHaveAPerClientQuota) {
  Start({"--allow-user-kernels", "--max-registrations-per-client", "1"});
  v1::FamilyInfo info;
  ASSERT_TRUE(Register(Example("softmax"), &info).ok());
  const grpc::Status s = Register(Example("reduction"), &info);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find("registered 1 kernel specs in the last hour"), std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("--max-registrations-per-client"), std::string::npos) << s.error_message();
  EXPECT_EQ(Families().size(), 3u);  // the built-in two and softmax
}

// Every text field of a spec has a size limit: a 60 MiB description is
// refused at once, naming the field, and nothing is stored.
TEST_F(UserKernelsTest, AHugeDescriptionIsRefusedAtOnce) {
  Start();
  v1::KernelSpec spec = Example("softmax");
  spec.set_description(std::string(60 << 20, 'x'));
  v1::FamilyInfo info;
  const auto t0 = std::chrono::steady_clock::now();
  const grpc::Status s = Register(spec, &info);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("description: 62914560 bytes, more than the limit of 4096"),
            std::string::npos) << s.error_message().substr(0, 200);
  EXPECT_LT(seconds, 10);  // no compile, no store
  EXPECT_EQ(Families().size(), 2u);
}

// A look-up that names a spec without a version gets its newest version's
// kernel: a new version is what the next look-up resolves to, though the
// answer to the same request was held before it was registered.
TEST_F(UserKernelsTest, ALookUpByNameFollowsANewVersionAtOnce) {
  Start();
  v1::KernelSpec spec = Example("softmax");
  v1::FamilyInfo first, second;
  ASSERT_TRUE(Register(spec, &first).ok());
  grpc::ClientContext c1;
  v1::Device device;
  ASSERT_TRUE(stub_->DescribeDevice(&c1, v1::DescribeDeviceRequest(), &device).ok());
  // The first version's kernel as a sweep on a GPU leaves it in the store (a
  // client's import of a spec kernel is never served): written to the
  // daemon's database while it is stopped.
  const fs::path db = daemon_->db();
  daemon_.reset();
  {
    auto store = Store::Open(db.string());
    ASSERT_TRUE(store.ok()) << store.status();
    auto device_id = (*store)->UpsertDevice(device);
    ASSERT_TRUE(device_id.ok()) << device_id.status();
    auto job = (*store)->CreateJob(*device_id, SpecProblem("softmax_rows", {4096, 1024}, first.spec_hash()),
                                   1, 0, ClientQuota{"local"});
    ASSERT_TRUE(job.ok()) << job.status();
    v1::Measurement m;
    m.set_status(v1::MEASUREMENT_OK);
    m.set_median_ms(0.02);
    (*m.mutable_config()->mutable_params())["THREADS"] = 256;
    (*m.mutable_config()->mutable_params())["VEC"] = 4;
    m.mutable_config()->set_name("softmax_rows_THREADS256_VEC4");
    const KernelBinary binary{"// stand-in source", "softmax_entry", "stand-in cubin", "", ""};
    ASSERT_TRUE((*store)->SetJobBaseline(*job, 0.03, 0, "default config").ok());
    ASSERT_TRUE((*store)->AddMeasurement(*job, m, &binary, /*daemon_id=*/0, 0.03).ok());
    ASSERT_TRUE((*store)->FinishJob(*job, v1::JOB_DONE).ok());
  }
  Start();

  auto look_up = [&](const std::string& hash, v1::BestKernel* best) {
    grpc::ClientContext ctx;
    v1::GetBestRequest req;
    *req.mutable_problem() = SpecProblem("softmax_rows", {4096, 1024}, hash);
    req.set_view(v1::BEST_VIEW_BASIC);
    return stub_->GetBest(&ctx, req, best);
  };
  v1::BestKernel best;
  for (int i = 0; i < 2; ++i) {  // the second answer is the held one
    ASSERT_TRUE(look_up("", &best).ok());
    EXPECT_EQ(best.problem().spec_hash(), first.spec_hash());
  }
  spec.set_description(spec.description() + " (second version)");
  ASSERT_TRUE(Register(spec, &second).ok());
  ASSERT_NE(second.spec_hash(), first.spec_hash());
  const grpc::Status newest = look_up("", &best);  // no kernel of it yet
  EXPECT_EQ(newest.error_code(), grpc::StatusCode::NOT_FOUND)
      << "served version " << best.problem().spec_hash();
  ASSERT_TRUE(look_up(first.spec_hash(), &best).ok());
  EXPECT_EQ(best.problem().spec_hash(), first.spec_hash());
}

TEST_F(UserKernelsTest, ProblemsOfUnknownSpecsAndWrongShapesAreRefused) {
  Start();
  v1::FamilyInfo info;
  ASSERT_TRUE(Register(Example("softmax"), &info).ok());
  grpc::ClientContext c1;
  v1::SubmitSweepRequest req;
  *req.mutable_problem() = SpecProblem("no_such_kernel", {16});
  v1::Job job;
  grpc::Status s = stub_->SubmitSweep(&c1, req, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  grpc::ClientContext c2;
  *req.mutable_problem() = SpecProblem("softmax_rows", {16});  // two dims
  s = stub_->SubmitSweep(&c2, req, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  grpc::ClientContext c3;
  *req.mutable_problem() = SpecProblem("softmax_rows", {16, 20});  // VEC = 4 breaks a restriction here
  s = stub_->SubmitSweep(&c3, req, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  grpc::ClientContext c4;
  *req.mutable_problem() = SpecProblem("softmax_rows", {16, 100}, std::string(64, 'a'));
  s = stub_->SubmitSweep(&c4, req, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
}

}  // namespace
}  // namespace tuned
