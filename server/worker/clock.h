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

/// NVML's clocks event reason for the software power cap
/// (nvmlClocksEventReasonSwPowerCap, nvml.h): the GPU draws its power limit.
inline constexpr unsigned long long kReasonSwPowerCap = 0x4;
/// The reasons of a sample where NVML could not say (older drivers).
inline constexpr unsigned long long kReasonsUnknown = ~0ull;
/// A clock held down by the power cap alone counts as the GPU's own speed
/// down to this fraction of the maximum. An H100 SXM running 3xTF32 at
/// 8192^3 draws its 700 W and sits at 1755-1875 of 1980 MHz (88.6-94.7%)
/// with the software power cap as the only reason (NVML,
/// bench/RESULTS.md wgmma-sass-clock): the clock
/// every client's sustained work gets there, not a slow GPU.
inline constexpr double kPowerCapFloorFraction = 0.8;

/// One reading: the SM clock (MHz) and NVML's clocks event reasons (bits
/// nvmlClocksEventReason*: why the clock is under its maximum).
struct ClockSample {
  unsigned mhz = 0;
  unsigned long long reasons = kReasonsUnknown;
};

/// A sample of a slow GPU: under kLowClockFraction x `max_mhz`, unless the
/// software power cap is its only reason and it is at least
/// kPowerCapFloorFraction x `max_mhz`.
bool SlowSample(const ClockSample& sample, unsigned max_mhz);

/// The clock rule: true when more than half of `samples` (taken while the GPU
/// ran the timed work) are slow (SlowSample); without reasons, that is their
/// median clock under kLowClockFraction x `max_mhz`. False when either is
/// unknown (no samples, max 0): without NVML nothing is marked.
bool ClockLow(const std::vector<ClockSample>& samples, unsigned max_mhz);

/// The median clock of `samples` (MHz, 0 if none): the clock stored with a
/// measurement.
unsigned ClockMhz(const std::vector<ClockSample>& samples);

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
