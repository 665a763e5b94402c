// WorkerClient's spare process (StartSpare, Respawn) against the real
// `tuned-worker --compile-only`: Respawn takes the spare, started beforehand,
// or starts a fresh process where the spare is gone; no process is left
// behind.
#include <sched.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "server/common/idle.h"
#include "server/worker_client.h"

namespace tuned {
namespace {

/// This process's child processes (Linux: /proc/self/task/*/children).
std::set<pid_t> Children() {
  std::set<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(entry.path() / "children");
    pid_t pid = 0;
    while (in >> pid) out.insert(pid);
  }
  return out;
}

/// A compile-only worker answers: the hello of a request of its own.
bool Answers(WorkerClient& w) {
  v1::worker::Request hello;
  hello.mutable_hello();
  auto r = w.Call(hello, absl::Seconds(60));
  return r.ok() && r->error().empty() && r->has_device();
}

std::unique_ptr<WorkerClient> Start() {
  auto w = WorkerClient::Start(TUNED_WORKER_PATH, {"--compile-only", "--arch", "90"}, "compiler");
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *std::move(w) : nullptr;
}

// A worker compiles and runs users' kernel specs: it starts with what NVRTC,
// CUDA and the linker read, and none of the daemon's secrets (its database
// URL with a password, its token). Read from the running worker's
// /proc/PID/environ.
TEST(WorkerClientTest, AWorkerStartsWithoutTheDaemonsSecrets) {
  ASSERT_EQ(setenv("TUNED_DB", "postgresql://tuned:secret-password@db/tuned", 1), 0);
  ASSERT_EQ(setenv("TUNED_TOKEN", "secret-token", 1), 0);
  ASSERT_EQ(setenv("CUDA_VISIBLE_DEVICES", "0", 1), 0);
  ASSERT_EQ(setenv("LC_ALL", "C.UTF-8", 1), 0);
  ASSERT_EQ(setenv("NVIDIA_API_KEY", "nvapi-secret-key", 1), 0);  // a secret named like a setting
  ASSERT_EQ(setenv("CUDA_SECRET", "secret-cuda", 1), 0);
  const std::set<pid_t> before = Children();
  auto w = Start();
  ASSERT_NE(w, nullptr);
  pid_t worker = 0;
  for (pid_t p : Children()) {
    if (before.count(p) == 0) worker = p;
  }
  ASSERT_GT(worker, 0);
  std::ifstream in("/proc/" + std::to_string(worker) + "/environ", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::set<std::string> names;
  std::string var;
  while (std::getline(ss, var, '\0')) names.insert(var.substr(0, var.find('=')));
  EXPECT_TRUE(names.contains("PATH"));
  EXPECT_TRUE(names.contains("CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(names.contains("LC_ALL"));
  EXPECT_FALSE(names.contains("TUNED_DB"));
  EXPECT_FALSE(names.contains("TUNED_TOKEN"));
  EXPECT_FALSE(names.contains("NVIDIA_API_KEY"));
  EXPECT_FALSE(names.contains("CUDA_SECRET"));
  EXPECT_EQ(ss.str().find("secret"), std::string::npos);
  EXPECT_TRUE(Answers(*w));
  for (const char* var : {"TUNED_DB", "TUNED_TOKEN", "CUDA_VISIBLE_DEVICES", "NVIDIA_API_KEY", "CUDA_SECRET"}) {
    unsetenv(var);
  }
  // The filter itself: exact names only (no prefix), and a variable without a value.
  const char* env[] = {"PATH=/bin", "TUNED_DB=x", "CUDA_HOME=/usr/local/cuda", "NVIDIA_VISIBLE_DEVICES=all",
                       "HOMEWORK=1", "LD_PRELOAD=/evil.so", "LC_CTYPE=C", "CUDA_VISIBLE_DEVICES=1",
                       "TUNED_WORKER_KEY=x", "CUDA_VISIBLE_DEVICES_X=1", "PATH", nullptr};
  EXPECT_EQ(WorkerEnvironment(env), (std::vector<std::string>{"PATH=/bin", "CUDA_HOME=/usr/local/cuda",
                                                              "CUDA_VISIBLE_DEVICES=1"}));
}

TEST(WorkerClientTest, RespawnTakesTheSpareStartedBeforehand) {
  auto w = Start();
  ASSERT_NE(w, nullptr);
  const std::set<pid_t> one = Children();
  ASSERT_EQ(one.size(), 1u);
  w->StartSpare();
  w->StartSpare();  // one spare at most
  const std::set<pid_t> two = Children();
  ASSERT_EQ(two.size(), 2u);
  pid_t spare = 0;
  for (pid_t p : two) {
    if (one.count(p) == 0) spare = p;
  }
  ASSERT_TRUE(w->Respawn().ok());
  EXPECT_EQ(Children(), std::set<pid_t>{spare});  // the old one reaped, the spare working
  EXPECT_TRUE(w->ready());
  EXPECT_TRUE(Answers(*w));
  EXPECT_EQ(w->restarts(), 0);
  // No spare now: a fresh process.
  ASSERT_TRUE(w->Respawn().ok());
  const std::set<pid_t> fresh = Children();
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh.count(spare), 0u);
  EXPECT_TRUE(Answers(*w));
}

TEST(WorkerClientTest, ASpareThatDiedIsReplacedByAFreshProcess) {
  auto w = Start();
  ASSERT_NE(w, nullptr);
  const std::set<pid_t> one = Children();
  w->StartSpare();
  pid_t spare = 0;
  for (pid_t p : Children()) {
    if (one.count(p) == 0) spare = p;
  }
  ASSERT_GT(spare, 0);
  ASSERT_EQ(kill(spare, SIGKILL), 0);
  ASSERT_TRUE(w->Respawn().ok());
  const std::set<pid_t> now = Children();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now.count(spare), 0u);
  EXPECT_EQ(now.count(*one.begin()), 0u);
  EXPECT_TRUE(Answers(*w));
}

TEST(WorkerClientTest, TheSpareEndsWithItsClient) {
  auto w = Start();
  ASSERT_NE(w, nullptr);
  w->StartSpare();
  ASSERT_EQ(Children().size(), 2u);
  w.reset();
  EXPECT_TRUE(Children().empty());
}

}  // namespace
}  // namespace tuned

namespace tuned {
namespace {

// The compile-ahead's compiler (--idle) and a cost model's fit run under
// SCHED_IDLE; the thread that asks for a fit keeps its own priority.
TEST(IdlePriorityTest, AnIdleWorkerAndAFitRunUnderSchedIdle) {
  const std::set<pid_t> before = Children();
  auto w = WorkerClient::Start(TUNED_WORKER_PATH, {"--compile-only", "--arch", "90", "--idle"},
                               "ahead compiler");
  ASSERT_TRUE(w.ok()) << w.status();
  std::set<pid_t> started;
  for (pid_t pid : Children()) {
    if (!before.contains(pid)) started.insert(pid);
  }
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(sched_getscheduler(*started.begin()), SCHED_IDLE);
  auto normal = WorkerClient::Start(TUNED_WORKER_PATH, {"--compile-only", "--arch", "90"}, "compiler");
  ASSERT_TRUE(normal.ok()) << normal.status();
  for (pid_t pid : Children()) {
    if (!before.contains(pid) && !started.contains(pid)) {
      EXPECT_EQ(sched_getscheduler(pid), SCHED_OTHER);
    }
  }

  const int inside = AtIdlePriority([] { return sched_getscheduler(0); });
  EXPECT_EQ(inside, SCHED_IDLE);
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
}

}  // namespace
}  // namespace tuned
