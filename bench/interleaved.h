// Side-by-side timing of the benchmark programs (tunebench, gemm16bench):
// runs interleaved round by round, each after an L2 flush, timed with CUDA
// events on the default stream.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/status.h"
#include "tuned/launch.h"

namespace tuned::bench {

/// CUDA-event times (ms) of `rounds` interleaved rounds of `runs` (each run
/// once a round, in order), each run after a write of `scratch_bytes` at
/// `scratch` (more than the L2: 256 MiB) to flush it: times[i][r] is run
/// i's time in round r. A run's error or a CUDA error is returned as is.
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

}  // namespace tuned::bench
