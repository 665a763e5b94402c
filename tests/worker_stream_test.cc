// The streamed compile of the worker protocol (Compile.stream) against the
// real `tuned-worker --compile-only` process, through WorkerClient: one
// message per kernel as each is compiled, then the final one; what came
// before a timeout stays delivered. And a Measure given its compiled kernel
// does not send the code back.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/worker_client.h"

namespace tuned {
namespace {

using Clock = std::chrono::steady_clock;

// A kernel whose compile time grows with UNROLL (NVRTC unrolls the loop):
// 1 compiles in a fraction of a second, 1 << 23 takes minutes.
constexpr const char* kSource = R"(
template <int UNROLL>
__global__ void unrolled(int n, const float* in, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < UNROLL; ++k) s += in[(i + k) % n] * k;
  out[i] = s;
}
)";

v1::worker::Kernel Unrolled(int unroll) {
  v1::worker::Kernel k;
  k.set_name("unrolled_" + std::to_string(unroll));
  k.set_source(kSource);
  k.set_name_expression("unrolled<" + std::to_string(unroll) + ">");
  return k;
}

/// A partial answer and when it came (seconds after the request).
struct Partial {
  int index = -1;
  v1::MeasurementStatus status = v1::MEASUREMENT_STATUS_UNSPECIFIED;
  double seconds = 0;
};

class WorkerStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto compiler = WorkerClient::Start(TUNED_WORKER_PATH, {"--compile-only", "--arch", "90"},
                                        "compiler");
    ASSERT_TRUE(compiler.ok()) << compiler.status();
    compiler_ = *std::move(compiler);
  }

  /// Sends a streamed compile of `kernels`; the partial answers in the order
  /// they came, into `partials`.
  absl::StatusOr<v1::worker::Response> Stream(const std::vector<v1::worker::Kernel>& kernels,
                                              absl::Duration timeout,
                                              std::vector<Partial>* partials) {
    v1::worker::Request request;
    for (const auto& k : kernels) *request.mutable_compile()->add_kernels() = k;
    request.mutable_compile()->set_stream(true);
    const auto start = Clock::now();
    return compiler_->CallStreaming(request, timeout, [&](const v1::worker::CompiledOne& one) {
      partials->push_back({one.index(), one.result().status(),
                           std::chrono::duration<double>(Clock::now() - start).count()});
    });
  }

  std::unique_ptr<WorkerClient> compiler_;
};

// Five quick kernels, then a slow one: each kernel's result comes as it is
// compiled, the quick ones well before the slow one, and the final message
// after them all.
TEST_F(WorkerStreamTest, EachKernelComesAsItIsCompiledThenTheFinalMessage) {
  std::vector<v1::worker::Kernel> kernels;
  for (int i = 1; i <= 5; ++i) kernels.push_back(Unrolled(i));
  kernels.push_back(Unrolled(1 << 9));
  std::vector<Partial> partials;
  const auto start = Clock::now();
  auto response = Stream(kernels, absl::Minutes(5), &partials);
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->error().empty()) << response->error();
  ASSERT_TRUE(response->has_compiled());
  EXPECT_EQ(response->compiled().results_size(), 0);  // each came in its own message
  EXPECT_EQ(response->compiled().streamed(), 6);
  ASSERT_EQ(partials.size(), 6u);
  std::map<int, int> seen;
  for (const Partial& p : partials) {
    ++seen[p.index];
    EXPECT_EQ(v1::MeasurementStatus_Name(p.status), "MEASUREMENT_COMPILED") << p.index;
  }
  for (int i = 0; i < 6; ++i) EXPECT_EQ(seen[i], 1) << "kernel " << i;
  // The slow kernel, last in the request, is the last to come; the first
  // comes in a small part of the call's time.
  EXPECT_EQ(partials.back().index, 5);
  const double slow = partials.back().seconds;
  std::printf("first result after %.2f s, the fifth quick one after %.2f s, the slow one after "
              "%.2f s; the call took %.2f s\n",
              partials.front().seconds, partials[4].seconds, slow, total);
  EXPECT_GT(slow, 1.0) << "the slow kernel compiled too fast to tell the order";
  EXPECT_LT(partials.front().seconds, slow / 2);
  EXPECT_LT(partials[4].seconds, slow);
}

// A compile that hangs after quick ones: the quick ones are delivered, then
// the call's limit kills the worker (DEADLINE_EXCEEDED); Restart brings it
// back, and a plain (not streamed) compile answers every kernel at once.
TEST_F(WorkerStreamTest, WhatCameBeforeATimeoutStaysDelivered) {
  std::vector<v1::worker::Kernel> kernels = {Unrolled(1), Unrolled(2), Unrolled(3),
                                             Unrolled(1 << 23)};
  std::vector<Partial> partials;
  auto response = Stream(kernels, absl::Seconds(10), &partials);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kDeadlineExceeded) << response.status();
  EXPECT_FALSE(compiler_->alive());
  ASSERT_EQ(partials.size(), 3u);
  std::map<int, int> seen;
  for (const Partial& p : partials) ++seen[p.index];
  EXPECT_EQ(seen, (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}}));

  ASSERT_TRUE(compiler_->Restart().ok());
  v1::worker::Request request;
  for (int i = 1; i <= 3; ++i) *request.mutable_compile()->add_kernels() = Unrolled(i);
  auto plain = compiler_->Call(request, absl::Minutes(2));
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_EQ(plain->compiled().results_size(), 3);
  EXPECT_EQ(plain->compiled().streamed(), 0);
  for (const auto& r : plain->compiled().results()) {
    EXPECT_EQ(v1::MeasurementStatus_Name(r.status()), "MEASUREMENT_COMPILED");
  }
}

// A Measure that carries its compiled kernel (what the daemon sends) is
// answered without the cubin and PTX that it sent; one without compiles the
// kernel and answers with its code.
TEST_F(WorkerStreamTest, AMeasureGivenItsCubinDoesNotSendItBack) {
  v1::worker::Request compile;
  *compile.mutable_compile()->add_kernels() = Unrolled(2);
  auto compiled = compiler_->Call(compile, absl::Minutes(2));
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->compiled().results_size(), 1);
  const v1::worker::MeasureResult& code = compiled->compiled().results(0);
  ASSERT_EQ(v1::MeasurementStatus_Name(code.status()), "MEASUREMENT_COMPILED");
  ASSERT_FALSE(code.cubin().empty());

  v1::worker::Request given;
  *given.mutable_measure()->mutable_kernel() = Unrolled(2);
  *given.mutable_measure()->mutable_compiled() = code;
  auto measured = compiler_->Call(given, absl::Minutes(2));
  ASSERT_TRUE(measured.ok()) << measured.status();
  ASSERT_TRUE(measured->error().empty()) << measured->error();
  EXPECT_EQ(v1::MeasurementStatus_Name(measured->measured().status()), "MEASUREMENT_COMPILED");
  EXPECT_TRUE(measured->measured().cubin().empty());
  EXPECT_TRUE(measured->measured().ptx().empty());
  EXPECT_EQ(measured->measured().entry(), code.entry());
  EXPECT_EQ(measured->measured().registers(), code.registers());

  v1::worker::Request fresh;
  *fresh.mutable_measure()->mutable_kernel() = Unrolled(2);
  auto compiled_here = compiler_->Call(fresh, absl::Minutes(2));
  ASSERT_TRUE(compiled_here.ok()) << compiled_here.status();
  EXPECT_FALSE(compiled_here->measured().cubin().empty());
  EXPECT_EQ(compiled_here->measured().entry(), code.entry());
}

// A worker that dies during a streamed compile: UNAVAILABLE, as for Call.
TEST_F(WorkerStreamTest, ADeathDuringTheStreamIsUnavailable) {
  std::vector<v1::worker::Kernel> kernels = {Unrolled(1), Unrolled(1 << 23)};
  std::vector<Partial> partials;
  v1::worker::Request request;
  for (const auto& k : kernels) *request.mutable_compile()->add_kernels() = k;
  request.mutable_compile()->set_stream(true);
  std::thread killer([this] {
    std::this_thread::sleep_for(std::chrono::seconds(4));
    compiler_->Interrupt();
  });
  auto response = compiler_->CallStreaming(request, absl::Minutes(2),
                                           [&](const v1::worker::CompiledOne& one) {
                                             partials.push_back({one.index(), one.result().status()});
                                           });
  killer.join();
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable) << response.status();
  EXPECT_FALSE(compiler_->alive());
  ASSERT_EQ(partials.size(), 1u);
  EXPECT_EQ(partials[0].index, 0);
}

}  // namespace
}  // namespace tuned
