// The gRPC service through a real channel (Unix socket), with the real GPU
// worker binary in compile-only mode: no GPU needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "db/store.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "server/best_answers.h"
#include "server/best_pollers.h"
#include "server/jobs/jobs.h"
#include "server/service.h"
#include "server/worker_client.h"
#include "tests/service_fixture.h"
#include "tuned/client.h"

namespace tuned {
namespace {

/// The service over a real channel (tests/service_fixture.h).
class ServiceTest : public ServiceFixture {};

TEST_F(ServiceTest, DescribesTheSimulatedDevice) {
  auto d = client_->DescribeDevice();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->compile_only());
  EXPECT_EQ(d->cc_major(), 9);
  EXPECT_EQ(d->cc_minor(), 0);
  EXPECT_EQ(d->total_memory_bytes(), int64_t{1024} << 20);
  EXPECT_FALSE(d->nvrtc_version().empty());
}

TEST_F(ServiceTest, BadInputIsRejectedAndQueuesNothing) {
  struct BadCase {
    v1::Problem problem;
    absl::StatusCode code;
    std::string message;
  };
  v1::Problem no_family = SgemmProblem(64, 64, 64);
  no_family.set_family(v1::FAMILY_UNSPECIFIED);
  v1::Problem no_dtype = SgemmProblem(64, 64, 64);
  no_dtype.set_dtype(v1::DTYPE_UNSPECIFIED);
  v1::Problem family77 = SgemmProblem(64, 64, 64);  // enums may hold any number
  family77.set_family(static_cast<v1::Family>(77));
  v1::Problem dtype9 = SgemmProblem(64, 64, 64);
  dtype9.set_dtype(static_cast<v1::DType>(9));
  v1::Problem rank2 = SgemmProblem(64, 64, 64);
  rank2.mutable_shape()->RemoveLast();
  v1::Problem math7 = SgemmProblem(64, 64, 64);
  math7.set_math(static_cast<v1::Math>(7));
  v1::Problem transpose_tf32 = TransposeProblem(64, 64);
  transpose_tf32.set_math(v1::MATH_TF32);
  v1::Problem transpose_bf16 = TransposeProblem(64, 64);
  transpose_bf16.set_dtype(v1::DTYPE_BF16);
  const std::vector<BadCase> cases = {
      {SgemmProblem(0, 64, 64), absl::StatusCode::kInvalidArgument, "M must be at least 1"},
      {SgemmProblem(64, -3, 64), absl::StatusCode::kInvalidArgument, "N must be at least 1"},
      {SgemmProblem(64, 64, int64_t{1} << 40), absl::StatusCode::kInvalidArgument, "32-bit"},
      {SgemmProblem(65536, 65536, 2), absl::StatusCode::kInvalidArgument, "2^31"},
      {rank2, absl::StatusCode::kInvalidArgument, "3 dimensions"},
      {no_family, absl::StatusCode::kInvalidArgument, "unknown kernel family"},
      {no_dtype, absl::StatusCode::kInvalidArgument, "dtype"},
      {family77, absl::StatusCode::kInvalidArgument,
       "unknown kernel family 77 (built-in: sgemm, transpose;"},
      {dtype9, absl::StatusCode::kInvalidArgument,
       "dtype 9 is not supported by sgemm (supported: f32, bf16, f16, bf16_f32, f16_f32)"},
      {math7, absl::StatusCode::kInvalidArgument,
       "math mode 7 is not supported by sgemm in dtype f32 (supported: ieee_fp32, fp32_accurate, tf32)"},
      {transpose_tf32, absl::StatusCode::kInvalidArgument,
       "math mode MATH_TF32 is not supported by transpose (supported: ieee_fp32)"},
      {transpose_bf16, absl::StatusCode::kInvalidArgument,
       "dtype DTYPE_BF16 is not supported by transpose (supported: f32)"},
      {SgemmProblem(64, 64, 64, v1::MATH_TF32, v1::LAYOUT_NN, v1::DTYPE_BF16),
       absl::StatusCode::kInvalidArgument,
       "math mode MATH_TF32 is not supported by sgemm in dtype bf16 (supported: ieee_fp32)"},
      // A, B, C and the reference: 4 * (2*8192*16384 + 2*8192^2) B = 1.5 GiB > 1024 MiB.
      {SgemmProblem(8192, 8192, 16384), absl::StatusCode::kResourceExhausted, "MiB"},
  };
  for (const auto& c : cases) {
    auto job = client_->SubmitSweep(c.problem);
    ASSERT_FALSE(job.ok()) << c.problem.ShortDebugString();
    EXPECT_EQ(job.status().code(), c.code) << job.status();
    EXPECT_NE(job.status().message().find(c.message), std::string::npos) << job.status();
  }
  auto jobs = client_->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
  // The daemon still answers.
  EXPECT_TRUE(client_->DescribeDevice().ok());
}

// Bytes that are not a request message: INVALID_ARGUMENT with a message (not
// gRPC's own INTERNAL or UNIMPLEMENTED without one), on the synchronous,
// asynchronous (GetBest) and server-streaming (WatchJob) methods alike.
TEST_F(ServiceTest, UnparsableRequestBytesAreInvalidArgument) {
  grpc::GenericStub stub(grpc::CreateChannel("unix:" + (dir_ / "t.sock").string(),
                                             grpc::InsecureChannelCredentials()));
  for (const std::string method : {"/tuned.v1.Tuner/GetBest", "/tuned.v1.Tuner/SubmitSweep",
                                   "/tuned.v1.Tuner/ListJobs", "/tuned.v1.Tuner/WatchJob"}) {
    grpc::Slice garbage(std::string("\xff\xff\xff\xff"));  // a truncated varint tag
    grpc::ByteBuffer request(&garbage, 1), response;
    grpc::ClientContext ctx;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                   [&](grpc::Status s) { done.set_value(std::move(s)); });
    const grpc::Status status = done.get_future().get();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_EQ(status.error_message(),
              "the request to " + method + " is not a valid protobuf message of its type");
  }
  // Errors of parsed requests keep their own code and message.
  auto job = client_->GetJob(-1);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(), "job id must be positive, got -1");
  EXPECT_EQ(client_->GetBest(SgemmProblem(8, 8, 8)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->WatchJob(12345, [](const v1::Job&) {}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(client_->ListJobs().ok());
  auto negative = client_->ListJobs(-1);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.status().message(), "limit must be >= 0 (0: the newest 50), got -1");
}

TEST_F(ServiceTest, UnknownJobsAndUntunedProblemsAreNotFound) {
  EXPECT_EQ(client_->GetJob(12345).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->CancelJob(12345).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->GetJob(-1).status().code(), absl::StatusCode::kInvalidArgument);
  auto best = client_->GetBest(SgemmProblem(1024, 1024, 1024));
  EXPECT_EQ(best.status().code(), absl::StatusCode::kNotFound) << best.status();
  EXPECT_EQ(client_->GetBest(SgemmProblem(0, 1, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ServiceTest, CompileOnlySweepRunsToTheEndAndRecordsEveryConfig) {
  auto job = client_->SubmitSweep(TransposeProblem(100, 37));
  ASSERT_TRUE(job.ok()) << job.status();
  // Queued; the runner may already have taken it (it also polls the queue).
  EXPECT_TRUE(job->state() == v1::JOB_QUEUED || job->state() == v1::JOB_RUNNING) << job->state();
  EXPECT_GT(job->total(), 10);
  int updates = 0;
  auto end = client_->WatchJob(job->id(), [&](const v1::Job&) { ++updates; });
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->state(), v1::JOB_DONE) << end->ShortDebugString();
  EXPECT_EQ(end->done(), end->total()) << end->ShortDebugString();
  EXPECT_EQ(end->failed(), 0) << end->ShortDebugString();
  EXPECT_GE(updates, 1);
  auto ms = client_->ListMeasurements(TransposeProblem(100, 37), 0);
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(static_cast<int>(ms->size()), end->total());
  for (const auto& m : *ms) {
    EXPECT_EQ(m.status(), v1::MEASUREMENT_COMPILED) << m.config().name() << ": " << m.message();
    EXPECT_GT(m.registers(), 0) << m.config().name();
    EXPECT_EQ(m.job_id(), job->id());
  }
  // Compile-only measures nothing, so there is still no best kernel.
  EXPECT_EQ(client_->GetBest(TransposeProblem(100, 37)).status().code(), absl::StatusCode::kNotFound);
  auto top = client_->ListMeasurements(TransposeProblem(100, 37), 3);
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(top->size(), 3u);
}

TEST_F(ServiceTest, CancelStopsAQueuedJob) {
  auto first = client_->SubmitSweep(TransposeProblem(64, 64));
  auto second = client_->SubmitSweep(TransposeProblem(128, 64));
  ASSERT_TRUE(first.ok() && second.ok());
  auto cancelled = client_->CancelJob(second->id());
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::JOB_CANCELLED);
  auto end = client_->WatchJob(first->id(), [](const v1::Job&) {});
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->state(), v1::JOB_DONE);
  auto second_now = client_->GetJob(second->id());
  ASSERT_TRUE(second_now.ok());
  EXPECT_EQ(second_now->state(), v1::JOB_CANCELLED);
  EXPECT_EQ(second_now->done(), 0);
  auto jobs = client_->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ(jobs->front().id(), second->id());  // newest first
}

}  // namespace
}  // namespace tuned

namespace tuned {
namespace {

// More look-ups at once than the daemon has calls requested ahead
// (BestPollers: 2 threads x kRequestedAhead here) wait for the next request,
// and each gets the stored kernel.
TEST_F(ServiceTest, ConcurrentLookUpsBeyondTheCallsRequestedAheadAreAllAnswered) {
  auto device_id = store_->UpsertDevice(worker_->device());
  ASSERT_TRUE(device_id.ok());
  auto job = store_->CreateJob(*device_id, SgemmProblem(512, 512, 512), 1, 0);
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(store_->AddMeasurement(*job, SgemmMeasurement(worker_->device()), &kBinary).ok());
  ASSERT_TRUE(store_->SetJobBaseline(*job, 0.06, 0, "cuBLAS").ok());
  constexpr int kClients = 2 * BestPollers::kRequestedAhead + 16;
  constexpr int kCalls = 20;
  std::atomic<int> answered{0};
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kCalls; ++i) {
        auto best = client_->GetBest(SgemmProblem(512, 512, 512));
        if (!best.ok()) {
          failures[c] = best.status().ToString();
        } else if (best->cubin() != kBinary.cubin || best->match() != v1::MATCH_EXACT) {
          failures[c] = "another answer: " + best->entry();
        } else {
          ++answered;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(failures[c], "") << "client " << c;
  EXPECT_EQ(answered.load(), kClients * kCalls);
}

// A stored OK measurement (as a GPU sweep would leave) serves its shape exactly
// and nearby untuned shapes as MATCH_NEAREST, with geometry for the asked shape.
TEST_F(ServiceTest, GetBestFallsBackToTheNearestTunedShape) {
  auto device_id = store_->UpsertDevice(worker_->device());
  ASSERT_TRUE(device_id.ok());
  auto job = store_->CreateJob(*device_id, SgemmProblem(1024, 1024, 1024), 1, 0);
  ASSERT_TRUE(job.ok());
  const Family& f = GemmFamily();
  const Config config = f.ValidSpace(worker_->device(), nullptr).back();
  const v1::Measurement m = SgemmMeasurement(worker_->device());
  ASSERT_TRUE(store_->AddMeasurement(*job, m, &kBinary).ok());
  ASSERT_TRUE(store_->SetJobBaseline(*job, 0.06, 0, "cuBLAS").ok());

  auto exact = client_->GetBest(SgemmProblem(1024, 1024, 1024));
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(exact->match(), v1::MATCH_EXACT);
  EXPECT_EQ(exact->cubin(), kBinary.cubin);
  EXPECT_EQ(exact->entry(), "_Z5entry");
  EXPECT_DOUBLE_EQ(exact->baseline_ms(), 0.06);
  EXPECT_EQ(exact->arguments_size(), 8);
  EXPECT_FALSE(exact->use_baseline());  // 0.05 ms beats cuBLAS's 0.06

  // Where cuBLAS beat every generated kernel, GetBest says so.
  auto job2 = store_->CreateJob(*device_id, SgemmProblem(64, 64, 64), 1, 0);
  ASSERT_TRUE(job2.ok());
  ASSERT_TRUE(store_->AddMeasurement(*job2, m, &kBinary).ok());
  ASSERT_TRUE(store_->SetJobBaseline(*job2, 0.01, 0, "cuBLAS").ok());
  auto slower = client_->GetBest(SgemmProblem(64, 64, 64));
  ASSERT_TRUE(slower.ok()) << slower.status();
  EXPECT_TRUE(slower->use_baseline());

  auto near = client_->GetBest(SgemmProblem(1100, 1000, 900));
  ASSERT_TRUE(near.ok()) << near.status();
  EXPECT_EQ(near->match(), v1::MATCH_NEAREST);
  EXPECT_EQ(std::vector<int64_t>(near->tuned_shape().begin(), near->tuned_shape().end()),
            (std::vector<int64_t>{1024, 1024, 1024}));
  EXPECT_EQ(near->measurement().config().name(), f.ConfigName(config));
  const auto want = f.Geometry(config, {1100, 1000, 900}, Sm90ReferenceDevice());
  EXPECT_EQ(near->geometry().SerializeAsString(), want.SerializeAsString());
  EXPECT_EQ(near->queued_job_id(), 0);

  auto far = client_->GetBest(SgemmProblem(16, 4096, 4096));
  EXPECT_EQ(far.status().code(), absl::StatusCode::kNotFound) << far.status();

  auto queued = client_->GetBest(SgemmProblem(1000, 1000, 1000), /*tune_if_missing=*/true);
  ASSERT_TRUE(queued.ok()) << queued.status();
  EXPECT_EQ(queued->match(), v1::MATCH_NEAREST);
  EXPECT_GT(queued->queued_job_id(), 0);
  auto queued_job = client_->GetJob(queued->queued_job_id());
  ASSERT_TRUE(queued_job.ok());
  EXPECT_EQ(std::vector<int64_t>(queued_job->problem().shape().begin(),
                                 queued_job->problem().shape().end()),
            (std::vector<int64_t>{1000, 1000, 1000}));
  client_->CancelJob(queued->queued_job_id()).IgnoreError();
}

// Each math mode has its own best and nearest shapes; ListTuned and
// GetBest carry the mode and the baseline's error vs fp64. (A sweep of a
// mode: cli_test's math-queue and the Python client's tests.)
// A layout is its own problem: a best stored for NT serves NT (and a shape
// near it in NT), never NN or TN; ListTuned names the layout; a layout the
// family does not take is INVALID_ARGUMENT, naming the ones it does.
TEST_F(ServiceTest, LayoutsHaveTheirOwnBests) {
  const v1::Device d = worker_->device();
  auto device_id = store_->UpsertDevice(d);
  ASSERT_TRUE(device_id.ok());
  const v1::Problem nt = SgemmProblem(1024, 1024, 1024, v1::MATH_IEEE_FP32, v1::LAYOUT_NT);
  auto job = store_->CreateJob(*device_id, nt, 1, 0);
  ASSERT_TRUE(job.ok());
  v1::Measurement m;
  m.mutable_config()->set_name("sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2_nt");
  m.set_status(v1::MEASUREMENT_OK);
  m.set_median_ms(0.2);
  ASSERT_TRUE(store_->AddMeasurement(*job, m, &kBinary).ok());
  ASSERT_TRUE(store_->SetJobBaseline(*job, 0.3, 0, "cuBLAS").ok());
  auto best = client_->GetBest(nt);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->match(), v1::MATCH_EXACT);
  EXPECT_EQ(best->problem().layout(), v1::LAYOUT_NT);
  EXPECT_EQ(best->measurement().config().name(), "sgemm_warp_128x128x16_8x8_ln8_s3_g8_b2_nt");
  auto near = client_->GetBest(SgemmProblem(1000, 1000, 1000, v1::MATH_IEEE_FP32, v1::LAYOUT_NT));
  ASSERT_TRUE(near.ok()) << near.status();
  EXPECT_EQ(near->match(), v1::MATCH_NEAREST);
  for (v1::Layout other : {v1::LAYOUT_NN, v1::LAYOUT_TN}) {
    auto none = client_->GetBest(SgemmProblem(1024, 1024, 1024, v1::MATH_IEEE_FP32, other));
    EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound) << none.status();
  }
  auto tuned = client_->ListTuned(v1::FAMILY_SGEMM);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  ASSERT_EQ(tuned->size(), 1u);
  EXPECT_EQ((*tuned)[0].layout(), v1::LAYOUT_NT);
  v1::Problem bad = nt;
  bad.set_layout(static_cast<v1::Layout>(7));
  auto refused = client_->GetBest(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "layout 7 is not supported by sgemm (supported: nn, nt, tn, tt)");
  auto transpose = client_->GetBest([] {
    v1::Problem p = TransposeProblem(64, 64);
    p.set_layout(v1::LAYOUT_TT);
    return p;
  }());
  EXPECT_EQ(transpose.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(transpose.status().message(),
            "layout LAYOUT_TT is not supported by transpose (supported: nn)");
}

// A 16-bit problem's epilogue is part of its key: its own best, served
// with the fused entry's arguments (the bias after C); fp32 problems and
// other families take none, with a message that says what they take.
TEST_F(ServiceTest, EpiloguesHaveTheirOwnBestsServedWithTheBiasArgument) {
  auto device_id = store_->UpsertDevice(worker_->device());
  ASSERT_TRUE(device_id.ok());
  v1::Problem gelu = SgemmProblem(64, 1000, 512, v1::MATH_IEEE_FP32, v1::LAYOUT_NT, v1::DTYPE_BF16);
  gelu.set_epilogue(v1::EPILOGUE_BIAS_GELU_TANH);
  auto job = store_->CreateJob(*device_id, gelu, 1, 0);
  ASSERT_TRUE(job.ok());
  const Family& form = *FindFamily(gelu);
  const Config config = form.InLayout({{"KIND", 1}, {"BM", 64}, {"BN", 64}, {"BK", 64}, {"WM", 32},
                                       {"WN", 32}, {"STAGES", 4}, {"GROUP", 8}},
                                      v1::LAYOUT_NT);
  v1::Measurement m;
  m.mutable_config()->set_name(form.ConfigName(config));
  m.mutable_config()->mutable_params()->insert(config.begin(), config.end());
  m.set_status(v1::MEASUREMENT_OK);
  m.set_median_ms(0.02);
  ASSERT_TRUE(store_->AddMeasurement(*job, m, &kBinary).ok());
  ASSERT_TRUE(store_->SetJobBaseline(*job, 0.03, 0, "cuBLASLt bf16 bias_gelu_tanh").ok());
  auto best = client_->GetBest(gelu);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->problem().epilogue(), v1::EPILOGUE_BIAS_GELU_TANH);
  EXPECT_EQ(best->measurement().config().name(), "gemm_bf16_mma_64x64x64_w32x32_s4_g8_b1_nt_bias_gelu");
  ASSERT_EQ(best->arguments_size(), 9);
  EXPECT_EQ(best->arguments(8), "const __nv_bfloat16* bias");
  EXPECT_EQ(best->geometry().grid(0), 16u);  // ceil(64 / 64) * ceil(1000 / 64) tiles
  // The same GEMM without the epilogue, or with another, has no best.
  for (v1::Epilogue other : {v1::EPILOGUE_NONE, v1::EPILOGUE_BIAS, v1::EPILOGUE_BIAS_GELU_ERF}) {
    v1::Problem p = gelu;
    p.set_epilogue(other);
    EXPECT_EQ(client_->GetBest(p).status().code(), absl::StatusCode::kNotFound) << other;
  }
  auto tuned = client_->ListTuned(v1::FAMILY_SGEMM);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  ASSERT_EQ(tuned->size(), 1u);
  EXPECT_EQ((*tuned)[0].epilogue(), v1::EPILOGUE_BIAS_GELU_TANH);

  v1::Problem f32 = SgemmProblem(64, 64, 64);
  f32.set_epilogue(v1::EPILOGUE_BIAS);
  v1::Problem epilogue9 = gelu;
  epilogue9.set_epilogue(static_cast<v1::Epilogue>(9));
  for (auto [problem, message] : {
           std::pair{f32, "epilogue EPILOGUE_BIAS is not supported by sgemm in dtype f32 (supported: none)"},
           {epilogue9, "epilogue 9 is not supported by sgemm in dtype bf16 (supported: none, bias, "
                       "bias_relu, bias_gelu_tanh, bias_gelu_erf)"}}) {
    auto refused = client_->SubmitSweep(problem);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(refused.status().message(), message);
  }
  auto jobs = client_->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 1u);  // the one made above
}

TEST_F(ServiceTest, MathModesHaveTheirOwnSweepsAndBests) {
  const Family& f = GemmFamily();
  const v1::Device d = worker_->device();
  auto device_id = store_->UpsertDevice(d);
  ASSERT_TRUE(device_id.ok());
  const v1::Problem accurate = SgemmProblem(1024, 1024, 1024, v1::MATH_FP32_ACCURATE);
  auto job = store_->CreateJob(*device_id, accurate, 1, 0);
  ASSERT_TRUE(job.ok());
  const Config config = f.ValidSpace(d, nullptr, v1::MATH_FP32_ACCURATE).front();
  ASSERT_GE(config.at("KIND"), 5);  // a tensor-core kind leads the space
  v1::Measurement m;
  m.mutable_config()->set_name(f.ConfigName(config));
  for (const auto& [k, v] : config) (*m.mutable_config()->mutable_params())[k] = v;
  m.set_status(v1::MEASUREMENT_OK);
  m.set_median_ms(0.02);
  m.set_error(1.5e-6);
  ASSERT_TRUE(store_->AddMeasurement(*job, m, &kBinary).ok());
  ASSERT_TRUE(store_->SetJobBaseline(*job, 0.06, 0, "cuBLAS fp32").ok());
  ASSERT_TRUE(store_->SetJobErrorBound(*job, 2e-6, 4e-6).ok());

  auto best = client_->GetBest(accurate);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->match(), v1::MATCH_EXACT);
  EXPECT_EQ(best->problem().math(), v1::MATH_FP32_ACCURATE);
  EXPECT_EQ(best->measurement().config().name(), f.ConfigName(config));
  EXPECT_DOUBLE_EQ(best->baseline_error(), 2e-6);
  auto near = client_->GetBest(SgemmProblem(1000, 1000, 1000, v1::MATH_FP32_ACCURATE));
  ASSERT_TRUE(near.ok()) << near.status();
  EXPECT_EQ(near->match(), v1::MATCH_NEAREST);
  // Neither ieee_fp32 nor tf32 has a kernel for it, nor near it.
  for (v1::Math other : {v1::MATH_IEEE_FP32, v1::MATH_TF32}) {
    auto none = client_->GetBest(SgemmProblem(1024, 1024, 1024, other));
    EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound) << none.status();
  }
  auto tuned = client_->ListTuned(v1::FAMILY_SGEMM);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  ASSERT_EQ(tuned->size(), 1u);
  EXPECT_EQ((*tuned)[0].math(), v1::MATH_FP32_ACCURATE);
  auto ms = client_->ListMeasurements(accurate);
  ASSERT_TRUE(ms.ok());
  ASSERT_EQ(ms->size(), 1u);
  EXPECT_DOUBLE_EQ((*ms)[0].error(), 1.5e-6);
  EXPECT_TRUE(client_->ListMeasurements(SgemmProblem(1024, 1024, 1024))->empty());
}

// What GetBest serves comes from the stored judging (core/serving.h): the
// kernel only with >= 30 pairs and an interval above 1.0; cuBLAS otherwise,
// saying why; rows without an interval keep the margin rule.
TEST_F(ServiceTest, GetBestServesTheKernelOnlyWhenItsIntervalIsAboveOne) {
  auto device_id = store_->UpsertDevice(worker_->device());
  ASSERT_TRUE(device_id.ok());
  const Family& f = GemmFamily();
  const Config config = f.ValidSpace(worker_->device(), nullptr).back();
  // One tuned shape per case: kernel 1.0 ms, cuBLAS 1.07 ms.
  auto tuned = [&](int64_t m, const std::optional<StoredSpeedup>& judged) {
    auto job = store_->CreateJob(*device_id, SgemmProblem(m, 512, 512), 1, 0);
    EXPECT_TRUE(job.ok());
    v1::Measurement meas;
    meas.mutable_config()->set_name(f.ConfigName(config));
    for (const auto& [k, v] : config) (*meas.mutable_config()->mutable_params())[k] = v;
    meas.set_status(v1::MEASUREMENT_OK);
    meas.set_median_ms(1.0);
    EXPECT_TRUE(store_->AddMeasurement(*job, meas, &kBinary).ok());
    EXPECT_TRUE(store_->SetJobBaseline(*job, 1.07, 0, "cuBLAS").ok());
    if (judged) {
      EXPECT_TRUE(store_->SetSpeedup(*job, meas.config().name(), *judged).ok());
    }
    auto best = client_->GetBest(SgemmProblem(m, 512, 512));
    EXPECT_TRUE(best.ok()) << best.status();
    return best.ok() ? *best : v1::BestKernel();
  };
  auto interval = [](double low, double high, int pairs) {
    StoredSpeedup s;
    s.speedup = 1.07;
    s.ci_low = low;
    s.ci_high = high;
    s.pairs = pairs;
    s.sm_clock_mhz = 1980;
    return s;
  };
  const v1::BestKernel sure = tuned(128, interval(1.05, 1.09, 30));
  EXPECT_FALSE(sure.use_baseline()) << sure.serving_reason();
  EXPECT_DOUBLE_EQ(sure.speedup(), 1.07);
  EXPECT_DOUBLE_EQ(sure.speedup_ci_low(), 1.05);
  EXPECT_DOUBLE_EQ(sure.speedup_ci_high(), 1.09);
  EXPECT_EQ(sure.speedup_pairs(), 30);
  EXPECT_EQ(sure.measurement().sm_clock_mhz(), 1980);
  EXPECT_NE(sure.serving_reason().find("surely faster"), std::string::npos) << sure.serving_reason();

  const v1::BestKernel unsure = tuned(129, interval(0.99, 1.12, 40));
  EXPECT_TRUE(unsure.use_baseline());
  EXPECT_NE(unsure.serving_reason().find("not surely faster"), std::string::npos) << unsure.serving_reason();

  const v1::BestKernel few = tuned(130, interval(1.05, 1.09, 20));
  EXPECT_TRUE(few.use_baseline());
  EXPECT_EQ(few.speedup_pairs(), 20);

  StoredSpeedup low;
  low.note = "the SM clock sat at 1155 MHz, under 90% of its 1980 MHz";
  low.sm_clock_mhz = 1155;
  low.clock_low = true;
  const v1::BestKernel down = tuned(131, low);
  EXPECT_TRUE(down.use_baseline());
  EXPECT_EQ(down.speedup_pairs(), 0);
  EXPECT_TRUE(down.measurement().clock_low());
  EXPECT_NE(down.serving_reason().find("1155 MHz"), std::string::npos) << down.serving_reason();

  // No interval (an older database): 1.07x is under the 1.15x margin.
  const v1::BestKernel legacy = tuned(132, std::nullopt);
  EXPECT_TRUE(legacy.use_baseline());
  EXPECT_EQ(legacy.speedup_pairs(), 0);
  EXPECT_NE(legacy.serving_reason().find("no interval"), std::string::npos) << legacy.serving_reason();

  // An import keeps the interval it was judged with (dump, then import).
  v1::BestKernel exported = sure;
  *exported.mutable_problem() = SgemmProblem(256, 512, 512);
  exported.set_cubin(kBinary.cubin);
  auto imported = client_->ImportKernel(exported);
  ASSERT_TRUE(imported.ok()) << imported.status();
  auto again = client_->GetBest(SgemmProblem(256, 512, 512));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->use_baseline()) << again->serving_reason();
  EXPECT_EQ(again->speedup_pairs(), 30);
  EXPECT_DOUBLE_EQ(again->speedup_ci_low(), 1.05);
}

// A shape none of whose configs passed verification, in a DONE job that
// timed the baseline (server/jobs/jobs.cc Finish; end to end: no_kernel_test):
// GetBest serves the baseline with no kernel for that shape, and a near
// shape gets the nearest shape that has a kernel, never it. A family whose
// baseline is no candidate has nothing to serve.
TEST_F(ServiceTest, GetBestServesTheBaselineWhereNoConfigPassedVerification) {
  auto device_id = store_->UpsertDevice(worker_->device());
  ASSERT_TRUE(device_id.ok());
  const Family& f = GemmFamily();
  const Config config = f.ValidSpace(worker_->device(), nullptr, v1::MATH_TF32).front();
  v1::Measurement m;
  m.mutable_config()->set_name(f.ConfigName(config));
  for (const auto& [k, v] : config) (*m.mutable_config()->mutable_params())[k] = v;
  m.set_status(v1::MEASUREMENT_OK);
  m.set_median_ms(0.5);
  auto kernel_job = store_->CreateJob(*device_id, SgemmProblem(1024, 1024, 1024, v1::MATH_TF32), 1, 0);
  ASSERT_TRUE(kernel_job.ok());
  ASSERT_TRUE(store_->AddMeasurement(*kernel_job, m, &kBinary).ok());
  ASSERT_TRUE(store_->SetJobBaseline(*kernel_job, 0.6, 0, "cuBLAS TF32").ok());

  // Every config of 1000^3 wrong: DONE with the baseline.
  const v1::Problem none = SgemmProblem(1000, 1000, 1000, v1::MATH_TF32);
  auto job = store_->CreateJob(*device_id, none, 1, 0);
  ASSERT_TRUE(job.ok());
  m.set_status(v1::MEASUREMENT_WRONG_ANSWER);
  ASSERT_TRUE(store_->AddMeasurement(*job, m, &kBinary).ok());
  ASSERT_TRUE(store_->SetJobBaseline(*job, 0.4, 5000, "cuBLAS TF32").ok());
  ASSERT_TRUE(store_->SetJobErrorBound(*job, 3e-7, 6e-7).ok());
  // (The runner may be at it too, compile-only: either ends it DONE.)
  ASSERT_TRUE(store_->FinishJob(*job, v1::JOB_DONE, "no config passed verification; ...").ok());

  auto best = client_->GetBest(none);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->match(), v1::MATCH_EXACT);
  EXPECT_TRUE(best->use_baseline());
  EXPECT_FALSE(best->has_measurement());
  EXPECT_TRUE(best->cubin().empty());
  EXPECT_FALSE(best->has_geometry());
  EXPECT_DOUBLE_EQ(best->baseline_ms(), 0.4);
  EXPECT_NEAR(best->baseline_metric(), 2e9 / (0.4 * 1e6), 1e-6);
  EXPECT_DOUBLE_EQ(best->baseline_error(), 3e-7);
  EXPECT_EQ(best->serving_reason(),
            "cuBLAS TF32: no kernel passed verification (every config of job " + std::to_string(*job) +
                " failed; its measurements say why)");

  auto near = client_->GetBest(SgemmProblem(1001, 1000, 1000, v1::MATH_TF32));
  ASSERT_TRUE(near.ok()) << near.status();
  EXPECT_EQ(near->match(), v1::MATCH_NEAREST);
  EXPECT_EQ(std::vector<int64_t>(near->tuned_shape().begin(), near->tuned_shape().end()),
            (std::vector<int64_t>{1024, 1024, 1024}));
  EXPECT_TRUE(near->has_measurement());

  // transpose: its copy kernel is no answer (this build's runner fails such
  // a job; a DONE one, as an older or foreign row, serves nothing).
  auto t = store_->CreateJob(*device_id, TransposeProblem(640, 480), 1, 0);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(store_->SetJobBaseline(*t, 0.01, 0, "copy kernel").ok());
  ASSERT_TRUE(store_->FinishJob(*t, v1::JOB_DONE).ok());
  auto copy = client_->GetBest(TransposeProblem(640, 480));
  EXPECT_EQ(copy.status().code(), absl::StatusCode::kNotFound) << copy.status();
}

// dump/import: ListTuned lists what GetBest serves; a kernel from the same
// device kind imports as a finished job; another device kind is refused.
TEST_F(ServiceTest, ListTunedAndImportKernel) {
  auto none = client_->ListTuned();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  const Family& f = GemmFamily();
  const Config config = f.ValidSpace(worker_->device(), nullptr).front();
  v1::BestKernel k;
  *k.mutable_problem() = SgemmProblem(512, 512, 512);
  *k.mutable_device() = worker_->device();
  k.mutable_measurement()->set_status(v1::MEASUREMENT_OK);
  k.mutable_measurement()->set_median_ms(0.02);
  for (const auto& [key, v] : config) (*k.mutable_measurement()->mutable_config()->mutable_params())[key] = v;
  k.set_cubin("cubin");
  k.set_entry("_Z1k");
  k.set_baseline_ms(0.03);
  k.set_baseline_name("cuBLAS");

  v1::BestKernel other = k;
  other.mutable_device()->set_cc_major(8);
  EXPECT_EQ(client_->ImportKernel(other).status().code(), absl::StatusCode::kFailedPrecondition);
  v1::BestKernel bad = k;
  (*bad.mutable_measurement()->mutable_config()->mutable_params())["BM"] = 7;
  EXPECT_EQ(client_->ImportKernel(bad).status().code(), absl::StatusCode::kInvalidArgument);
  v1::BestKernel no_cubin = k;
  no_cubin.clear_cubin();
  EXPECT_EQ(client_->ImportKernel(no_cubin).status().code(), absl::StatusCode::kInvalidArgument);
  // Numbers that `best` would serve and compare as they are: finite, in range.
  const auto refused = [&](const std::string& what, const std::function<void(v1::BestKernel*)>& spoil) {
    v1::BestKernel b = k;
    spoil(&b);
    auto imported = client_->ImportKernel(b);
    EXPECT_EQ(imported.status().code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_NE(imported.status().message().find(what), std::string::npos) << imported.status();
  };
  refused("median_ms", [](v1::BestKernel* b) { b->mutable_measurement()->set_median_ms(INFINITY); });
  refused("baseline_ms", [](v1::BestKernel* b) { b->set_baseline_ms(-1); });
  refused("baseline_metric", [](v1::BestKernel* b) { b->set_baseline_metric(NAN); });
  refused("measurement.error", [](v1::BestKernel* b) { b->mutable_measurement()->set_error(-0.5); });
  refused("speedup_pairs", [](v1::BestKernel* b) { b->set_speedup_pairs(-3); });
  refused("speedup_ci_low <= speedup", [](v1::BestKernel* b) {
    b->set_speedup_pairs(20);
    b->set_speedup(1.5);
    b->set_speedup_ci_low(1.6);
    b->set_speedup_ci_high(1.7);
  });
  // No refused import left a job behind.
  EXPECT_TRUE(client_->ListJobs()->empty());

  auto job = client_->ImportKernel(k);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_DONE);
  EXPECT_EQ(job->done(), 1);
  auto tuned = client_->ListTuned(v1::FAMILY_SGEMM);
  ASSERT_TRUE(tuned.ok());
  ASSERT_EQ(tuned->size(), 1u);
  EXPECT_EQ(tuned->front().SerializeAsString(), SgemmProblem(512, 512, 512).SerializeAsString());
  auto best = client_->GetBest(SgemmProblem(512, 512, 512));
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->match(), v1::MATCH_EXACT);
  EXPECT_EQ(best->measurement().config().name(), f.ConfigName(config));
  EXPECT_EQ(best->cubin(), "cubin");
  EXPECT_DOUBLE_EQ(best->baseline_ms(), 0.03);
  EXPECT_TRUE(client_->ListTuned(v1::FAMILY_TRANSPOSE)->empty());
  // A family number this daemon does not know is no empty list.
  auto unknown = client_->ListTuned(static_cast<v1::Family>(77));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("unknown kernel family 77"), std::string::npos) << unknown.status();

  // GetBest answers from memory until the best changes: a faster import
  // is served at once, in the basic and the full view, exact and nearest.
  auto nearest = client_->GetBest(SgemmProblem(512, 512, 500));
  ASSERT_TRUE(nearest.ok()) << nearest.status();
  EXPECT_EQ(nearest->match(), v1::MATCH_NEAREST);
  v1::BestKernel faster = k;
  faster.mutable_measurement()->set_median_ms(0.01);
  faster.set_cubin("faster cubin");
  ASSERT_TRUE(client_->ImportKernel(faster).ok());
  auto stub = v1::Tuner::NewStub(
      grpc::CreateChannel("unix:" + (dir_ / "t.sock").string(), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 2; ++i) {  // the first answer is built, the second held
    auto full = client_->GetBest(SgemmProblem(512, 512, 512));
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_EQ(full->cubin(), "faster cubin");
    EXPECT_DOUBLE_EQ(full->measurement().median_ms(), 0.01);
    v1::GetBestRequest request;
    *request.mutable_problem() = SgemmProblem(512, 512, 512);
    request.set_view(v1::BEST_VIEW_BASIC);
    v1::BestKernel basic;
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->GetBest(&ctx, request, &basic).ok());
    EXPECT_TRUE(basic.cubin().empty());
    EXPECT_EQ(basic.entry(), "_Z1k");
    EXPECT_DOUBLE_EQ(basic.measurement().median_ms(), 0.01);
    auto near = client_->GetBest(SgemmProblem(512, 512, 500));
    ASSERT_TRUE(near.ok()) << near.status();
    EXPECT_EQ(near->match(), v1::MATCH_NEAREST);
    EXPECT_EQ(near->cubin(), "faster cubin");
  }
}

TEST(BestAnswers, HoldsAnAnswerWhileItsRowAndItsGenerationsHold) {
  BestAnswers answers;
  auto row = std::make_shared<char>(0);  // a held row's token (BestRow::held)
  auto answer = [](const std::string& bytes, const std::shared_ptr<char>& token) {
    return BestAnswers::Answer{.bytes = grpc::Slice(bytes), .row = token};
  };
  auto text = [](const std::optional<BestAnswers::Answer>& a) {
    return a ? std::string(reinterpret_cast<const char*>(a->bytes.begin()), a->bytes.size()) : "none";
  };
  answers.Add("q1", {.bytes = grpc::Slice("a1"), .nearest = true, .row = row});
  EXPECT_EQ(text(answers.Find("q1", {3, 1})), "a1");
  EXPECT_TRUE(answers.Find("q1", {3, 1})->nearest);
  EXPECT_EQ(text(answers.Find("q2", {3, 1})), "none");
  EXPECT_EQ(text(answers.Find("q1", {4, 2})), "a1");  // another best or spec changed: not its own
  // A nearest shape's answer holds at its bests' generation, a spec's name
  // at its specs' generation.
  answers.Add("q2", {.bytes = grpc::Slice("near"), .nearest = true, .row = row, .best_generation = 3});
  EXPECT_EQ(text(answers.Find("q2", {3, 7})), "near");
  EXPECT_EQ(text(answers.Find("q2", {4, 7})), "none");
  answers.Add("q3", {.bytes = grpc::Slice("spec"), .row = row, .spec_generation = 5});
  EXPECT_EQ(text(answers.Find("q3", {9, 5})), "spec");
  EXPECT_EQ(text(answers.Find("q3", {9, 6})), "none");
  answers.Add("q1", answer("a1 again", row));  // replaces the held one
  EXPECT_EQ(text(answers.Find("q1", {4, 2})), "a1 again");
  row.reset();  // the store replaced the row: none of its answers holds
  EXPECT_EQ(text(answers.Find("q1", {4, 2})), "none");
  EXPECT_EQ(text(answers.Find("q3", {9, 5})), "none");
  auto other = std::make_shared<char>(0);
  answers.Add("q4", answer("a4", other));
  for (size_t i = 0; i < BestAnswers::kMaxAnswers; ++i) answers.Add(std::to_string(i), answer("x", other));
  EXPECT_EQ(text(answers.Find("q4", {})), "none");  // full: emptied before the last was added
  EXPECT_EQ(text(answers.Find(std::to_string(BestAnswers::kMaxAnswers - 1), {})), "x");
}

// A view of GetBest that does not exist is refused, not read as the full one.
TEST_F(ServiceTest, AnUnknownViewIsInvalidArgument) {
  auto stub = v1::Tuner::NewStub(grpc::CreateChannel("unix:" + (dir_ / "t.sock").string(),
                                                     grpc::InsecureChannelCredentials()));
  v1::GetBestRequest get;
  *get.mutable_problem() = SgemmProblem(64, 64, 64);
  get.set_view(static_cast<v1::BestView>(9));
  v1::BestKernel best;
  grpc::ClientContext c1;
  const grpc::Status s = stub->GetBest(&c1, get, &best);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("unknown view 9"), std::string::npos) << s.error_message();
}

}  // namespace
}  // namespace tuned
