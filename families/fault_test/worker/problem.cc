// The fault_test family on the device (test-only): random in, out = 2 * in + 1
// checked exactly, cudaMemcpy as the baseline. In compile-only mode (no GPU),
// SimulateFaultTest stands in for the run so that the daemon's fault handling
// is exercised by a process that really exits, hangs or answers wrongly.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/worker/buffers.h"
#include "server/worker/problem.h"

namespace tuned {
namespace {

class FaultTestProblem final : public DeviceProblem {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceProblem>> Create(const Shape& shape, uint64_t seed) {
    auto p = std::unique_ptr<FaultTestProblem>(new FaultTestProblem());
    p->n_ = static_cast<int>(shape[0]);
    for (DeviceBuffer* buf : {&p->in_, &p->out_}) {
      auto b = DeviceBuffer::Alloc(size_t(p->n_) * sizeof(float));
      if (!b.ok()) return b.status();
      *buf = *std::move(b);
    }
    TUNED_RETURN_IF_ERROR(FillRandom(p->in_, size_t(p->n_), seed));
    auto in = CopyToHost(p->in_, size_t(p->n_));
    if (!in.ok()) return in.status();
    p->expected_.resize(in->size());
    for (size_t i = 0; i < in->size(); ++i) p->expected_[i] = 2.f * (*in)[i] + 1.f;
    p->in_ptr_ = p->in_.f32();
    p->out_ptr_ = p->out_.f32();
    p->args_ = {&p->n_, &p->in_ptr_, &p->out_ptr_};
    return std::unique_ptr<DeviceProblem>(std::move(p));
  }

  /// (int n, const float* in, float* out).
  std::vector<void*>& KernelArgs() override { return args_; }

  absl::Status PoisonOutput(cudaStream_t stream) override {
    TUNED_CUDA(cudaMemsetAsync(out_.get(), 0xff, out_.bytes(), stream));  // NaN
    return absl::OkStatus();
  }

  /// Elements that differ bitwise from 2 * in + 1 (fp32 computes it exactly
  /// the same way on host and device: one multiply by 2, one add).
  absl::StatusOr<double> CheckOutput(cudaStream_t stream) override {
    TUNED_CUDA(cudaStreamSynchronize(stream));
    auto out = CopyToHost(out_, expected_.size());
    if (!out.ok()) return out.status();
    return static_cast<double>(BitMismatches(*out, expected_));
  }

  double Tolerance() const override { return 0; }

  /// A device-to-device copy of in to out (a yardstick only).
  absl::Status RunBaseline(cudaStream_t stream) override {
    TUNED_CUDA(cudaMemcpyAsync(out_.get(), in_.get(), out_.bytes(), cudaMemcpyDeviceToDevice, stream));
    return absl::OkStatus();
  }

  std::string BaselineName() const override { return "cudaMemcpy"; }

 private:
  FaultTestProblem() = default;

  int n_ = 0;
  DeviceBuffer in_, out_;
  const float* in_ptr_ = nullptr;
  float* out_ptr_ = nullptr;
  std::vector<void*> args_;
  std::vector<float> expected_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeFaultTestProblem(const v1::worker::Prepare& request,
                                                                    const v1::Device& device) {
  const Shape shape(request.problem().shape().begin(), request.problem().shape().end());
  TUNED_RETURN_IF_ERROR(FaultTestFamily().ValidateProblem(shape, device));
  return FaultTestProblem::Create(shape, request.seed());
}

v1::worker::MeasureResult SimulateFaultTest(const v1::worker::Kernel& kernel, const Shape& shape,
                                            bool* exit_after) {
  // "fault_test<BEHAVIOR,WORK,BLOCK>"
  std::vector<int64_t> args;
  const std::string expr = kernel.name_expression();
  const size_t open = expr.find('<'), close = expr.rfind('>');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    for (absl::string_view a : absl::StrSplit(expr.substr(open + 1, close - open - 1), ',')) {
      int64_t v = 0;
      if (absl::SimpleAtoi(a, &v)) args.push_back(v);
    }
  }
  v1::worker::MeasureResult r;
  if (args.size() != 3) {
    r.set_status(v1::MEASUREMENT_LAUNCH_ERROR);
    r.set_message(absl::StrCat("simulation: cannot parse ", expr));
    return r;
  }
  const int64_t behavior = args[0], work = args[1];
  switch (behavior) {
    case 1:
      r.set_status(v1::MEASUREMENT_WRONG_ANSWER);
      r.set_error(static_cast<double>(shape[0]));
      r.set_message("simulated: every element wrong");
      return r;
    case 2:
      r.set_status(v1::MEASUREMENT_DEVICE_FAULT);
      r.set_message("simulated: an illegal memory access was encountered");
      *exit_after = true;
      return r;
    case 3:
      while (true) std::this_thread::sleep_for(std::chrono::hours(1));  // killed by the daemon
    case 4:
      r.set_status(v1::MEASUREMENT_LAUNCH_ERROR);
      r.set_message("simulated: invalid argument (2048 threads per block)");
      return r;
    default: {
      // An ok run: sleeps as long as a real one would roughly take, WORK * N / 2^20 ms.
      const double ms = std::min(1000.0, static_cast<double>(work * shape[0]) / (1 << 20));
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
      r.set_status(v1::MEASUREMENT_COMPILED);
      return r;
    }
  }
}

}  // namespace tuned
