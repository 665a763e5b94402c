// The GPU worker's logic, independent of the pipe: prepare a problem, then
// compile, verify and time candidates on it. GPU tests drive it directly.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "server/families/family.h"
#include "server/worker/compiler.h"
#include "server/worker/gpu.h"
#include "server/worker/problem.h"
#include "tuned/v1/worker.pb.h"

namespace tuned {

namespace worker = v1::worker;

/// Time spent timing one candidate, in ms of GPU time (sets the repetitions).
inline constexpr double kTimingBudgetMs = 200.0;

class Worker {
 public:
  /// Opens GPU `gpu`. With `compile_only`, touches no CUDA at all and
  /// describes Sm90ReferenceDevice() (with `memory_bytes` of memory if > 0):
  /// candidates are compiled, never run (fault_test kernels are simulated:
  /// SimulateFaultTest); `arch` (e.g. 90 for sm_90) then sets the compute
  /// capability compiled for, if > 0.
  static absl::StatusOr<std::unique_ptr<Worker>> Create(int gpu, bool compile_only,
                                                        int64_t memory_bytes = 0, int arch = 0);
  ~Worker();

  const v1::Device& device() const { return device_; }

  /// Allocates and fills the problem's buffers, computes the reference and
  /// times the baseline with the same method as the candidates.
  absl::StatusOr<worker::PrepareResult> Prepare(const worker::Prepare& request);

  /// Compiles the kernel for the device, loads it, runs it once on a poisoned
  /// output and checks it against the reference, then times it: 1 warm-up,
  /// repetitions = clamp(kTimingBudgetMs / first time, 5, 100) (just the
  /// first run if it is over 20x slower than `best_ms`), L2 flushed before each, median of
  /// per-repetition CUDA events. Failures come back as statuses, not errors.
  worker::MeasureResult Measure(const worker::Measure& request);
  /// Compiles the kernels in parallel on all CPU cores; one result per
  /// kernel, COMPILED or COMPILE_ERROR.
  worker::CompileResult CompileBatch(const worker::Compile& request);

  /// The part of Measure after compiling; `time` false only verifies.
  worker::MeasureResult MeasureCompiled(const CompiledKernel& compiled,
                                        const v1::LaunchGeometry& geometry, double best_ms,
                                        bool time = true);

  /// One pipe request; sets Response.error when the request failed as a whole.
  worker::Response Handle(const worker::Request& request);

  /// True once a CUDA error left the context unusable: the process must exit.
  bool broken() const { return broken_; }

 private:
  Worker() = default;
  std::string Arch() const;
  /// Times `run` with warm-up, adaptive repetitions and L2 flushes.
  absl::StatusOr<std::pair<double, int>> Time(const std::function<absl::Status(cudaStream_t)>& run,
                                              double best_ms);

  v1::Device device_;
  bool compile_only_ = false;
  bool broken_ = false;
  cudaStream_t stream_ = nullptr;
  std::optional<L2Flusher> flusher_;
  std::unique_ptr<DeviceProblem> problem_;
  v1::Family prepared_family_ = v1::FAMILY_UNSPECIFIED;
  Shape prepared_shape_;
};

}  // namespace tuned
