// The clock rule: a time taken on a down-clocked GPU (idle clocks after a
// restart, thermal or power capping) is re-timed or marked instead of
// reaching a ratio. Pure: the samples come from NVML in the worker
// (server/worker/clock.h); the daemon's judging names the threshold in its
// messages.
#pragma once

#include <vector>

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

}  // namespace tuned
