// CUDA runtime helpers for the worker: the device's description, and timing
// (median and interleaved rounds, the L2 and instruction-cache flush). The
// buffers a problem holds are the plug-in kit's (server/worker/buffers.h).
// Only the worker process (and GPU tests) link this.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/status.h"
#include "server/worker/buffers.h"
#include "tuned/launch.h"
#include "tuned/v1/tuner.pb.h"

namespace tuned {

/// Makes `ordinal` current and describes it (name, compute capability,
/// limits, driver and NVRTC versions). FAILED_PRECONDITION if there is no
/// such GPU or no driver.
absl::StatusOr<v1::Device> OpenDevice(int ordinal);

/// Times `run` (one launch on `stream`): `warmup` untimed runs, then `reps`
/// runs each bracketed by its own CUDA events, with `flush` (e.g. an L2
/// flush) before each and outside the events. Returns the median in ms.
absl::StatusOr<double> TimeMedianMs(const std::function<absl::Status(cudaStream_t)>& run,
                                    const std::function<absl::Status(cudaStream_t)>& flush,
                                    int warmup, int reps, cudaStream_t stream);

/// Times several runs interleaved: `rounds` rounds, each timing every run of
/// `runs` once, in order in even rounds and in reverse in odd ones (so that
/// no run always follows the same one: in the H100 regret races of
/// 2026-11-23 the second of two configs timed in a fixed order came out
/// ahead on 9 of 12 shapes, bench/RESULTS.md regret-tensorcore;
/// bench/sbs_probe.cc's races reverse likewise), with `flush` before each
/// and outside its events, so that clock and thermal drift affect them
/// alike. result[i][r] is run i's time (ms) in round r, so that run i and
/// run j of one round form a pair. With `warm` (not null), each round then
/// times every run again, in the same order, warm: no flush, the run once
/// untimed just before its timed run (what it reads and its code are in the
/// caches); (*warm)[i][r] is run i's warm time (ms) in round r. With
/// `reset` (not null), before every timed run and outside its events: before
/// the flush, and in warm rounds after the untimed run (DeviceProblem::
/// BeforeTimedRun: an accumulating kernel's output back to its fill).
absl::StatusOr<std::vector<std::vector<double>>> TimeInterleavedSamplesMs(
    const std::vector<std::function<absl::Status(cudaStream_t)>>& runs,
    const std::function<absl::Status(cudaStream_t)>& flush, int rounds, cudaStream_t stream,
    std::vector<std::vector<double>>* warm = nullptr,
    const std::function<absl::Status(cudaStream_t)>& reset = nullptr);

/// What a client's kernel finds before it runs: a cold L2 (a scratch buffer
/// of twice its size written with cudaMemsetAsync) and cold instruction
/// caches (a kernel of about 200 KB of code, NVRTC-compiled at Create for the
/// current GPU, run by one warp on every SM). Without the second, a kernel
/// timed rep after rep keeps its code cached, which a client that runs other
/// kernels in between does not: sliced-K configs with 100-120 KB of code ran
/// 7-27% faster repeated than after any other kernel, with 30% of warp cycles
/// stalled on "no instruction" (ncu), and the job served a kernel that was
/// 0.87x cuBLAS in a client. With it, every order of runs agrees within 1%:
/// bench/RESULTS.md sbs-probe.
class L2Flusher {
 public:
  /// INTERNAL if the flush kernel does not compile or load;
  /// RESOURCE_EXHAUSTED if the scratch buffer does not fit.
  static absl::StatusOr<L2Flusher> Create(int64_t l2_bytes);
  absl::Status Flush(cudaStream_t stream) const;

 private:
  DeviceBuffer scratch_;
  std::shared_ptr<LoadedKernel> kernel_;
  v1::LaunchGeometry geometry_;
};

}  // namespace tuned
