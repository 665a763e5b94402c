// Search strategies: which configs a sweep job measures in each round and
// when it stops. CPU-only (no CUDA, store or jobs here): the job runner
// (server/jobs/jobs.cc) feeds a strategy what the database knows and what the
// job measured so far, and the simulator (bench/strategy_sim.cc) feeds it
// recorded measurements, so both run the same code.
//
//   exhaustive  the family's pruned space, then up to 3 rounds of the untried
//               neighbours of the best 2 (today's sweep, unchanged).
//   model       the 40 configs a cost model (gradient-boosted trees,
//               XGBoost, fitted on the measurements of other shapes on this
//               device kind) predicts fastest for the shape, and the winners
//               of the 5 nearest tuned shapes; then up to 3 rounds of the 32
//               neighbours of the best 3 it predicts fastest, of those
//               compiled already (in the compile cache, or measured on
//               another shape). With too few
//               measurements of other shapes (a fresh database), or none of
//               the shape's AlignmentClass and KernelKinds, it is exhaustive.
//
// Either stops at the job's budget (configs, or seconds of GPU time).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "families/family.h"
#include "server/common/timing.h"

namespace tuned::search {

inline constexpr std::string_view kExhaustive = "exhaustive";
inline constexpr std::string_view kModel = "model";
/// The strategies' names, for messages and --help.
std::vector<std::string> StrategyNames();
/// INVALID_ARGUMENT naming the known strategies unless `name` is one.
absl::Status CheckStrategy(std::string_view name);

/// A job's budget; 0 in a field: no limit of that kind.
struct Budget {
  double seconds = 0;   // GPU time of the job's measurements (JobTime::measure_seconds)
  int64_t configs = 0;  // configs measured (verified and timed, or failed)
  bool unlimited() const { return seconds <= 0 && configs <= 0; }
  /// "10s", "64" or "" (none).
  std::string ToString() const;
};
/// "10s" (seconds; also "1.5s", "2m") or "64" (configs); "" is none.
/// INVALID_ARGUMENT for anything else, zero or negative.
absl::StatusOr<Budget> ParseBudget(std::string_view text);

/// The GPU time of measuring one config whose kernel runs `ms`, after the
/// best so far ran `best_ms` (0: none yet), as the GPU worker times it
/// (Worker::Time in server/worker/measure.cc): a verification run, then one
/// timed run; over kLoserRatio (20) x the best it stops there, over
/// kScreenRatio (1.3) x the median of 3 (screening), else
/// clamp(200 ms / ms, 5, 100) runs; each timed run also flushes L2
/// (kRunOverheadMs), and each config costs kConfigOverheadS (the pipe,
/// verification against the reference, the store). Calibrated on the
/// 2026-11-22 H100 suite: SGEMM 512^3's 337 configs measured in 1.6 s; the
/// flush (memset of 2x L2 + the instruction-cache flush kernel) costs
/// 0.077 ms on the H100 (sbs_probe, bench/RESULTS.md flush16).
inline constexpr double kConfigOverheadS = 0.0045;
inline constexpr double kRunOverheadMs = 0.077;
/// `max_reps`: the repetitions at most (SearchRepetitions) in place of 100.
double MeasureSeconds(double ms, double best_ms, int max_reps = kMaxRepetitions);
/// The timed repetitions at most of each config a strategy's search measures
/// (worker::Measure.max_repetitions): exhaustive kMaxRepetitions, model
/// ModelOptions::search_repetitions. A job's finalists are judged in full
/// at its end whatever the strategy (JobRunner::JudgeFinalists).
int SearchRepetitions(std::string_view strategy);
/// The end-of-job re-timing of the best few (`ms`, with the baseline at
/// about the best's time): RetimeTogether's rounds x its segments x every kernel, twice
/// (a second pass usually confirms the first).
double RetimeSeconds(const std::vector<double>& ms);

/// One OK measurement of another shape on the same device kind.
struct Record {
  Shape shape;
  Config config;
  double ms = 0;
};

/// Predicts how much slower than the shape's best a config is, from the
/// config's parameters and the shape's features (log2 M/N/K, which of
/// them are multiples of 4, tile counts,
/// waves over the SMs, K iterations per block, split-K, threads, shared
/// memory, the padding of the last tiles): XGBoost's gradient-boosted trees
/// on log(ms / the shape's best ms) of every record.
class CostModel {
 public:
  /// Needs records of at least one shape; INVALID_ARGUMENT without, INTERNAL
  /// if XGBoost fails.
  static absl::StatusOr<std::unique_ptr<CostModel>> Fit(const Family& family,
                                                        const v1::Device& device,
                                                        const std::vector<Record>& records);
  ~CostModel();
  /// log(ms / best ms) predicted for each config on `shape`.
  std::vector<double> Predict(const std::vector<Config>& configs, const Shape& shape) const;

 private:
  CostModel() = default;
  const Family* family_ = nullptr;
  v1::Device device_;
  void* booster_ = nullptr;  // BoosterHandle
};

/// Which dimensions of a shape are multiples of 4: the kernels' 16-byte
/// (float4) load paths depend on it (kernels_src/gemm/sgemm.cuh: K and N),
/// so a cost model fitted on shapes of one class extrapolates to another:
/// on the H100 the model, fitted on the 11 aligned shapes of the public
/// suite, ranked 4097^3's 4-byte-path configs as if it were 4096^3 and
/// missed its exhaustive winner by 2.7% raced, 6.3% in simulation
/// (bench/RESULTS.md la2-regret). A Features input,
/// and the model strategy sweeps exhaustively for a shape whose class no
/// tuned shape has.
std::vector<bool> AlignmentClass(const Shape& shape);

/// The kinds of kernel among `configs`: each name's words before the first
/// with a digit (sgemm_warp, sgemm_wgmma, sgemm_gemv_rows, ...). The model
/// strategy also sweeps exhaustively for a shape whose space holds other
/// kinds than every tuned shape's of its AlignmentClass: on the H100,
/// 8192x4x8192 after 1x8192x8192, 8192x1x8192 and 4x8192x8192 (whose spaces
/// hold gemv kernels of the other side, or of the other alignment), the
/// model's first round held no rows kernel of 4 columns a pass and served
/// cuBLAS where the exhaustive sweep finds 1.58x it
/// (bench/RESULTS.md tf32-tma-probes, section 8).
std::set<std::string> KernelKinds(const Family& family, const std::vector<Config>& configs);

/// Features of a config on a shape (CostModel's input; exposed for tests).
std::vector<float> Features(const Family& family, const v1::Device& device, const Config& config,
                            const Shape& shape);

/// What a strategy sees before each round.
struct RoundInput {
  const Family* family = nullptr;
  v1::Device device;
  Shape shape;
  /// Rounds done so far (0: the job has just started).
  int round = 0;
  /// The job's math mode: the space's and the refinements' (Family::Admits).
  v1::Math math = v1::MATH_IEEE_FP32;
  /// The job's operand layout (Family::InLayout): the space's and the
  /// refinements' configs are made for it.
  v1::Layout layout = v1::LAYOUT_NN;
  /// The family's space of the math mode pruned for the device and the
  /// shape (Family::ValidSpace), in order.
  std::vector<Config> valid;
  /// The job's best OK configs, fastest first (at least 2 if it has them),
  /// and their ms.
  std::vector<Config> best;
  std::vector<double> best_ms;
  /// Names of the configs the job measured (OK or not).
  std::set<std::string> measured;
  /// GPU seconds the job has spent measuring.
  double spent_seconds = 0;
  Budget budget;
  /// Whether a config's kernel is in the compile cache for this device kind
  /// (the job runner asks the store); empty where nothing is known (the
  /// simulator: only configs measured on other shapes count as compiled).
  std::function<bool(const Config&)> compiled;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  /// The configs of the next round, in the order to measure them (the most
  /// promising first, so the worker screens the rest against it); empty:
  /// the search is over (the job's finalists are re-timed and it ends).
  /// Never more than the budget's configs left; none once the seconds are spent.
  virtual std::vector<Config> NextRound(const RoundInput& in) = 0;
  /// One line on what it knows (logged at a job's start).
  virtual std::string Describe() const = 0;
};

/// Options of the model strategy (tests and the simulator vary them).
struct ModelOptions {
  /// The first round: the configs the model predicts fastest (of those
  /// measured OK on another shape), this many, besides the nearest shapes'
  /// winners. Sized by count: on the H100 a config costs ~20 ms of
  /// measuring whatever its kernel's time for small shapes, so the earlier
  /// sizing by 5 s of predicted GPU time measured 138-377 configs a shape
  /// (bench/RESULTS.md regret7).
  int first_round = 40;
  /// ...and then more of those, in the order of the prediction, while the
  /// round's predicted measuring (MeasureSeconds) stays within this many
  /// seconds: cheap shapes, where the model's fit on the larger ones is the
  /// least sure, measure more of the space (on the H100 the model's winner
  /// of 512^3 was 5.75% slower than the exhaustive one with 40,
  /// bench/RESULTS.md gemv-regret; 0: no
  /// more). 1 s: simulated on the H100 measurements of 2026-11-26, each
  /// public shape learning from the first 16 shapes of bench/prior_shapes.txt
  /// alone, its small shapes measure 150-240 configs instead of 400-500, and
  /// their winners stay the exhaustive ones (128x4096x4096 within 0.2%), as
  /// with 2.5 s (bench/RESULTS.md strategy-sim).
  double first_seconds = 1.0;
  /// Configs of the first round (besides the nearest shapes' winners) whose
  /// kernels are not compiled yet (RoundInput::compiled), at most: a fresh
  /// install's first shape learns from the prior and has compiled nothing,
  /// and NVRTC takes ~2.4 s of a core a kernel (16 cores: 16 kernels are
  /// one wave). The extension by first_seconds takes compiled configs only.
  /// Once at least half of the first_round known configs the model ranks
  /// first are compiled, none (the nearest shapes' winners included): a round that waits on one kernel
  /// waits ~2.4 s, however few it compiles, where a small shape's search
  /// takes 1-2 s. On an H100 whose compile-ahead ran slower, small shapes
  /// waited 1-2 s each and the median tuning time rose from 3.9 s to 5.4 s
  /// (bench/RESULTS.md fresh-install, runs 6 and 7).
  int first_uncompiled = 16;
  /// The winners of this many nearest tuned shapes are measured too, whatever
  /// the model predicts...
  int near_shapes = 5;
  /// ...this many of each.
  int near_winners = 4;
  /// Rounds of neighbours of the best `refine_top` after the first (as the
  /// exhaustive strategy's).
  int refine_rounds = 3;
  int refine_top = 3;
  /// Configs of a refinement round at most: the neighbours the model
  /// predicts fastest (0: all of them). 3 and 32 rather than 2 and 16: on
  /// the H100 records of 2026-11-23 (bench/RESULTS.md regret-tensorcore)
  /// the exhaustive winners of 128x4096x4096 and 4096x4096x64 were
  /// neighbours that 2 and 16 left out (regret 2.0% and 2.2% in simulation,
  /// 2.2% and 1.5% raced on the H100); 3 and 32 find every shape's
  /// exhaustive winner there, for +0.5 s of simulated median time.
  int refine_max = 32;
  /// Refinement takes only neighbours whose kernels are compiled already:
  /// measured on another shape, or in the compile cache
  /// (RoundInput::compiled; the compile-ahead fills it, the neighbours of
  /// finished jobs' winners first), so that no round waits on NVRTC, which
  /// took 6-7 s of a 9-12 s job on the H100 while the compile-ahead (6,820
  /// kernels, ~20 minutes of 16 cores) had not reached them
  /// (bench/RESULTS.md gemv-regret). false: any
  /// neighbour.
  bool refine_compiled = true;
  /// A config whose measuring is predicted (MeasureSeconds) to take at least
  /// this many seconds counts as compiled in the first round and the
  /// refinement: the compiler builds a kernel while the GPU measures such
  /// configs (streamed, JobRunner::MeasureAll), so it costs no wait.
  /// NVRTC takes ~2.4 s of a core a kernel, 16 cores build one each 0.15 s;
  /// at 8192^3 (~0.3 s a config) the compiled-only rule left the exhaustive
  /// winner out on a fresh install (2.3-3.2% regret on the H100,
  /// bench/RESULTS.md fresh-install).
  double compile_hidden_seconds = 0.15;
  /// Timed repetitions at most of each config measured (short timings for
  /// many; the job's top 5 are then judged in full, 100 rounds interleaved
  /// with the baseline in a fresh worker). The worker's 200 ms per config
  /// (kTimingBudgetMs) gave 100 repetitions to every kernel under 2 ms, and
  /// the model's picks are rarely screened out (they are good): on the H100
  /// the search of 2048^3 spent 70 ms a config, 7.6 of its 10.9 s
  /// (bench/RESULTS.md la2-regret). The median of 20
  /// flushed runs ranks configs within well under 1% at these sizes.
  int search_repetitions = 20;
};

/// `records`: OK measurements of other shapes of the family on this device
/// kind (the model strategy's knowledge; the exhaustive one ignores them).
/// `refine_top`: the exhaustive strategy's (JobRunnerOptions::refine_top).
/// INVALID_ARGUMENT for an unknown name.
absl::StatusOr<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name,
                                                       const Family& family,
                                                       const v1::Device& device,
                                                       std::vector<Record> records,
                                                       int refine_top = 2,
                                                       ModelOptions model = {});

/// Cuts `configs` to what the budget has left: the configs not yet
/// measured, and while the seconds last (the cost of each from
/// `predicted_ms`, its predicted time, or a flat kConfigOverheadS where
/// empty). At least one config while anything is left.
/// `max_reps`: the strategy's SearchRepetitions.
std::vector<Config> WithinBudget(std::vector<Config> configs, const std::vector<double>& predicted_ms,
                                 const RoundInput& in, int max_reps = kMaxRepetitions);

}  // namespace tuned::search
