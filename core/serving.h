// What `best` serves: a generated kernel only where it is surely faster than
// the baseline (cuBLAS for sgemm), judged from paired timings taken the way a
// client runs it (a fresh process, the stored cubin, interleaved with the
// baseline, L2 flushed, and also with a warm L2 where the problem fits in
// half of it: server/jobs/judge.cc JobRunner::JudgeFinalists). Pure: no
// CUDA, no store; the daemon (server/service.cc GetBest), tunectl and
// tunebench share it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tuned {

/// Pairs (rounds) a judging needs at least before a kernel can be served.
inline constexpr int kMinServingPairs = 30;
/// Bootstrap resamples of SpeedupInterval, and its fixed seed (results are
/// reproducible: the same samples give the same interval).
inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 0x5EED5EEDu;
/// Rows with no interval (judged before schema 4, or never judged): the
/// kernel is served only if its stored median is at least this much faster
/// than the stored baseline (baseline_ms >= kLegacyMargin x kernel ms). The
/// in-process re-timing of those rows favoured the kernel by up to 15%
/// (a kernel stored as faster ran 0.87x cuBLAS in a separate process), so
/// the margin asks for more than that.
inline constexpr double kLegacyMargin = 1.15;
/// A kernel whose stored median is under kShortKernelMs (ms) is served only
/// where its interval's low end also reaches kShortKernelMargin. Under ~20
/// us the speedup depends on the process that runs the kernel and on what
/// runs around it, beyond what the judging can reproduce: at 512^3 TF32 (10
/// us) the judging found the served kernel 1.03-1.06x cuBLAS, tunebench's
/// client processes 0.95-0.98x (nine processes on three H100s), and
/// sbs_probe, timing the same cubin the client's way in its own process,
/// 1.03-1.17x; at 27 us and more the judging and tunebench agreed within
/// 0.03 (bench/RESULTS.md tf32-judge-vs-client).
inline constexpr double kShortKernelMs = 0.020;
inline constexpr double kShortKernelMargin = 1.05;
/// Any other kernel is served only where its interval's low end reaches
/// kServingMargin: a tie is served as cuBLAS. At 4096^3 TF32 (370 us) the
/// judging found a kernel surely faster by a hair (1.00x) and a client
/// process timed it under 1.00x
/// (bench/RESULTS.md short-kernel-margin).
inline constexpr double kServingMargin = 1.01;

/// A speedup (baseline ms / kernel ms, > 1: the kernel is faster) with its
/// 95% confidence interval over `pairs` paired rounds.
struct SpeedupInterval {
  double speedup = 0;  // median(baseline ms) / median(kernel ms)
  double low = 0;      // 2.5th percentile of the bootstrap distribution
  double high = 0;     // 97.5th percentile
  int pairs = 0;
};

/// Median of `v` (the mean of the two middle values for an even count); 0
/// for an empty vector.
double Median(std::vector<double> v);

/// The speedup median(baseline_ms) / median(kernel_ms) of paired rounds
/// (kernel_ms[i] and baseline_ms[i] timed in round i) and its 95% percentile
/// bootstrap interval: `resamples` times, draw n rounds with replacement (a
/// round keeps its pair, so drift that hits both runs of a round cancels),
/// take the ratio of medians; the interval is the 2.5th and 97.5th
/// percentiles of those ratios (linear interpolation between order
/// statistics). Method: B. Efron and R. J. Tibshirani, "An Introduction to
/// the Bootstrap", Chapman & Hall, 1993, ch. 13 (the percentile interval)
/// and ch. 6 (resampling pairs). The generator is std::mt19937_64 seeded
/// with `seed`, indices drawn as gen() % n, so the interval is the same on
/// every platform. INVALID_ARGUMENT for no pairs, a size mismatch, or a time
/// that is not positive and finite.
absl::StatusOr<SpeedupInterval> BootstrapSpeedup(const std::vector<double>& kernel_ms,
                                                 const std::vector<double>& baseline_ms,
                                                 int resamples = kBootstrapResamples,
                                                 uint64_t seed = kBootstrapSeed);

/// True when the kernel is surely faster: at least kMinServingPairs pairs
/// and the interval's lower bound above 1.0.
bool SurelyFaster(const SpeedupInterval& s);

/// Whether the judging also times every finalist and the baseline with a
/// warm L2 (server/worker/measure.cc Worker::RetimeTogether): where a run's
/// operands and result, `operand_bytes` together (sgemm: A + B + C), fit in
/// half the GPU's L2 of `l2_bytes` (both > 0). A client that calls the kernel
/// again and again on the same buffers (a PyTorch stream) finds them in L2
/// there, and cuBLAS gains more from that than our kernels (1000^3 nt on an
/// H100: 0.0505 ms a call warm for cuBLAS, 0.0607 ms for the kernel that the
/// flushed judging found level, ~0.064 ms both flushed:
/// bench/RESULTS.md small-calls). Larger problems
/// are timed flushed only: a warm run keeps little of them in L2, and the
/// warm runs would only cost time.
bool JudgesWarm(int64_t operand_bytes, int64_t l2_bytes);

/// Whether the end-of-job judging re-times the finalists once more
/// (JobRunner::JudgeFinalists): finalist i has the stored median `ms[i]`
/// (ms; its judged time where `judged[i]`, else its search time), and
/// `factor` is the median ratio of judged to search time so far (1 before
/// any). True where an unjudged finalist could be served over the best
/// judged one: its search time times `factor` is below the best judged
/// time (the judging's conditions time a kernel ~1-2% slower than the
/// search; without this correction every pass took an unjudged config).
/// Where the judging ran on a down-clocked GPU (`clock_low`), its times are
/// no longer comparable with the search's, and the search time decides
/// uncorrected (times min(factor, 1)): `best` ranks by stored time, and an
/// unjudged config would otherwise win on a time taken at the full clock
/// (8192^3 bf16 on an H100: one won on its search time, 1.52 ms, against
/// the judged 1.62 ms of configs the SM clock's fall to 1500 MHz had
/// slowed, and a client timed it 8% under the best judged one:
/// bench/RESULTS.md gemm16-suite). True too where none
/// is judged yet and some finalist exists.
bool JudgeAgain(const std::vector<double>& ms, const std::vector<bool>& judged, double factor,
                bool clock_low);

/// What a judging pass stores of a finalist (server/jobs/judge.cc). A pass
/// at full clock stores its time and speedup (kStore). A pass on a
/// down-clocked GPU reaches no speedup, and times every config slower than
/// the search did, so it changes no config's time: a config judged at full
/// clock before keeps that judging (kKeepJudging), any other keeps its
/// search time and takes the pass's note (kNoteOnly). Storing such a pass's
/// times ranked the configs it re-timed after those it did not (f16
/// 4096x11008x4096 on a power-capped H100 was served 5-10% under the
/// search's fastest: bench/RESULTS.md gemm16-suite).
enum class JudgingPassOutcome { kStore, kKeepJudging, kNoteOnly };
JudgingPassOutcome OnJudgingPass(bool clock_low, bool judged_at_full_clock);

/// The speedup that decides whether a kernel is served, of its flushed and
/// (where JudgesWarm) its warm-L2 judging.
struct DecidingSpeedup {
  SpeedupInterval interval;
  bool warm = false;  // the warm-L2 interval decided; false: the flushed one
};

/// Of a kernel's flushed interval and its warm one (nullopt: not timed warm),
/// the one with the smaller speedup; but where SurelyFaster passes one and
/// fails the other, the one it fails, so that the interval stored serves the
/// kernel only where it is surely faster both flushed and warm. Ties go to
/// `flushed`.
DecidingSpeedup SlowerSpeedup(const SpeedupInterval& flushed,
                              const std::optional<SpeedupInterval>& warm);

/// What is known of a best row when deciding what to serve.
struct ServingInput {
  bool baseline_is_candidate = false;  // the family's baseline may be served (sgemm)
  double kernel_ms = 0;                // the kernel's stored median (ms)
  double baseline_ms = 0;              // the baseline's stored median (ms; 0: unknown)
  std::string baseline_name;           // "cuBLAS"
  std::optional<SpeedupInterval> interval;  // from the judging; nullopt: none stored
  /// Why the judging computed no speedup ("" if it did, or if it never ran):
  /// e.g. the GPU's clock sat low while it timed.
  std::string judging_note;
  /// There is no kernel: no config of the problem passed verification (a
  /// baseline-only row, db/store.h BestRow::baseline_only).
  bool no_kernel = false;
};

/// The decision and its reason, one line for users (BestKernel.serving_reason).
struct ServingDecision {
  bool use_baseline = false;
  std::string reason;
};

/// The serving rule:
/// - no kernel passed verification (`no_kernel`): the baseline (the daemon
///   has such a row only where the baseline is a candidate);
/// - the family's baseline is no candidate (transpose's copy kernel): the kernel;
/// - an interval is stored: the kernel iff SurelyFaster and the interval's
///   low end reaches kServingMargin, or kShortKernelMargin where kernel_ms
///   is under kShortKernelMs; else the baseline;
/// - the judging ran but computed no speedup (`judging_note`): the baseline;
/// - neither (a database of schema < 4, an import without an interval): the
///   kernel iff baseline_ms >= kLegacyMargin x kernel_ms, or no baseline is
///   known (nothing to compare with), else the baseline.
ServingDecision DecideServing(const ServingInput& in);

/// "1.07x (95% CI 1.05–1.09, 30 pairs)": a speedup as tunectl and tunebench
/// print it.
std::string FormatSpeedup(const SpeedupInterval& s);

}  // namespace tuned
