// Workloads (client/workload.h): the file, the sweeps it plans, and
// `tunectl workload sweep|report` against the service over a real channel.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "client/tunectl_commands.h"
#include "client/workload.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"
#include "tests/service_fixture.h"

namespace tuned {
namespace {

using Json = nlohmann::json;

/// A workload file's text from its problems.
std::string WorkloadText(const Json& problems) {
  return Json{{"format", "tuned-workload-1"}, {"problems", problems}}.dump();
}

Json Gemm(int64_t m, int64_t n, int64_t k, double gpu_ms, int64_t calls = 10) {
  return {{"dtype", "bf16"}, {"layout", "nt"}, {"shape", {m, n, k}}, {"calls", calls}, {"gpu_ms", gpu_ms}};
}

TEST(Workload, AFileReadsWithItsDefaultsAndAProblemListedTwiceIsOne) {
  auto w = ParseWorkload(WorkloadText(
      {Gemm(16, 4096, 4096, 3.0), {{"shape", {64, 64, 64}}, {"calls", 2}, {"gpu_ms", 1.0}},
       Gemm(16, 4096, 4096, 2.0, 5), {{"family", "transpose"}, {"shape", {33, 17}}, {"calls", 1}, {"gpu_ms", 0}}}));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->problems.size(), 3u);
  EXPECT_DOUBLE_EQ(w->total_ms, 6.0);
  const WorkloadProblem& first = w->problems[0];
  EXPECT_EQ(first.problem.ShortDebugString(),
            SgemmProblem(16, 4096, 4096, v1::MATH_IEEE_FP32, v1::LAYOUT_NT, v1::DTYPE_BF16).ShortDebugString());
  EXPECT_EQ(first.calls, 15);
  EXPECT_DOUBLE_EQ(first.gpu_ms, 5.0);
  EXPECT_EQ(w->problems[1].problem.ShortDebugString(), SgemmProblem(64, 64, 64).ShortDebugString());
  EXPECT_EQ(w->problems[2].problem.family(), v1::FAMILY_TRANSPOSE);
  EXPECT_EQ(w->problems[2].problem.dtype(), v1::DTYPE_F32);
  // gemm, sgemm's other name, is the same problem.
  Json gemm = Gemm(16, 4096, 4096, 1.0);
  gemm["family"] = "gemm";
  auto aliased = ParseWorkload(WorkloadText(Json::array({gemm})));
  ASSERT_TRUE(aliased.ok()) << aliased.status();
  EXPECT_EQ(aliased->problems[0].problem.ShortDebugString(), first.problem.ShortDebugString());
}

TEST(Workload, ABadFileNamesTheEntryAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "workload: not JSON"},
      {R"({"format": "other", "problems": []})", "workload: format"},
      {R"({"format": "tuned-workload-1"})", "workload: problems: missing"},
      {WorkloadText({{{"shape", {1, 2, 3}}, {"calls", 1}, {"gpu_ms", 1}, {"cols", 4}}}),
       "problems[0].cols: unknown key"},
      {WorkloadText({Gemm(1, 2, 3, 1), {{"dtype", "fp16"}, {"shape", {1, 2, 3}}, {"calls", 1}, {"gpu_ms", 1}}}),
       "problems[1].dtype"},
      {WorkloadText({{{"layout", "nx"}, {"shape", {1, 2, 3}}, {"calls", 1}, {"gpu_ms", 1}}}), "problems[0].layout"},
      {WorkloadText({{{"math", "fast"}, {"shape", {1, 2, 3}}, {"calls", 1}, {"gpu_ms", 1}}}), "problems[0].math"},
      {WorkloadText({{{"shape", {1, -2, 3}}, {"calls", 1}, {"gpu_ms", 1}}}), "problems[0].shape: -2 is not"},
      {WorkloadText({{{"shape", Json::array()}, {"calls", 1}, {"gpu_ms", 1}}}), "problems[0].shape: missing"},
      {WorkloadText({{{"shape", {1, 2, 3}}, {"calls", 0}, {"gpu_ms", 1}}}), "problems[0].calls"},
      {WorkloadText({{{"shape", {1, 2, 3}}, {"calls", 1}, {"gpu_ms", -1}}}), "problems[0].gpu_ms"},
      {WorkloadText({{{"family", "softmax"}, {"dtype", "bf16"}, {"shape", {1, 2}}, {"calls", 1}, {"gpu_ms", 1}}}),
       "problems[0].dtype: bf16 is for built-in families"},
  };
  for (const auto& [text, want] : cases) {
    auto w = ParseWorkload(text);
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(w.status().message().find(want), std::string::npos) << w.status() << "\nwant: " << want;
  }
}

// A layer that runs at a few Ms is tuned at each; one that runs at many
// prompt lengths, at the powers of two nearest them, each M served by the
// bucket that the daemon's nearest-shape rule picks; largest time first.
TEST(Workload, ManyPromptLengthsAreTunedAtBucketsThatSayWhichMTheyServe) {
  Json problems = {Gemm(1, 4096, 4096, 50), Gemm(8, 4096, 4096, 5), Gemm(1, 1024, 4096, 1)};
  for (int64_t m : {3, 77, 90, 130, 500}) problems.push_back(Gemm(m, 11008, 4096, static_cast<double>(m)));
  auto w = ParseWorkload(WorkloadText(problems));
  ASSERT_TRUE(w.ok()) << w.status();
  const std::vector<WorkloadSweep> plan = PlanSweeps(*w);
  std::vector<std::string> got;
  for (const WorkloadSweep& s : plan) {
    std::string serves;
    for (size_t i : s.serves) serves += std::to_string(w->problems[i].problem.shape(0)) + " ";
    got.push_back(std::to_string(s.problem.shape(0)) + "x" + std::to_string(s.problem.shape(1)) +
                  (s.bucket ? " bucket: " + serves : "") + " " + std::to_string(s.gpu_ms));
  }
  // 11008 x 4096: Ms 3, 77, 90, 130, 500 and five of them, over
  // kExactShapesPerGroup: 3 -> 4, 77 and 90 -> 64 (log2 90 = 6.49), 130 -> 128, 500 -> 512.
  EXPECT_EQ(got, (std::vector<std::string>{
                     "512x11008 bucket: 500  500.000000", "64x11008 bucket: 77 90  167.000000",
                     "128x11008 bucket: 130  130.000000", "1x4096 50.000000", "8x4096 5.000000",
                     "4x11008 bucket: 3  3.000000", "1x1024 1.000000"}));
}

/// The service, and a workload file in its folder.
class WorkloadTest : public ServiceFixture {
 protected:
  std::string Write(const Json& problems) {
    const std::string path = (dir_ / "workload.json").string();
    std::ofstream(path) << WorkloadText(problems);
    return path;
  }
  /// A command's exit status and its JSON output.
  std::pair<int, Json> Run(const std::function<int(tunectl::Context&)>& command) {
    tunectl::Context ctx{*client_, /*json=*/true};
    // The in-process daemon's log goes to stdout too: quiet while captured.
    const spdlog::level::level_enum level = spdlog::get_level();
    spdlog::set_level(spdlog::level::off);
    ::testing::internal::CaptureStdout();
    const int status = command(ctx);
    const std::string out = ::testing::internal::GetCapturedStdout();
    spdlog::set_level(level);
    return {status, Json::parse(out, nullptr, false)};
  }
};

TEST_F(WorkloadTest, SweepQueuesEachPlannedSweepLargestShareFirst) {
  Json problems = {{{"family", "transpose"}, {"shape", {48, 20}}, {"calls", 3}, {"gpu_ms", 1.0}}};
  for (int64_t m : {3, 77, 90, 130, 500}) problems.push_back(Gemm(m, 256, 128, static_cast<double>(m)));
  const std::string file = Write(problems);
  auto [status, out] = Run([&](tunectl::Context& ctx) { return tunectl::SweepWorkload(ctx, file, false); });
  ASSERT_EQ(status, 0) << out.dump();
  ASSERT_TRUE(out.is_array()) << out.dump();
  ASSERT_EQ(out.size(), 5u) << out.dump();
  EXPECT_EQ(out[0]["serves"], "M=500");
  EXPECT_EQ(out[1]["serves"], "M=77,90");
  EXPECT_NEAR(out[1]["share"].get<double>(), 167.0 / 801.0, 1e-9);
  EXPECT_EQ(out[4]["serves"], "-");  // transpose 48x20, 1 ms
  auto jobs = client_->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 5u);
  std::set<std::string> queued;
  for (const v1::Job& j : *jobs) queued.insert(j.problem().ShortDebugString());
  EXPECT_TRUE(queued.contains(
      SgemmProblem(64, 256, 128, v1::MATH_IEEE_FP32, v1::LAYOUT_NT, v1::DTYPE_BF16).ShortDebugString()));
  // A file that is not a workload queues nothing.
  const std::string bad = (dir_ / "bad.json").string();
  std::ofstream(bad) << "{}";
  tunectl::Context ctx{*client_, true};
  EXPECT_EQ(tunectl::SweepWorkload(ctx, bad, false), 1);
  EXPECT_EQ(client_->ListJobs()->size(), 5u);
}

TEST_F(WorkloadTest, ReportSaysWhatTheServedKernelsSave) {
  // 1024^3 tuned at 0.05 ms against cuBLAS's 0.06; at 64^3 cuBLAS is faster.
  auto device_id = store_->UpsertDevice(worker_->device());
  ASSERT_TRUE(device_id.ok());
  for (const auto& [shape, baseline_ms] : {std::pair{int64_t{1024}, 0.06}, {int64_t{64}, 0.01}}) {
    auto job = store_->CreateJob(*device_id, SgemmProblem(shape, shape, shape), 1, 0);
    ASSERT_TRUE(job.ok());
    ASSERT_TRUE(store_->AddMeasurement(*job, SgemmMeasurement(worker_->device()), &kBinary).ok());
    ASSERT_TRUE(store_->SetJobBaseline(*job, baseline_ms, 0, "cuBLAS").ok());
  }
  auto f32 = [](int64_t m, int64_t n, int64_t k, double ms) {
    return Json{{"shape", {m, n, k}}, {"calls", 100}, {"gpu_ms", ms}};
  };
  const std::string file = Write({f32(1024, 1024, 1024, 120), f32(1100, 1000, 900, 60),
                                  f32(64, 64, 64, 12), f32(8, 8, 8, 8)});
  auto [status, out] = Run([&](tunectl::Context& ctx) { return tunectl::ReportWorkload(ctx, file); });
  ASSERT_EQ(status, 0) << out.dump();
  ASSERT_EQ(out["problems"].size(), 4u) << out.dump();
  const Json& exact = out["problems"][0];
  EXPECT_EQ(exact["served"], "kernel");
  EXPECT_NEAR(exact["speedup"].get<double>(), 1.2, 1e-9);
  EXPECT_NEAR(exact["after_ms"].get<double>(), 100, 1e-9);
  const Json& near = out["problems"][1];
  EXPECT_EQ(near["served"], "kernel of 1024x1024x1024");
  EXPECT_NEAR(near["saves_ms"].get<double>(), 10, 1e-9);
  EXPECT_EQ(out["problems"][2]["served"], "cuBLAS");
  EXPECT_NEAR(out["problems"][2]["saves_ms"].get<double>(), 0, 1e-12);
  EXPECT_EQ(out["problems"][3]["served"], "not tuned");
  EXPECT_NEAR(out["recorded_ms"].get<double>(), 200, 1e-9);
  EXPECT_NEAR(out["saves_ms"].get<double>(), 30, 1e-9);
}

}  // namespace
}  // namespace tuned
