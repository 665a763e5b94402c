#include "core/clock_rule.h"

#include <algorithm>
#include <cstddef>

namespace tuned {

bool SlowSample(const ClockSample& sample, unsigned max_mhz) {
  const double mhz = sample.mhz;
  if (mhz >= kLowClockFraction * max_mhz) return false;
  return sample.reasons != kReasonSwPowerCap || mhz < kPowerCapFloorFraction * max_mhz;
}

bool ClockLow(const std::vector<ClockSample>& samples, unsigned max_mhz) {
  if (samples.empty() || max_mhz == 0) return false;
  const auto slow = std::count_if(samples.begin(), samples.end(),
                                  [&](const ClockSample& s) { return SlowSample(s, max_mhz); });
  return 2 * static_cast<size_t>(slow) > samples.size();
}

unsigned ClockMhz(const std::vector<ClockSample>& samples) {
  if (samples.empty()) return 0;
  std::vector<unsigned> v;
  v.reserve(samples.size());
  for (const ClockSample& s : samples) v.push_back(s.mhz);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace tuned
