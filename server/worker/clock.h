// The GPU's SM clock, read through NVML while kernels are timed, so that a
// time taken on a down-clocked GPU (idle clocks after a restart, thermal or
// power capping) is re-timed or marked instead of reaching a ratio.
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

namespace tuned {

/// A measurement whose SM clock sat under this fraction of the maximum is
/// re-timed once, and marked if it stays there.
inline constexpr double kLowClockFraction = 0.9;

/// The clock rule: true when the median of `samples_mhz` (SM clock samples
/// taken while the GPU ran the timed work) is under kLowClockFraction x
/// `max_mhz`. False when either is unknown (no samples, max 0): without NVML
/// nothing is marked.
bool ClockLow(const std::vector<unsigned>& samples_mhz, unsigned max_mhz);

/// The median of `samples_mhz` (0 if none): the clock stored with a measurement.
unsigned ClockMhz(const std::vector<unsigned>& samples_mhz);

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
  /// Stops and returns the samples (MHz; empty: unknown). A failed NVML
  /// read is skipped.
  std::vector<unsigned> Stop();

 private:
  const GpuClock* clock_;
  int period_us_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<unsigned> samples_;
};

}  // namespace tuned
