// The fleet: real `tuned --compile-only` daemons (tests/daemon_process.h),
// one per simulated GPU, sharing one real PostgreSQL server
// (tests/pg_server.h), through real gRPC channels. A job's configs are
// claimed in batches under a lease (here 2 s): every config is measured
// exactly once whoever dies, and a daemon's kernels are served by the others.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "families/spec/spec.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/pg_server.h"
#include "tuned/client.h"

namespace tuned {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kTransposeConfigs = 50;  // the transpose space after pruning (sm_90)


/// One daemon of the fleet: its own directory (socket, log), GPU `gpu`, the
/// shared database `url`, a 2 s lease and small claims.
class FleetDaemon : public DaemonProcess {
 public:
  FleetDaemon(const fs::path& dir, int gpu, const std::string& url,
              std::vector<std::string> extra = {})
      : DaemonProcess(TUNED_DAEMON_PATH, dir, Flags(gpu, url, std::move(extra))),
        client_(address(), ClientOptions{}) {}
  Client& client() { return client_; }

 private:
  static std::vector<std::string> Flags(int gpu, const std::string& url,
                                        std::vector<std::string> extra) {
    std::vector<std::string> f = {"--db", url, "--gpu", std::to_string(gpu), "--log-level", "info"};
    for (const char* flag : {"--lease-seconds", "--compile-batch"}) {  // defaults `extra` may set
      if (std::find(extra.begin(), extra.end(), flag) == extra.end()) {
        f.insert(f.end(), {flag, "2"});
      }
    }
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  }
  Client client_;
};

/// A transpose kernel as `tunectl export` writes it, for ImportKernel: a
/// valid config with `ms` and a stand-in cubin (never run: compile-only).
v1::BestKernel ExportedKernel(const v1::Device& device, double ms, const std::string& cubin) {
  v1::BestKernel k;
  *k.mutable_problem() = TransposeProblem(256, 256);
  *k.mutable_device() = device;
  v1::Measurement* m = k.mutable_measurement();
  m->set_status(v1::MEASUREMENT_OK);
  m->set_median_ms(ms);
  m->set_metric_unit("GB/s");
  auto& params = *m->mutable_config()->mutable_params();
  params["KIND"] = 1;
  params["TILE"] = 32;
  params["BY"] = 8;
  params["PAD"] = 1;
  k.set_cubin(cubin);
  k.set_entry("transpose_entry");
  k.set_baseline_ms(0.02);
  k.set_baseline_name("copy");
  return k;
}

class FleetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (PgServer::SkipRequested()) return;
    auto server = PgServer::Create();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (PgServer::SkipRequested()) GTEST_SKIP() << "TUNED_SKIP_POSTGRES=1: no PostgreSQL server";
    ASSERT_NE(server_, nullptr);
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    name = name.substr(0, 40) + "_" + std::to_string(counter_++);
    ASSERT_TRUE(server_->CreateDatabase(name).ok());
    url_ = server_->url(name);
    dir_ = fs::path(testing::TempDir()) / ("tuned_fleet_" + std::to_string(getpid()) + "_" + name);
    fs::remove_all(dir_);
  }
  void TearDown() override {
    daemons_.clear();
    fs::remove_all(dir_);
  }

  /// Starts daemon `i` (GPU i) and waits until it serves.
  FleetDaemon& Start(int i, std::vector<std::string> extra = {}) {
    auto d = std::make_unique<FleetDaemon>(dir_ / ("gpu" + std::to_string(i)), i, url_, extra);
    EXPECT_TRUE(d->WaitServing()) << d->RunLog();
    daemons_.push_back(std::move(d));
    return *daemons_.back();
  }

  /// Polls `client` until job `id` ends (or `limit`).
  static v1::Job WaitForEnd(Client& client, int64_t id, std::chrono::seconds limit = 120s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (true) {
      auto job = client.GetJob(id);
      if (job.ok() && (job->state() == v1::JOB_DONE || job->state() == v1::JOB_FAILED ||
                       job->state() == v1::JOB_CANCELLED)) {
        return *job;
      }
      if (std::chrono::steady_clock::now() > end) {
        ADD_FAILURE() << "job " << id << " did not end: "
                      << (job.ok() ? job->ShortDebugString() : job.status().ToString());
        return job.ok() ? *job : v1::Job();
      }
      std::this_thread::sleep_for(100ms);
    }
  }
  /// Polls until the job has at least `n` measurements.
  static void WaitForMeasured(Client& client, int64_t id, int n) {
    for (int i = 0; i < 600; ++i) {
      auto job = client.GetJob(id);
      if (job.ok() && job->done() + job->failed() >= n) return;
      std::this_thread::sleep_for(50ms);
    }
    ADD_FAILURE() << "job " << id << " never reached " << n << " measurements";
  }
  /// Every config of the problem measured exactly once, by name.
  static void ExpectEachConfigOnce(Client& client, const v1::Problem& p, int configs) {
    auto ms = client.ListMeasurements(p);
    ASSERT_TRUE(ms.ok()) << ms.status();
    std::set<std::string> names;
    for (const auto& m : *ms) {
      EXPECT_EQ(m.status(), v1::MEASUREMENT_COMPILED) << m.config().name() << ": " << m.message();
      EXPECT_TRUE(names.insert(m.config().name()).second) << m.config().name() << " twice";
    }
    EXPECT_EQ(static_cast<int>(ms->size()), configs);
  }

  static PgServer* server_;
  static int counter_;
  std::string url_;
  fs::path dir_;
  std::vector<std::unique_ptr<FleetDaemon>> daemons_;
};
PgServer* FleetTest::server_ = nullptr;
int FleetTest::counter_ = 0;

TEST_F(FleetTest, TwoAndFourDaemonsDrainOneJobMeasuringEachConfigOnce) {
  for (int n : {2, 4}) {
    SCOPED_TRACE(testing::Message() << n << " daemons");
    if (n == 4) {  // a fresh database for the second fleet
      daemons_.clear();
      SetUp();
    }
    for (int i = 0; i < n; ++i) Start(i);
    auto live = daemons_.back()->client().ListDaemons();
    ASSERT_TRUE(live.ok()) << live.status();
    EXPECT_EQ(static_cast<int>(live->size()), n);
    const v1::Problem p = TransposeProblem(1024, 512);
    auto job = daemons_[0]->client().SubmitSweep(p);
    ASSERT_TRUE(job.ok()) << job.status();
    const v1::Job end = WaitForEnd(daemons_[n - 1]->client(), job->id());
    EXPECT_EQ(end.state(), v1::JOB_DONE) << end.error();
    EXPECT_EQ(end.total(), kTransposeConfigs);
    EXPECT_EQ(end.done(), kTransposeConfigs);
    ExpectEachConfigOnce(daemons_[1]->client(), p, kTransposeConfigs);
    // Each daemon took a share, and the shares add up.
    ASSERT_EQ(end.daemons_size(), n) << end.ShortDebugString();
    int sum = 0;
    for (const auto& d : end.daemons()) {
      EXPECT_GT(d.measured(), 0) << d.host() << " gpu " << d.gpu();
      sum += d.measured();
    }
    EXPECT_EQ(sum, kTransposeConfigs);
  }
}

TEST_F(FleetTest, KillNineOfOneDaemonMidJobLosesAndRepeatsNothing) {
  FleetDaemon& a = Start(0);
  FleetDaemon& b = Start(1);
  const v1::Problem p = TransposeProblem(2048, 256);
  auto job = a.client().SubmitSweep(p);
  ASSERT_TRUE(job.ok()) << job.status();
  WaitForMeasured(b.client(), job->id(), 10);
  a.Kill();  // its claims go back to the pool when its lease ends (2 s)
  const v1::Job end = WaitForEnd(b.client(), job->id());
  EXPECT_EQ(end.state(), v1::JOB_DONE) << end.error();
  EXPECT_EQ(end.total(), kTransposeConfigs);  // counts stay true
  EXPECT_EQ(end.done(), kTransposeConfigs);
  ExpectEachConfigOnce(b.client(), p, kTransposeConfigs);
  // The dead daemon is no longer live; a restart of it finds nothing left.
  auto live = b.client().ListDaemons();
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->size(), 1u);
  EXPECT_EQ((*live)[0].gpu(), 1);
  a.Spawn();
  ASSERT_TRUE(a.WaitServing());
  EXPECT_EQ(a.client().GetJob(job->id())->done(), kTransposeConfigs);
}

TEST_F(FleetTest, ThePostgresServerRestartsMidJobAndTheDaemonsGoOn) {
  FleetDaemon& a = Start(0);
  FleetDaemon& b = Start(1);
  auto device = a.client().DescribeDevice();
  ASSERT_TRUE(device.ok());
  ASSERT_TRUE(a.client().ImportKernel(ExportedKernel(*device, 0.05, "cubin")).ok());
  ASSERT_TRUE(b.client().GetBest(TransposeProblem(256, 256)).ok());  // now in B's memory
  const v1::Problem p = TransposeProblem(512, 2048);
  auto job = a.client().SubmitSweep(p);
  ASSERT_TRUE(job.ok()) << job.status();
  WaitForMeasured(a.client(), job->id(), 8);
  ASSERT_TRUE(server_->Stop().ok());
  std::this_thread::sleep_for(1500ms);
  // Look-ups already served go on; calls that need the database say so.
  auto cached = b.client().GetBest(TransposeProblem(256, 256));
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(cached->cubin(), "cubin");
  auto down = a.client().GetJob(job->id());
  EXPECT_EQ(down.status().code(), absl::StatusCode::kUnavailable) << down.status();
  EXPECT_NE(down.status().message().find("database unavailable"), std::string::npos)
      << down.status();
  ASSERT_TRUE(server_->Start().ok());
  const v1::Job end = WaitForEnd(b.client(), job->id());
  EXPECT_EQ(end.state(), v1::JOB_DONE) << end.error();
  ExpectEachConfigOnce(a.client(), p, kTransposeConfigs);
  int code = 0;
  EXPECT_FALSE(a.Exited(&code)) << a.RunLog();
  EXPECT_FALSE(b.Exited(&code)) << b.RunLog();
}

TEST_F(FleetTest, AKernelImportedOnOneDaemonIsServedByAnotherAndQuotasSpanTheFleet) {
  FleetDaemon& a = Start(0, {"--max-jobs-per-client", "1"});
  FleetDaemon& b = Start(1, {"--max-jobs-per-client", "1"});
  auto device = a.client().DescribeDevice();
  ASSERT_TRUE(device.ok());
  auto imported = a.client().ImportKernel(ExportedKernel(*device, 0.05, "cubin-one"));
  ASSERT_TRUE(imported.ok()) << imported.status();
  auto served = b.client().GetBest(TransposeProblem(256, 256));
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ(served->match(), v1::MATCH_EXACT);
  EXPECT_EQ(served->cubin(), "cubin-one");
  EXPECT_DOUBLE_EQ(served->measurement().median_ms(), 0.05);
  // B serves from memory now; a faster import on A reaches it within a heartbeat.
  ASSERT_TRUE(a.client().ImportKernel(ExportedKernel(*device, 0.04, "cubin-two")).ok());
  std::string seen;
  for (int i = 0; i < 50 && seen != "cubin-two"; ++i) {
    std::this_thread::sleep_for(100ms);
    seen = b.client().GetBest(TransposeProblem(256, 256))->cubin();
  }
  EXPECT_EQ(seen, "cubin-two");
  // One client, one job at a time, whichever daemon it asks.
  ASSERT_TRUE(a.client().SubmitSweep(TransposeProblem(4096, 64)).ok());
  auto over = b.client().SubmitSweep(TransposeProblem(64, 4096));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();
}

// A kernel spec registered on one daemon is everyone's: another daemon of
// the fleet lists it and sweeps it by name, and the first serves the result.
// --allow-user-kernels guards running a spec's code in a fleet: B, without
// it, lists the spec that A stored but refuses its sweep, and A's sweep of it
// is measured by A alone (B claims none of its configs).
TEST_F(FleetTest, AKernelSpecRunsOnlyOnTheDaemonsThatAllowUserKernels) {
  FleetDaemon& a = Start(0, {"--allow-user-kernels"});
  FleetDaemon& b = Start(1);
  // Each says whether it runs specs, and what confines its workers.
  auto daemons = b.client().ListDaemons(false);
  ASSERT_TRUE(daemons.ok()) << daemons.status();
  ASSERT_EQ(daemons->size(), 2u);
  for (const v1::Daemon& d : *daemons) {
    EXPECT_EQ(d.user_kernels(), d.gpu() == 0) << d.ShortDebugString();
    EXPECT_TRUE(d.sandbox().starts_with("Landlock ABI ") || d.sandbox().starts_with("none ("))
        << d.sandbox();
  }
  auto spec = spec::LoadSpecFile(std::string(TUNED_EXAMPLES_DIR) + "/reduction/spec.toml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto registered = a.client().RegisterFamily(*spec);
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_TRUE(registered->created());
  // B takes no specs itself, and sees the one A stored.
  EXPECT_EQ(b.client().RegisterFamily(*spec).status().code(), absl::StatusCode::kFailedPrecondition);
  auto families = b.client().ListFamilies();
  ASSERT_TRUE(families.ok()) << families.status();
  ASSERT_EQ(families->size(), 3u);
  EXPECT_EQ(families->back().name(), "reduce_sum");
  EXPECT_EQ(families->back().spec_hash(), spec::SpecHash(*spec));
  const v1::Problem problem = FamilyProblem("reduce_sum", {65536});
  auto refused = b.client().SubmitSweep(problem);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("--allow-user-kernels"), std::string::npos);
  auto job = a.client().SubmitSweep(problem);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->problem().spec_hash(), spec::SpecHash(*spec));
  const v1::Job end = WaitForEnd(a.client(), job->id());
  auto space = spec::EnumerateSpace(*spec, {{"n", 65536}});
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(end.total(), static_cast<int>(space->size()));
  // Every config once, all by A; B reads them from the shared database.
  ExpectEachConfigOnce(b.client(), problem, static_cast<int>(space->size()));
  ASSERT_EQ(end.daemons_size(), 1) << end.ShortDebugString();
  EXPECT_EQ(end.daemons(0).gpu(), 0);
  EXPECT_EQ(end.daemons(0).measured(), static_cast<int>(space->size()));
}

TEST_F(FleetTest, SigtermStopsWithinTwoSecondsDuringACompileAndHandsTheClaimsBack) {
  FleetDaemon& a = Start(0, {"--lease-seconds", "60", "--compile-batch", "16"});
  // sgemm kernels take a second or more each to compile: a batch of 16 is long.
  v1::Problem p;
  p.set_family(v1::FAMILY_SGEMM);
  p.set_dtype(v1::DTYPE_F32);
  for (int64_t d : {512, 512, 512}) p.add_shape(d);
  auto job = a.client().SubmitSweep(p);
  ASSERT_TRUE(job.ok()) << job.status();
  for (int i = 0; i < 200 && a.RunLog().find("claimed 32 configs") == std::string::npos; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  std::this_thread::sleep_for(500ms);  // into the compile
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(a.Terminate(), 0) << a.RunLog();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << a.RunLog();
  // Its claims are back in the pool at once (not in 60 s), and it is not live.
  auto store = Store::Open(url_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto all = (*store)->ListDaemons(/*all=*/true);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_FALSE((*all)[0].live());
  EXPECT_EQ((*all)[0].claimed(), 0);
}

/// A model's workload as `tuned.record` writes it (client/workload.h): 24
/// GEMMs of decode (M 1, 16) and prefill (M 128, 512), bf16 and f16, layout
/// nt, three (N, K) pairs; at most four distinct M per (N, K), so that each
/// is a sweep of its own.
std::string FleetWorkload() {
  std::string problems;
  for (const char* dtype : {"bf16", "f16"}) {
    for (auto [n, k] : {std::pair{1024, 1024}, {3072, 1024}, {1024, 4096}}) {
      for (int m : {1, 16, 128, 512}) {
        problems += absl::StrCat(problems.empty() ? "" : ",\n", R"({"dtype": ")", dtype,
                                 R"(", "layout": "nt", "shape": [)", m, ", ", n, ", ", k,
                                 R"(], "calls": 10, "gpu_ms": )", m * n / 1e5, "}");
      }
    }
  }
  return absl::StrCat(R"({"format": "tuned-workload-1", "problems": [)", "\n", problems, "]}\n");
}

// A recorded workload from one client (`tunectl workload sweep FILE`) drained
// by 8 daemons on one PostgreSQL server, with the stand-in GPU worker
// (tests/fake_worker.cc: every kernel compiled at once): one job per
// problem, each config of each job measured once, whoever measured it,
// through a kill -9 of one daemon and a crash restart of the server
// mid-drain. The killed daemon's claims go back to the pool when its lease
// (2 s) runs out.
TEST_F(FleetTest, EightDaemonsDrainAWorkloadEachProblemOnceThroughKillNineAndARestart) {
  constexpr int kDaemons = 8, kProblems = 24;
  for (int i = 0; i < kDaemons; ++i) {
    Start(i, {"--worker", TUNED_FAKE_WORKER_PATH, "--max-jobs-per-client", "64"});
  }
  const fs::path workload = dir_ / "model.workload.json";
  {
    std::ofstream(workload) << FleetWorkload();
  }
  Client& client = daemons_[0]->client();
  const std::string sweep = absl::StrCat(TUNED_TUNECTL_PATH, " --server ", daemons_[0]->address(),
                                         " workload sweep ", workload.string(), " > ",
                                         (dir_ / "sweep.out").string(), " 2>&1");
  ASSERT_EQ(std::system(sweep.c_str()), 0) << ReadAll(dir_ / "sweep.out");
  EXPECT_NE(ReadAll(dir_ / "sweep.out").find("24 sweeps queued for 24 recorded problems"),
            std::string::npos) << ReadAll(dir_ / "sweep.out");
  // Mid-drain: daemon 7 dies holding claims, then the server crashes and restarts.
  auto measured = [&] {
    int n = 0;
    for (const v1::Job& j : client.ListJobs().value_or(std::vector<v1::Job>{})) n += j.done() + j.failed();
    return n;
  };
  auto holds = [&]() -> int64_t {
    for (const v1::Daemon& d : client.ListDaemons().value_or(std::vector<v1::Daemon>{})) {
      if (d.gpu() == 7) return d.claimed();
    }
    return 0;
  };
  for (int i = 0; i < 400 && measured() < 150; ++i) std::this_thread::sleep_for(25ms);
  int64_t held = 0;
  for (int i = 0; i < 200 && (held = holds()) == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_GT(held, 0) << "daemon 7 held no claims when it was killed";
  daemons_[7]->Kill();
  const int before_restart = measured();
  ASSERT_TRUE(server_->Stop().ok());
  std::this_thread::sleep_for(500ms);
  ASSERT_TRUE(server_->Start().ok());

  std::vector<v1::Job> jobs;
  for (int i = 0; i < 1200; ++i) {
    auto list = daemons_[1]->client().ListJobs();
    if (list.ok() && static_cast<int>(list->size()) == kProblems &&
        std::all_of(list->begin(), list->end(), [](const v1::Job& j) { return j.state() == v1::JOB_DONE; })) {
      jobs = *list;
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(static_cast<int>(jobs.size()), kProblems) << "the workload was not drained in 120 s";
  std::set<std::string> problems;
  std::set<std::pair<std::string, int>> by;  // (host, gpu) of each daemon that measured
  int total = 0;
  for (const v1::Job& j : jobs) {
    SCOPED_TRACE(j.ShortDebugString());
    EXPECT_TRUE(problems.insert(j.problem().SerializeAsString()).second) << "a problem queued twice";
    EXPECT_GT(j.total(), 0);
    EXPECT_EQ(j.done() + j.failed(), j.total());
    // Each config once: one measurement per config name, as many as the job's total.
    auto ms = daemons_[2]->client().ListMeasurements(j.problem());
    ASSERT_TRUE(ms.ok()) << ms.status();
    std::set<std::string> names;
    for (const auto& m : *ms) EXPECT_TRUE(names.insert(m.config().name()).second) << m.config().name();
    EXPECT_EQ(static_cast<int>(ms->size()), j.total());
    int sum = 0;
    for (const auto& d : j.daemons()) {
      sum += d.measured();
      by.insert({d.host(), d.gpu()});
    }
    EXPECT_EQ(sum, j.total());
    total += j.total();
  }
  EXPECT_GT(total, 500);
  EXPECT_LT(before_restart, total / 2) << "the faults came late in the drain";
  // The fleet shared the drain: more than half of its daemons measured.
  EXPECT_GT(static_cast<int>(by.size()), kDaemons / 2);
  for (int i = 0; i < kDaemons - 1; ++i) {
    int code = 0;
    EXPECT_FALSE(daemons_[i]->Exited(&code)) << "daemon " << i << " exited " << code << daemons_[i]->RunLog();
  }
}

TEST_F(FleetTest, AMissingDatabaseStopsTheDaemonAtStartSayingWhich) {
  DaemonProcess d(TUNED_DAEMON_PATH, dir_ / "bad", {"--db", server_->url("no_such_db")});
  EXPECT_EQ(d.WaitExit(), 1);
  EXPECT_NE(d.RunLog().find("no_such_db"), std::string::npos) << d.RunLog();
  EXPECT_NE(d.RunLog().find("does not exist"), std::string::npos) << d.RunLog();
}

}  // namespace
}  // namespace tuned
