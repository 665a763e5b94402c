// A sweep whose every config fails verification, end to end without a GPU:
// the real daemon binary (tests/daemon_process.h) with tests/fake_worker as
// its GPU worker (a device that is not compile-only, every kernel a wrong
// answer, the baseline timed), through real gRPC and the real tunectl.
// Where the family's baseline computes the same result (sgemm's cuBLAS) the
// job ends DONE and GetBest serves the baseline with no kernel; where it
// does not (transpose's copy kernel) or none was timed, the job fails.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
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

/// The daemon with the fake GPU worker, whose baseline takes `baseline_ms`
/// (0: none timed).
class FakeGpuDaemon : public DaemonProcess {
 public:
  FakeGpuDaemon(const fs::path& dir, const std::string& baseline_ms)
      : DaemonProcess(TUNED_DAEMON_PATH, dir,
                      {"--worker", TUNED_FAKE_WORKER_PATH, "--compile-batch", "64", "--log-level",
                       "info"},
                      {"TUNED_WORKER_FAKE_BASELINE_MS=" + baseline_ms}) {}
};

absl::StatusOr<v1::Job> WaitForEnd(Client& client, int64_t id) {
  const auto end = std::chrono::steady_clock::now() + 120s;
  while (true) {
    auto job = client.GetJob(id);
    if (!job.ok() || job->state() == v1::JOB_DONE || job->state() == v1::JOB_FAILED ||
        job->state() == v1::JOB_CANCELLED) {
      return job;
    }
    if (std::chrono::steady_clock::now() > end) return absl::DeadlineExceededError("job did not end");
    std::this_thread::sleep_for(100ms);
  }
}

/// Runs tunectl with `args` against `address`; its exit code, and stdout and
/// stderr in `*out`.
int Tunectl(const std::string& address, const std::string& args, std::string* out) {
  const std::string cmd = std::string(TUNED_TUNECTL_PATH) + " --server " + address + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  out->clear();
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out->append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class NoKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("tuned_no_kernel_test_" + std::to_string(getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(NoKernelTest, EveryConfigWrongIsDoneAndServesTheBaselineWithNoKernel) {
  FakeGpuDaemon daemon(dir_, "0.004");
  ASSERT_TRUE(daemon.WaitServing()) << daemon.RunLog();
  Client client(daemon.address());
  auto device = client.DescribeDevice();
  ASSERT_TRUE(device.ok()) << device.status();
  ASSERT_FALSE(device->compile_only());  // the fake GPU: configs are verified, not just compiled

  const v1::Problem tf32 = SgemmProblem(67, 131, 1, v1::MATH_TF32);
  auto submitted = client.SubmitSweep(tf32);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  auto job = WaitForEnd(client, submitted->id());
  ASSERT_TRUE(job.ok()) << job.status() << daemon.RunLog();
  EXPECT_EQ(v1::JobState_Name(job->state()), "JOB_DONE") << job->error();
  EXPECT_EQ(job->error(), "no config passed verification; the baseline (cuBLAS TF32, 0.0040 ms) is served");
  EXPECT_GT(job->failed(), 0);
  EXPECT_EQ(job->done(), 0);
  EXPECT_FALSE(job->has_best());
  EXPECT_NE(daemon.RunLog().find("no config passed verification; the baseline (cuBLAS TF32"),
            std::string::npos);

  auto best = client.GetBest(tf32);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_TRUE(best->use_baseline());
  EXPECT_EQ(best->match(), v1::MATCH_EXACT);
  EXPECT_EQ(best->serving_reason().rfind("cuBLAS TF32: no kernel passed verification (every config of job " +
                                             std::to_string(job->id()) + " failed",
                                         0),
            0u)
      << best->serving_reason();
  EXPECT_EQ(best->baseline_name(), "cuBLAS TF32");
  EXPECT_DOUBLE_EQ(best->baseline_ms(), 0.004);
  EXPECT_NEAR(best->baseline_metric(), 2.0 * 67 * 131 / (0.004 * 1e6), 1e-9);
  EXPECT_DOUBLE_EQ(best->baseline_error(), 2.5e-7);
  EXPECT_FALSE(best->has_measurement());  // no kernel
  EXPECT_TRUE(best->cubin().empty() && best->ptx().empty() && best->source().empty());
  EXPECT_TRUE(best->entry().empty());
  EXPECT_FALSE(best->has_geometry());
  EXPECT_EQ(best->arguments_size(), 0);
  EXPECT_EQ(std::vector<int64_t>(best->tuned_shape().begin(), best->tuned_shape().end()),
            (std::vector<int64_t>{67, 131, 1}));
  EXPECT_EQ(best->device().name(), "Fake H100 (tests/fake_worker)");

  // The exact shape only: no other mode, and never as a nearest shape;
  // tune_if_missing queues nothing for the shape itself (it is answered).
  EXPECT_TRUE(absl::IsNotFound(client.GetBest(SgemmProblem(67, 131, 1)).status()));
  EXPECT_TRUE(absl::IsNotFound(client.GetBest(SgemmProblem(67, 131, 2, v1::MATH_TF32)).status()));
  auto again = client.GetBest(tf32, /*tune_if_missing=*/true);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->queued_job_id(), 0);
  EXPECT_TRUE(client.ListTuned()->empty());

  // tunectl: best says what is served, exit 0 (the shape is tuned); export
  // has no kernel to write.
  std::string out;
  EXPECT_EQ(Tunectl(daemon.address(), "best --math tf32 67 131 1", &out), 0) << out;
  EXPECT_NE(out.find("none: no config passed verification"), std::string::npos) << out;
  EXPECT_NE(out.find("cuBLAS TF32: no kernel passed verification"), std::string::npos) << out;
  EXPECT_NE(out.find("the client library calls cuBLAS TF32 for this shape"), std::string::npos) << out;
  EXPECT_EQ(Tunectl(daemon.address(), "best --math tf32 67 131 1 --json", &out), 0) << out;
  EXPECT_NE(out.find("\"use_baseline\": true"), std::string::npos) << out;
  EXPECT_EQ(Tunectl(daemon.address(), "export --math tf32 67 131 1 --out " + (dir_ / "x").string(), &out),
            1)
      << out;
  EXPECT_NE(out.find("no kernel to export"), std::string::npos) << out;
  EXPECT_EQ(Tunectl(daemon.address(), "job " + std::to_string(job->id()), &out), 0) << out;
  EXPECT_NE(out.find("done: no config passed verification; the baseline"), std::string::npos) << out;

  // A sweep --wait of another such shape ends by printing what is served.
  EXPECT_EQ(Tunectl(daemon.address(), "sweep --math fp32_accurate 67 131 1 --wait", &out), 0) << out;
  EXPECT_NE(out.find("cuBLAS fp32: no kernel passed verification"), std::string::npos) << out;

  // Transpose's baseline (a copy) is no transpose: its job fails.
  auto t = client.SubmitSweep(TransposeProblem(96, 40));
  ASSERT_TRUE(t.ok()) << t.status();
  auto failed = WaitForEnd(client, t->id());
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(v1::JobState_Name(failed->state()), "JOB_FAILED");
  EXPECT_EQ(failed->error(), "no config passed verification");
  EXPECT_DOUBLE_EQ(failed->baseline_ms(), 0.004);  // timed, but no answer
  // Transpose is made of a kernel spec: its Prepare carried the reference
  // and the default config compiled by the daemon's compiler (the fake
  // worker, as the real one, refuses a spec's Prepare without them), and
  // the default config is the baseline the worker timed.
  EXPECT_EQ(failed->baseline_name(), "default config transpose_tiled_32x8_p1");
  EXPECT_TRUE(absl::IsNotFound(client.GetBest(TransposeProblem(96, 40)).status()));
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.RunLog();
}

TEST_F(NoKernelTest, EveryConfigWrongWithoutABaselineTimedFails) {
  FakeGpuDaemon daemon(dir_, "0");
  ASSERT_TRUE(daemon.WaitServing()) << daemon.RunLog();
  Client client(daemon.address());
  const v1::Problem tf32 = SgemmProblem(67, 131, 1, v1::MATH_TF32);
  auto submitted = client.SubmitSweep(tf32);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  auto job = WaitForEnd(client, submitted->id());
  ASSERT_TRUE(job.ok()) << job.status() << daemon.RunLog();
  EXPECT_EQ(v1::JobState_Name(job->state()), "JOB_FAILED");
  EXPECT_EQ(job->error(), "no config passed verification");
  auto best = client.GetBest(tf32);
  EXPECT_TRUE(absl::IsNotFound(best.status())) << best.status();
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.RunLog();
}

}  // namespace
}  // namespace tuned
