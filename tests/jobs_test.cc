// The job system against the real daemon binary, without a GPU: `tuned
// --compile-only --enable-fault-test-family` on a private socket and
// database. The compile-only worker simulates the fault_test kernels
// (families/fault_test/worker/problem.cc: it really exits, hangs or answers
// wrongly), so timeouts, kills, restarts, quarantine, the compile cache and
// resume after kill -9 all run for real.
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tuned/client.h"

namespace tuned {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

v1::Problem FaultTest(int64_t n) {
  v1::Problem p;
  p.set_family(v1::FAMILY_FAULT_TEST);
  p.set_dtype(v1::DTYPE_F32);
  p.add_shape(n);
  return p;
}

/// The daemon (tests/daemon_process.h) with the fault_test family, short
/// timeouts and small compile batches; Start() (again) waits until it serves.
class Daemon : public DaemonProcess {
 public:
  explicit Daemon(const fs::path& dir)
      : DaemonProcess(TUNED_DAEMON_PATH, dir,
                      {"--enable-fault-test-family", "--run-timeout-floor", "1",
                       "--compile-timeout", "4", "--compile-batch", "8", "--log-level", "info"}) {}
  /// Waits until the daemon serves; after a Kill, starts it again first.
  bool Start() {
    if (pid() <= 0) Spawn();
    return WaitServing();
  }
  std::string Log() const { return ReadAll(log()); }
};

bool Ended(v1::JobState s) {
  return s == v1::JOB_DONE || s == v1::JOB_FAILED || s == v1::JOB_CANCELLED;
}

/// Polls until the job ends or `limit` passes.
absl::StatusOr<v1::Job> WaitForEnd(Client& client, int64_t id, std::chrono::seconds limit = 90s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (true) {
    auto job = client.GetJob(id);
    if (!job.ok() || Ended(job->state())) return job;
    if (std::chrono::steady_clock::now() > end) return absl::DeadlineExceededError("job did not end");
    std::this_thread::sleep_for(100ms);
  }
}

/// Status of each config of the problem, by name.
std::map<std::string, v1::MeasurementStatus> Statuses(Client& client, const v1::Problem& p) {
  std::map<std::string, v1::MeasurementStatus> out;
  auto ms = client.ListMeasurements(p);
  EXPECT_TRUE(ms.ok()) << ms.status();
  if (ms.ok()) {
    for (const auto& m : *ms) out[m.config().name()] = m.status();
  }
  return out;
}

std::string QueryText(const fs::path& db, const char* sql) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  std::string out;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(stmt, 0);
    out = t ? reinterpret_cast<const char*>(t) : "";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(h);
  return out;
}

class JobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("tuned_jobs_test_" + std::to_string(getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(JobsTest, EachFailureIsRecordedWithItsClassAndRepeatOffendersAreQuarantined) {
  Daemon daemon(dir_);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Client client(daemon.address());
  const std::map<std::string, v1::MeasurementStatus> want = {
      {"fault_test_wrong_w1_b128", v1::MEASUREMENT_WRONG_ANSWER},
      {"fault_test_fault_w1_b128", v1::MEASUREMENT_DEVICE_FAULT},
      {"fault_test_hang_w1_b128", v1::MEASUREMENT_RUN_TIMEOUT},
      {"fault_test_launch_error_w1_b2048", v1::MEASUREMENT_LAUNCH_ERROR},
      {"fault_test_compile_error_w1_b128", v1::MEASUREMENT_COMPILE_ERROR},
      {"fault_test_compile_hang_w1_b128", v1::MEASUREMENT_COMPILE_TIMEOUT},
      {"fault_test_ok_w1_b64", v1::MEASUREMENT_COMPILED},
      {"fault_test_ok_w32_b256", v1::MEASUREMENT_COMPILED},
  };
  // Two jobs: each bad config runs (and breaks the worker) once per job.
  for (int64_t n : {4096, 5000}) {
    auto job = client.SubmitSweep(FaultTest(n));
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->total(), 24);
    auto done = WaitForEnd(client, job->id());
    ASSERT_TRUE(done.ok()) << done.status() << daemon.Log();
    EXPECT_EQ(done->state(), v1::JOB_DONE) << done->error();
    EXPECT_EQ(done->done(), 18);
    EXPECT_EQ(done->failed(), 6);
    EXPECT_EQ(done->worker_restarts(), 2);  // the fault and the hang
    EXPECT_GE(done->compile_seconds(), 4.0);  // the compile hang's timeout at least
    EXPECT_GE(done->measure_seconds(), 1.0);  // the hang's run timeout at least
    // The second job compiles nothing but the compile hang (timeouts are not cached).
    EXPECT_EQ(done->cached(), n == 4096 ? 0 : 23);
    auto got = Statuses(client, FaultTest(n));
    EXPECT_EQ(got.size(), 24u);
    for (const auto& [name, status] : want) {
      EXPECT_EQ(v1::MeasurementStatus_Name(got[name]), v1::MeasurementStatus_Name(status)) << name;
    }
  }
  // Third job: the two configs that broke the worker twice are not run again.
  auto job = client.SubmitSweep(FaultTest(6000));
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = WaitForEnd(client, job->id());
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_DONE);
  EXPECT_EQ(done->worker_restarts(), 0);
  auto got = Statuses(client, FaultTest(6000));
  EXPECT_EQ(got["fault_test_fault_w1_b128"], v1::MEASUREMENT_QUARANTINED);
  EXPECT_EQ(got["fault_test_hang_w1_b128"], v1::MEASUREMENT_QUARANTINED);
  EXPECT_EQ(got["fault_test_wrong_w1_b128"], v1::MEASUREMENT_WRONG_ANSWER);
  EXPECT_EQ(got["fault_test_ok_w1_b128"], v1::MEASUREMENT_COMPILED);
  // The daemon served throughout and stops cleanly.
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.Log();
}

TEST_F(JobsTest, KillNineAtRandomPointsLosesAndRepeatsNothing) {
  constexpr int kKills = 20;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(100, 1500);

  Daemon daemon(dir_);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  std::vector<v1::Job> jobs;
  // Every stored measurement seen before a kill: (job, config) -> status.
  std::map<std::pair<int64_t, std::string>, v1::MeasurementStatus> seen;
  int64_t n = 1 << 24;  // ok runs take WORK * 16 ms in the simulation: a job takes seconds
  for (int kill = 0; kill < kKills; ++kill) {
    Client client(daemon.address());
    bool active = false;
    for (const auto& j : jobs) {
      auto now = client.GetJob(j.id());
      ASSERT_TRUE(now.ok()) << now.status();
      active |= !Ended(now->state());
    }
    if (!active) {  // every kill lands during a sweep
      auto job = client.SubmitSweep(FaultTest(n++));
      ASSERT_TRUE(job.ok()) << job.status();
      jobs.push_back(*job);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    for (const auto& j : jobs) {
      auto ms = client.ListMeasurements(j.problem());
      ASSERT_TRUE(ms.ok()) << ms.status();
      for (const auto& m : *ms) seen[{m.job_id(), m.config().name()}] = m.status();
    }
    daemon.Kill();
    ASSERT_TRUE(daemon.Start()) << "restart " << kill << ":\n" << daemon.RunLog();
  }

  Client client(daemon.address());
  size_t stored = 0;
  for (const auto& j : jobs) {
    auto done = WaitForEnd(client, j.id(), 120s);
    ASSERT_TRUE(done.ok()) << done.status() << daemon.Log();
    EXPECT_EQ(done->state(), v1::JOB_DONE) << "job " << j.id() << ": " << done->error();
    EXPECT_EQ(done->done() + done->failed(), done->total()) << "job " << j.id();
    auto ms = client.ListMeasurements(j.problem());
    ASSERT_TRUE(ms.ok());
    EXPECT_EQ(ms->size(), static_cast<size_t>(done->total())) << "job " << j.id();
    stored += ms->size();
    std::map<std::pair<int64_t, std::string>, v1::MeasurementStatus> now;
    for (const auto& m : *ms) now[{m.job_id(), m.config().name()}] = m.status();
    for (const auto& [key, status] : seen) {
      if (key.first != j.id()) continue;
      ASSERT_TRUE(now.count(key)) << "lost: job " << key.first << " " << key.second;
      EXPECT_EQ(now[key], status) << "changed: job " << key.first << " " << key.second;
    }
  }
  EXPECT_GE(jobs.size(), 1u);
  std::printf("%d kills over %zu jobs; %zu measurements seen before kills, %zu stored\n", kKills,
              jobs.size(), seen.size(), stored);
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.Log();
  EXPECT_EQ(QueryText(daemon.db(), "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryText(daemon.db(),
                      "SELECT COUNT(*) FROM (SELECT job_id, config FROM measurements "
                      "GROUP BY job_id, config HAVING COUNT(*) > 1)"),
            "0");
}

// A round's kernels compile in one streamed call, and each config is
// measured as soon as its own kernel is there: with every config of the job
// in one claim, the ones before the compile hang (the last config) are
// measured while it still compiles, before its timeout (with a batch
// barrier, nothing would be measured before it).
TEST_F(JobsTest, ConfigsAreMeasuredWhileALaterKernelOfTheirRoundStillCompiles) {
  DaemonProcess daemon(TUNED_DAEMON_PATH, dir_,
                       {"--enable-fault-test-family", "--run-timeout-floor", "1",
                        "--compile-timeout", "10", "--compile-batch", "32"});
  ASSERT_TRUE(daemon.WaitServing()) << daemon.RunLog();
  Client client(daemon.address());
  const v1::Problem p = FaultTest(4096);
  auto job = client.SubmitSweep(p);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->total(), 24);
  // Measurements stored before the compiler is restarted after the compile
  // call's timeout (read first, then the log: they were stored before it).
  constexpr const char* kTimedOut = "restarting compiler";
  size_t before_timeout = 0;
  v1::Job now;
  for (auto end = std::chrono::steady_clock::now() + 120s; std::chrono::steady_clock::now() < end;) {
    auto ms = client.ListMeasurements(p);
    ASSERT_TRUE(ms.ok()) << ms.status();
    if (daemon.RunLog().find(kTimedOut) == std::string::npos) {
      before_timeout = std::max(before_timeout, ms->size());
    }
    auto got = client.GetJob(job->id());
    ASSERT_TRUE(got.ok()) << got.status();
    now = *got;
    if (Ended(now.state())) break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(now.state(), v1::JOB_DONE) << now.error() << daemon.RunLog();
  ASSERT_NE(daemon.RunLog().find(kTimedOut), std::string::npos) << daemon.RunLog();
  std::printf("%zu of 23 configs measured before the compile hang's timeout\n", before_timeout);
  EXPECT_GE(before_timeout, 12u) << daemon.RunLog();  // 23 on a loaded 2-core machine
  EXPECT_LE(before_timeout, 23u);
  auto got = Statuses(client, p);
  EXPECT_EQ(got["fault_test_compile_hang_w1_b128"], v1::MEASUREMENT_COMPILE_TIMEOUT);
  EXPECT_EQ(got["fault_test_ok_w1_b64"], v1::MEASUREMENT_COMPILED);
  // The GPU waited for the hang: its call's limit, then its own alone.
  EXPECT_GE(now.wait_seconds(), 10.0);
  EXPECT_GE(now.compile_seconds(), 20.0);
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.RunLog();
}

// One daemon finishes the jobs in the order they came: a job's next round
// (here its end) comes before the next job's first claim of work.
TEST_F(JobsTest, ADaemonFinishesTheJobsInTheOrderTheyCame) {
  Daemon daemon(dir_);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Client client(daemon.address());
  std::vector<int64_t> ids;
  const std::vector<int64_t> sizes = {3000, 3001};
  for (int64_t n : sizes) {
    auto job = client.SubmitSweep(FaultTest(n));
    ASSERT_TRUE(job.ok()) << job.status();
    ids.push_back(job->id());
  }
  for (int64_t id : ids) {
    auto done = WaitForEnd(client, id);
    ASSERT_TRUE(done.ok()) << done.status();
    EXPECT_EQ(done->state(), v1::JOB_DONE) << done->error();
  }
  const std::string log = daemon.Log();
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    const size_t ended = log.find("job " + std::to_string(ids[i]) + " done");
    const size_t next = log.find("job " + std::to_string(ids[i + 1]) + ": fault_test " +
                                 std::to_string(sizes[i + 1]) + ": claimed");
    ASSERT_NE(ended, std::string::npos) << log;
    ASSERT_NE(next, std::string::npos) << log;
    EXPECT_LT(ended, next) << "job " << ids[i + 1] << " started before job " << ids[i] << " ended";
  }
}

/// The number of threads of process `pid` under SCHED_IDLE.
int IdleThreads(pid_t pid) {
  int idle = 0;
  for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    if (sched_getscheduler(std::stoi(t.path().filename().string())) == SCHED_IDLE) ++idle;
  }
  return idle;
}

/// The number of child processes of process `pid` (its workers) under
/// SCHED_IDLE, from /proc/PID/task/TID/children.
int IdleChildren(pid_t pid) {
  int idle = 0;
  for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream children(t.path() / "children");
    for (pid_t child; children >> child;) {
      if (sched_getscheduler(child) == SCHED_IDLE) ++idle;
    }
  }
  return idle;
}

// An idle daemon compiles the families' spaces ahead, a batch at a time, and
// a job that comes meanwhile goes first. (At normal priority, so that the
// tests beside it on a loaded machine do not starve the compiles it waits
// for; the priorities are WorkIsAtIdlePriorityByDefault's.)
TEST_F(JobsTest, AnIdleDaemonCompilesAheadAndAJobGoesFirst) {
  DaemonProcess daemon(TUNED_DAEMON_PATH, dir_,
                       {"--compile-ahead", "--compile-batch", "2", "--work-priority", "normal"});
  ASSERT_TRUE(daemon.WaitServing()) << daemon.RunLog();
  Client client(daemon.address());
  v1::Device device;
  for (int i = 0; i < 300 && device.compiled_ahead() < 4; ++i) {
    std::this_thread::sleep_for(100ms);
    device = client.DescribeDevice().value_or(v1::Device());
  }
  EXPECT_GE(device.compiled_ahead(), 4);
  EXPECT_GT(device.compile_ahead_total(), 447 + 50);  // the spaces and their neighbours
  EXPECT_EQ(IdleThreads(daemon.pid()), 0);
  EXPECT_EQ(IdleChildren(daemon.pid()), 0);
  v1::Problem p;
  p.set_family(v1::FAMILY_TRANSPOSE);
  p.set_dtype(v1::DTYPE_F32);
  p.add_shape(640);
  p.add_shape(320);
  auto job = client.SubmitSweep(p);
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = WaitForEnd(client, job->id());
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_DONE) << done->error();
  // Compiling ahead went on after the job.
  const int64_t before = device.compiled_ahead();
  for (int i = 0; i < 400 && device.compiled_ahead() <= before + 2; ++i) {
    std::this_thread::sleep_for(100ms);
    device = client.DescribeDevice().value_or(v1::Device());
  }
  EXPECT_GT(device.compiled_ahead(), before + 2);
  // Without the flag, compile-only daemons (every other test) do not.
  DaemonProcess quiet(TUNED_DAEMON_PATH, dir_ / "quiet", {});
  ASSERT_TRUE(quiet.WaitServing());
  EXPECT_EQ(Client(quiet.address()).DescribeDevice()->compile_ahead_total(), 0);
}

// --work-priority idle, the default: the compile-ahead's thread in the daemon
// (the list, the compile cache's look-ups and writes) runs under SCHED_IDLE,
// as both compilers (a job's and the compile-ahead's) do; no other thread
// does. The thread lowers its priority before anything else, so this holds
// however loaded the machine is.
TEST_F(JobsTest, WorkIsAtIdlePriorityByDefault) {
  DaemonProcess daemon(TUNED_DAEMON_PATH, dir_,
                       {"--compile-ahead", "--compile-batch", "2", "--work-priority", "idle"});
  ASSERT_TRUE(daemon.WaitServing()) << daemon.RunLog();
  for (int i = 0; i < 300 && IdleThreads(daemon.pid()) < 1; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(IdleThreads(daemon.pid()), 1);
  EXPECT_EQ(IdleChildren(daemon.pid()), 2);
  // Without the compile-ahead, only a job's compiler.
  DaemonProcess quiet(TUNED_DAEMON_PATH, dir_ / "quiet", {"--work-priority", "idle"});
  ASSERT_TRUE(quiet.WaitServing());
  EXPECT_EQ(IdleThreads(quiet.pid()), 0);
  EXPECT_EQ(IdleChildren(quiet.pid()), 1);
}

// --work-priority normal: the compile-ahead's thread and both compilers keep
// normal priority (the test command runs its daemons so, where other tests
// would starve their compiles).
TEST_F(JobsTest, WorkAtNormalPriorityLeavesNothingIdle) {
  DaemonProcess daemon(TUNED_DAEMON_PATH, dir_,
                       {"--compile-ahead", "--compile-batch", "2", "--work-priority", "normal"});
  ASSERT_TRUE(daemon.WaitServing()) << daemon.RunLog();
  Client client(daemon.address());
  v1::Device device;  // the compile-ahead started: its list is made
  for (int i = 0; i < 300 && device.compile_ahead_total() == 0; ++i) {
    std::this_thread::sleep_for(100ms);
    device = client.DescribeDevice().value_or(v1::Device());
  }
  EXPECT_GT(device.compile_ahead_total(), 0);
  EXPECT_EQ(IdleThreads(daemon.pid()), 0);
  EXPECT_EQ(IdleChildren(daemon.pid()), 0);
}

// The prior (prior/README.md). A compile-only daemon loads the shipped one
// when asked (--prior; its GPU, "sm_90 reference", is of the H100's
// architecture), and then a fresh database's first model sweep starts from
// what the prior predicts, not from the whole space. --no-prior (even with
// --prior-file), and a prior of another architecture, leave it exhaustive.
TEST_F(JobsTest, AFreshDatabaseLearnsFromThePrior) {
  const fs::path a100 = dir_ / "a100.tsv";
  {
    std::ofstream f(a100);
    f << "tuned-prior\t1\ndevice\tNVIDIA A100-SXM4-80GB\t8.0\t108\t13000\t13.0\n";
  }
  struct Case {
    std::string name;
    std::vector<std::string> flags;
    bool loaded, used;
    std::string match, search;
  };
  for (const Case& c : std::vector<Case>{
           {"p", {"--prior"}, true, true, "same architecture, another model", "model: fitted on"},
           {"a100", {"--prior-file", a100.string()}, true, false,
            "another architecture: not used", "too little known"},
           {"off", {"--prior-file", a100.string(), "--no-prior"}, false, false, "", "too little known"}}) {
    SCOPED_TRACE(c.name);
    DaemonProcess daemon(TUNED_DAEMON_PATH, dir_ / c.name, c.flags);
    ASSERT_TRUE(daemon.WaitServing()) << daemon.RunLog();
    Client client(daemon.address());
    auto info = client.DescribePrior();
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->loaded(), c.loaded);
    EXPECT_EQ(info->used(), c.used);
    EXPECT_EQ(info->match(), c.match);
    EXPECT_EQ(info->own_shapes_enough(), 12);
    if (c.name == "p") {  // the shipped prior (short names: the socket's path has a limit)
      EXPECT_EQ(info->origin(), "shipped (prior/h100.tsv)");
      EXPECT_EQ(info->device().name(), "NVIDIA H100 80GB HBM3");
      bool ieee = false;
      for (const auto& p : info->problems()) {
        if (p.family() != "sgemm" || p.math() != v1::MATH_IEEE_FP32) continue;
        ieee = true;
        EXPECT_EQ(p.shapes(), 32);
        EXPECT_EQ(p.own_shapes(), 0);
        EXPECT_TRUE(p.in_use());
      }
      EXPECT_TRUE(ieee);
    }
    // Two configs of the budget: the first round's best two by the prior's
    // model, or the space's first two.
    auto job = client.SubmitSweep(SgemmProblem(1000, 1000, 1000), "model", "2");
    ASSERT_TRUE(job.ok()) << job.status();
    auto done = WaitForEnd(client, job->id());
    ASSERT_TRUE(done.ok()) << done.status();
    EXPECT_EQ(done->state(), v1::JOB_DONE) << done->error();
    EXPECT_EQ(done->total(), 2);
    EXPECT_NE(daemon.RunLog().find(c.search), std::string::npos) << daemon.RunLog();
  }
}

TEST_F(JobsTest, RefusesMessagesOverTheSizeCapAndKeepsServing) {
  Daemon daemon(dir_);
  ASSERT_TRUE(daemon.Start()) << daemon.Log();
  Client client(daemon.address());
  v1::BestKernel kernel;
  *kernel.mutable_problem() = FaultTest(1024);
  kernel.set_cubin(std::string(65 << 20, 'x'));  // over the 64 MiB cap
  auto imported = client.ImportKernel(kernel);
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kResourceExhausted) << imported.status();
  auto jobs = client.ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_TRUE(jobs->empty());  // nothing was stored
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST_F(JobsTest, RefusesADatabaseOfANewerSchema) {
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "tuned.db").c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(h);
  }
  Daemon daemon(dir_);
  EXPECT_FALSE(daemon.Start());
  EXPECT_EQ(daemon.WaitExit(), 1);
  EXPECT_NE(daemon.Log().find("schema version 99 is newer than this build's"), std::string::npos)
      << daemon.Log();
}

}  // namespace
}  // namespace tuned
