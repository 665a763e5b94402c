// The GPU's SM clock, read through NVML while kernels are timed, for the
// clock rule (core/clock_rule.h).
//
// NVML is loaded at run time (dlopen of libnvidia-ml.so.1, which the NVIDIA
// driver installs) with the few functions declared here: nvml.h is not
// packaged on the build machines (Debian's CUDA toolkit and CI have no
// libnvidia-ml-dev) and linking libnvidia-ml would stop the worker from
// starting where the driver is absent (compile-only). Where NVML is missing
// the clock is unknown (0) and nothing is marked. No CUDA here.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock_rule.h"

namespace tuned {

/// One GPU's SM clock through NVML. Thread-safe reads.
class GpuClock {
 public:
  /// Loads NVML and finds the GPU by its UUID ("GPU-xxxxxxxx-..."). Errors
  /// (FAILED_PRECONDITION, with NVML's message and return code): no
  /// libnvidia-ml.so.1, a missing symbol, a failed nvmlInit_v2 or look-up.
  static absl::StatusOr<std::unique_ptr<GpuClock>> Open(const std::string& uuid);
  ~GpuClock();  // nvmlShutdown, dlclose

  /// The SM clock now (MHz). Errors: NVML's return code and message.
  absl::StatusOr<unsigned> SmMhz() const;
  /// The SM clock and the clocks event reasons now (reasons
  /// kReasonsUnknown where this driver's NVML has no such call or it
  /// failed). Errors: the clock's, as SmMhz.
  absl::StatusOr<ClockSample> Sample() const;
  /// The SM clock's maximum (MHz), read once at Open.
  unsigned max_sm_mhz() const { return max_mhz_; }

 private:
  struct Api;
  GpuClock() = default;
  std::unique_ptr<Api> api_;
  void* device_ = nullptr;  // nvmlDevice_t
  unsigned max_mhz_ = 0;
};

/// Samples a GpuClock every `period_us` on its own thread between Start and
/// Stop (the timed work), so that the clock seen is the one the kernels ran
/// at. With a null clock it samples nothing (unknown clock).
class ClockSampler {
 public:
  explicit ClockSampler(const GpuClock* clock, int period_us = 1000)
      : clock_(clock), period_us_(period_us) {}
  ~ClockSampler() { Stop(); }
  /// Starts sampling, clearing earlier samples; also takes one sample now.
  void Start();
  /// Stops and returns the samples (empty: unknown). A failed NVML read is
  /// skipped.
  std::vector<ClockSample> Stop();

 private:
  const GpuClock* clock_;
  int period_us_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<ClockSample> samples_;
};

}  // namespace tuned
