// The worker's timing policy for one candidate (Worker::Time), CUDA-free so
// that the search's cost model (search::MeasureSeconds) follows the same
// rule rather than a copy of its numbers.
#pragma once

#include <algorithm>
#include <cmath>

namespace tuned {

/// Time spent timing one candidate, in ms of GPU time (sets the repetitions).
inline constexpr double kTimingBudgetMs = 200.0;
/// Timing policy (Worker::Time), relative to the best time of the job so far:
/// over kLoserRatio x the best, a candidate keeps one run (its verification
/// run if that was already over); over kScreenRatio x, the median of
/// kScreenReps runs; else the full kTimingBudgetMs.
inline constexpr double kLoserRatio = 20.0;
inline constexpr double kScreenRatio = 1.3;
inline constexpr int kScreenReps = 3;
/// Timed repetitions of a candidate at most; a job's search may ask for
/// fewer (worker::Measure.max_repetitions, search::SearchRepetitions).
inline constexpr int kMaxRepetitions = 100;

/// The timed repetitions of a candidate whose first timed run took
/// `first_ms` (ms), the job's best so far `best_ms` (0: none) and at most
/// `max_reps` (kScreenReps..kMaxRepetitions): kScreenReps if screened, else
/// kTimingBudgetMs / first_ms within [5, max_reps]. (Clear losers, over
/// kLoserRatio x the best, stop before: the caller's check.)
inline int TimedRepetitions(double first_ms, double best_ms, int max_reps = kMaxRepetitions) {
  if (best_ms > 0 && first_ms > kScreenRatio * best_ms) return kScreenReps;
  const double most = std::clamp(max_reps, kScreenReps, kMaxRepetitions);
  return static_cast<int>(
      std::clamp(kTimingBudgetMs / std::max(first_ms, 1e-3), std::min(5.0, most), most));
}

/// RetimeTogether's segments at most: each loads the kernels' code afresh
/// and times its own rounds, and the medians are taken over all of them. At
/// 512^3 (14 us a run) the judging of two lane mappings flipped from one
/// call to the next, in one process on the same buffers, by 3.5-4.3% either
/// way, while sbs_probe's race had one 4% ahead each time
/// (bench/RESULTS.md judge-order-ncu): one call is one
/// draw of whatever state decides it.
inline constexpr int kRetimeMaxSegments = 4;
/// GPU time (ms) the segments may take together: a judging whose one segment
/// takes longer than half of it has one segment (large shapes, whose timings
/// did not flip).
inline constexpr double kRetimeSegmentsBudgetMs = 400.0;
/// RetimeTogether's segments for a judging whose one segment (warm-up
/// rounds included) takes `segment_ms` of GPU time: as many as fit in
/// kRetimeSegmentsBudgetMs, 1 to kRetimeMaxSegments.
inline int RetimeSegments(double segment_ms) {
  return static_cast<int>(std::clamp(std::floor(kRetimeSegmentsBudgetMs / std::max(segment_ms, 1e-3)),
                                     1.0, double{kRetimeMaxSegments}));
}

}  // namespace tuned
