// The GPU worker's logic, independent of the pipe: prepare a problem, then
// compile, verify and time candidates on it. GPU tests drive it directly.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "families/family.h"
#include "server/worker/clock.h"
#include "server/worker/compiler.h"
#include "server/worker/gpu.h"
#include "server/worker/problem.h"
#include "server/common/timing.h"
#include "tuned/v1/worker.pb.h"

namespace tuned {

namespace worker = v1::worker;

/// Rounds of the end-of-job re-timing (RetimeTogether): clamp(kTimingBudgetMs
/// x kernels / (baseline ms x (kernels + 1)), kRetimeMinRounds, kRetimeMaxRounds).
/// At least 30: the serving rule (core/serving.h, kMinServingPairs) needs
/// 30 pairs before it serves a kernel.
inline constexpr int kRetimeMinRounds = 30;
inline constexpr int kRetimeMaxRounds = 100;
/// Untimed rounds before RetimeTogether's timed ones (a fresh process's GPU
/// ramps its clock up under load).
inline constexpr int kRetimeWarmupRounds = 3;
/// A timing whose SM clock sat low (ClockLow) is re-timed once after this pause.
inline constexpr int kLowClockPauseMs = 200;

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

  /// Allocates and fills the buffers of the problem `request` names
  /// (PreparedProblem), computes the reference and times the baseline with
  /// the same method as the candidates.
  absl::StatusOr<worker::PrepareResult> Prepare(const worker::Prepare& request);

  /// Compiles the kernel for the device, loads it, runs it once on a poisoned
  /// output (timed: the verification run, which also warms up) and checks it
  /// against the reference, then times it (Time: L2 flushed before each
  /// repetition, median of per-repetition CUDA events, fewer repetitions for
  /// candidates clearly slower than `best_ms`). The job's top few are
  /// re-timed together at its end (RetimeTogether). Failures come back as
  /// statuses, not errors.
  worker::MeasureResult Measure(const worker::Measure& request);
  /// Compiles the kernels in parallel on all CPU cores; one result per
  /// kernel, COMPILED or COMPILE_ERROR (the daemon caches them: each kernel
  /// is compiled once).
  worker::CompileResult CompileBatch(const worker::Compile& request);
  /// Writes one partial answer of a streamed request to the daemon; errors:
  /// the pipe's (UNAVAILABLE: the daemon is gone).
  using Emit = std::function<absl::Status(const worker::Response&)>;
  /// CompileBatch for a request with Compile.stream: each kernel's result
  /// goes to `emit` as a Response with compiled_one as soon as it is
  /// compiled, kernels taken in their order (one call at a time); returns
  /// the final answer (no results; streamed = the messages emitted), or the
  /// first error of `emit` (the compiles still run to their end; nothing is
  /// emitted after it).
  absl::StatusOr<worker::CompileResult> CompileStreamed(const worker::Compile& request,
                                                        const Emit& emit);

  /// The part of Measure after compiling; `time` false only verifies;
  /// `max_reps`: Time's repetitions at most.
  worker::MeasureResult MeasureCompiled(const CompiledKernel& compiled,
                                        const v1::LaunchGeometry& geometry, double best_ms,
                                        bool time = true, int max_reps = kMaxRepetitions);

  /// Times the kernels and the baseline interleaved, round after round, L2
  /// flushed before each run (rounds: see kRetimeMinRounds; every round's
  /// times come back), after kRetimeWarmupRounds untimed rounds, the SM clock
  /// sampled throughout: if it sat low, the rounds are timed again once after
  /// kLowClockPauseMs, and marked clock_low if it is still low. In
  /// Retime.segments (0: RetimeSegments) segments, each with the kernels'
  /// modules loaded afresh; the medians are over every segment's rounds
  /// (RetimeResult.rounds counts them all). Where the problem's operands
  /// and result fit in half the L2 (DeviceProblem::OperandBytes,
  /// JudgesWarm in core/serving.h), each round also times every run warm,
  /// no flush and the run once untimed just before (RetimeResult's
  /// warm_samples, warm_baseline_samples). INVALID_ARGUMENT
  /// without a problem or with a kernel that is not compiled; a CUDA error
  /// as its status (the worker is then broken).
  absl::StatusOr<worker::RetimeResult> RetimeTogether(const worker::Retime& request);

  /// One pipe request; sets Response.error when the request failed as a
  /// whole. A Compile with `stream` writes its partial answers through
  /// `emit` (CompileStreamed) before returning the final one; without
  /// `emit` it is answered at once, as without `stream`.
  worker::Response Handle(const worker::Request& request, const Emit& emit = nullptr);

  /// True once a CUDA error left the context unusable: the process must exit.
  bool broken() const { return broken_; }
  /// The GPU's SM clock through NVML; null where NVML is missing (then every
  /// clock is unknown, 0, and nothing is marked low).
  const GpuClock* clock() const { return clock_.get(); }

 private:
  Worker() = default;
  std::string Arch() const;
  /// Times `run` (already warmed up; `first_ms` from an earlier run, 0 if
  /// none) with L2 flushes: one repetition over kLoserRatio x `best_ms`, the
  /// median of kScreenReps over kScreenRatio x, else repetitions =
  /// TimedRepetitions (server/common/timing.h). Returns {median ms, reps}.
  absl::StatusOr<std::pair<double, int>> Time(const std::function<absl::Status(cudaStream_t)>& run,
                                              double best_ms, double first_ms = 0,
                                              std::vector<ClockSample>* clock_samples = nullptr,
                                              int max_reps = kMaxRepetitions);
  /// What TimeClocked returns: Time's median and repetitions, and the SM
  /// clock (MHz, 0: unknown) it ran at; `low` if it was low twice (ClockLow:
  /// under 90% of the maximum, the power cap's exception aside).
  struct Timed {
    double ms = 0;
    int reps = 0;
    unsigned mhz = 0;
    bool low = false;
  };
  /// Time() with the SM clock sampled while the runs execute; a timing whose
  /// clock sat low is re-timed once after kLowClockPauseMs, and marked low if
  /// it stays low. Errors: Time's.
  absl::StatusOr<Timed> TimeClocked(const std::function<absl::Status(cudaStream_t)>& run,
                                    double best_ms, double first_ms = 0,
                                    int max_reps = kMaxRepetitions);

  v1::Device device_;
  bool compile_only_ = false;
  bool broken_ = false;
  cudaStream_t stream_ = nullptr;
  std::optional<L2Flusher> flusher_;
  std::unique_ptr<DeviceProblem> problem_;
  std::unique_ptr<GpuClock> clock_;  // null without NVML
  v1::Family prepared_family_ = v1::FAMILY_UNSPECIFIED;
  Shape prepared_shape_;
  double baseline_ms_ = 0;  // the baseline's time at Prepare
};

}  // namespace tuned
