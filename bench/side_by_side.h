// What the side-by-side benchmark programs share (tunebench, gemm16bench):
// a problem's tuned best, swept first where the daemon has none, and runs
// interleaved round by round, each after an L2 flush, timed with CUDA events
// on the default stream.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/serving.h"
#include "core/status.h"
#include "tuned/client.h"
#include "tuned/launch.h"

namespace tuned::bench {

/// The scratch a side-by-side program writes before each run to flush the
/// L2 (Interleaved): 256 MiB, five times an H100's 50 MiB L2.
inline constexpr size_t kScratchBytes = size_t{256} << 20;

/// The daemon's best of `problem`: read where it has an exact one (unless
/// `retune`), else swept first (SubmitSweep, WatchJob) and read after.
/// The sweep's error, or its job's where it did not end done (INTERNAL with
/// the job's error text).
inline absl::StatusOr<v1::BestKernel> TunedBest(Client& client, const v1::Problem& problem,
                                                bool retune) {
  auto best = client.GetBest(problem);
  if (!retune && best.ok() && best->match() == v1::MATCH_EXACT) return best;
  auto job = client.SubmitSweep(problem);
  if (job.ok()) job = client.WatchJob(job->id(), [](const v1::Job&) {});
  if (!job.ok()) return job.status();
  if (job->state() != v1::JOB_DONE) return absl::InternalError(job->error());
  return client.GetBest(problem);
}

/// CUDA-event times (ms) of `rounds` interleaved rounds of `runs` (each run
/// once a round, in order), each run after a write of `scratch_bytes` at
/// `scratch` (more than the L2: kScratchBytes) to flush it, all on the
/// legacy default stream, the host waiting for each run's stop event before
/// the next: times[i][r] is run i's time in round r. A run's error or a CUDA
/// error is returned as is.
inline absl::StatusOr<std::vector<std::vector<double>>> Interleaved(
    const std::vector<std::function<absl::Status()>>& runs, void* scratch, size_t scratch_bytes,
    int rounds) {
  std::vector<std::vector<double>> times(runs.size());
  cudaEvent_t start, stop;
  TUNED_CUDA(cudaEventCreate(&start));
  TUNED_CUDA(cudaEventCreate(&stop));
  struct Destroy {
    cudaEvent_t a, b;
    ~Destroy() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } destroy{start, stop};
  for (int r = 0; r < rounds; ++r) {
    for (size_t which = 0; which < runs.size(); ++which) {
      TUNED_CUDA(cudaMemsetAsync(scratch, r & 0xff, scratch_bytes, nullptr));
      TUNED_CUDA(cudaEventRecord(start, nullptr));
      TUNED_RETURN_IF_ERROR(runs[which]());
      TUNED_CUDA(cudaEventRecord(stop, nullptr));
      TUNED_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      TUNED_CUDA(cudaEventElapsedTime(&ms, start, stop));
      times[which].push_back(ms);
    }
  }
  return times;
}

/// Interleaved's times after 3 warm-up rounds, over as many rounds as take
/// about 300 ms of GPU time, at least the serving rule's 30 pairs
/// (kMinServingPairs, core/serving.h) and at most 200.
inline absl::StatusOr<std::vector<std::vector<double>>> TimedRounds(
    const std::vector<std::function<absl::Status()>>& runs, void* scratch, size_t scratch_bytes) {
  auto warm = Interleaved(runs, scratch, scratch_bytes, 3);
  if (!warm.ok()) return warm.status();
  double round_ms = 0;
  for (const auto& times : *warm) round_ms += Median(times);
  const int rounds = static_cast<int>(
      std::clamp(300.0 / std::max(round_ms, 1e-3), double{kMinServingPairs}, 200.0));
  return Interleaved(runs, scratch, scratch_bytes, rounds);
}

}  // namespace tuned::bench
