#include "core/serving.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tuned {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<long>(mid));
  return (lower + upper) / 2;
}

namespace {

// The p-quantile of sorted `v` (0 <= p <= 1), interpolating linearly between
// order statistics (Hyndman & Fan's type 7).
double Quantile(const std::vector<double>& sorted, double p) {
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  if (i + 1 >= sorted.size()) return sorted.back();
  const double frac = pos - static_cast<double>(i);
  return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

}  // namespace

absl::StatusOr<SpeedupInterval> BootstrapSpeedup(const std::vector<double>& kernel_ms,
                                                 const std::vector<double>& baseline_ms,
                                                 int resamples, uint64_t seed) {
  if (kernel_ms.empty() || kernel_ms.size() != baseline_ms.size()) {
    return absl::InvalidArgumentError(absl::StrCat("bootstrap: ", kernel_ms.size(), " kernel times and ",
                                                   baseline_ms.size(), " baseline times; need equal, > 0"));
  }
  for (size_t i = 0; i < kernel_ms.size(); ++i) {
    if (!(kernel_ms[i] > 0 && std::isfinite(kernel_ms[i]) && baseline_ms[i] > 0 &&
          std::isfinite(baseline_ms[i]))) {
      return absl::InvalidArgumentError(absl::StrCat("bootstrap: round ", i, " has a time that is not positive: ",
                                                     kernel_ms[i], " ms, ", baseline_ms[i], " ms"));
    }
  }
  if (resamples < 1) return absl::InvalidArgumentError("bootstrap: resamples must be at least 1");
  const size_t n = kernel_ms.size();
  SpeedupInterval out;
  out.pairs = static_cast<int>(n);
  out.speedup = Median(baseline_ms) / Median(kernel_ms);
  std::mt19937_64 gen(seed);
  std::vector<double> ratios, k(n), b(n);
  ratios.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (size_t i = 0; i < n; ++i) {
      const size_t pick = static_cast<size_t>(gen() % n);  // a round, with its pair
      k[i] = kernel_ms[pick];
      b[i] = baseline_ms[pick];
    }
    ratios.push_back(Median(b) / Median(k));
  }
  std::sort(ratios.begin(), ratios.end());
  out.low = Quantile(ratios, 0.025);
  out.high = Quantile(ratios, 0.975);
  return out;
}

bool SurelyFaster(const SpeedupInterval& s) { return s.pairs >= kMinServingPairs && s.low > 1.0; }

bool JudgesWarm(int64_t operand_bytes, int64_t l2_bytes) {
  return operand_bytes > 0 && l2_bytes > 0 && operand_bytes <= l2_bytes / 2;
}

bool JudgeAgain(const std::vector<double>& ms, const std::vector<bool>& judged, double factor,
                bool clock_low) {
  double best_judged = 0;
  for (size_t i = 0; i < ms.size() && i < judged.size(); ++i) {
    if (judged[i] && (best_judged == 0 || ms[i] < best_judged)) best_judged = ms[i];
  }
  const double scale = clock_low ? std::min(factor, 1.0) : factor;
  for (size_t i = 0; i < ms.size() && i < judged.size(); ++i) {
    if (!judged[i] && (best_judged == 0 || ms[i] * scale < best_judged)) return true;
  }
  return false;
}

JudgingPassOutcome OnJudgingPass(bool clock_low, bool judged_at_full_clock) {
  if (!clock_low) return JudgingPassOutcome::kStore;
  return judged_at_full_clock ? JudgingPassOutcome::kKeepJudging : JudgingPassOutcome::kNoteOnly;
}

DecidingSpeedup SlowerSpeedup(const SpeedupInterval& flushed,
                              const std::optional<SpeedupInterval>& warm) {
  if (!warm) return {flushed, false};
  const bool flushed_sure = SurelyFaster(flushed), warm_sure = SurelyFaster(*warm);
  if (flushed_sure != warm_sure) return {warm_sure ? flushed : *warm, !warm_sure};
  if (warm->speedup < flushed.speedup) return {*warm, true};
  return {flushed, false};
}

std::string FormatSpeedup(const SpeedupInterval& s) {
  return absl::StrFormat("%.2fx (95%% CI %.2f\u2013%.2f, %d pairs)", s.speedup, s.low, s.high, s.pairs);
}

ServingDecision DecideServing(const ServingInput& in) {
  const std::string base = in.baseline_name.empty() ? "the baseline" : in.baseline_name;
  if (in.no_kernel) return {true, absl::StrCat(base, ": no kernel passed verification")};
  if (!in.baseline_is_candidate) return {false, "the kernel (the baseline is not served for this family)"};
  if (in.interval) {
    const SpeedupInterval& s = *in.interval;
    // The margin the interval's low end must reach: more for a short kernel.
    const bool short_kernel = in.kernel_ms > 0 && in.kernel_ms < kShortKernelMs;
    const double margin = short_kernel ? kShortKernelMargin : kServingMargin;
    if (SurelyFaster(s) && s.low >= margin) {
      return {false, absl::StrCat("the kernel: surely faster than ", base, ", ", FormatSpeedup(s),
                                  " timed side by side in a fresh process")};
    }
    if (SurelyFaster(s)) {
      const std::string why =
          short_kernel ? absl::StrFormat("the kernel runs %.1f us, under the %.0f us where the "
                                         "calling process moves the speedup, and",
                                         in.kernel_ms * 1e3, kShortKernelMs * 1e3)
                       : std::string("a tie,");
      return {true, absl::StrFormat("%s: %s its speedup %s does not reach the %.2fx asked there",
                                    base, why, FormatSpeedup(s), margin)};
    }
    if (s.pairs < kMinServingPairs) {
      return {true, absl::StrCat(base, ": only ", s.pairs, " pairs timed side by side (", kMinServingPairs,
                                 " needed), speedup ", FormatSpeedup(s))};
    }
    return {true, absl::StrCat(base, ": the kernel is not surely faster, speedup ", FormatSpeedup(s),
                               s.high < 1.0 ? "" : " (the interval reaches 1.00)")};
  }
  if (!in.judging_note.empty()) {
    return {true, absl::StrCat(base, ": no speedup was computed: ", in.judging_note)};
  }
  if (in.baseline_ms <= 0) return {false, "the kernel (no baseline timed to compare with)"};
  const double ratio = in.kernel_ms > 0 ? in.baseline_ms / in.kernel_ms : 0;
  if (ratio >= kLegacyMargin) {
    return {false, absl::StrFormat("the kernel: no interval stored (an older job, or a kernel "
                                   "imported without one); its median is %.2fx %s's, at least the "
                                   "%.2fx asked of such rows",
                                   ratio, base, kLegacyMargin)};
  }
  return {true, absl::StrFormat("%s: no interval stored (an older job, or a kernel imported without "
                                "one) and the kernel's median is %.2fx %s's, under the %.2fx asked "
                                "of such rows; re-tune to judge it",
                                base, ratio, base, kLegacyMargin)};
}

}  // namespace tuned
