// The sweep job queue and its runner: jobs live in the store, shared by
// every daemon of the database (one per GPU). A job's configs are work items
// (the family's space pruned for the device, then rounds of refinement, then
// the re-timing of its finalists); the runner thread claims them in batches
// for its GPU (Store::ClaimWork), preferring the job its GPU worker is
// prepared for, and sends each to the GPU worker, storing every result as it
// arrives; a heartbeat thread renews its claims' lease. A job whose items
// are all done gets its next round from whichever daemon sees it first.
// Candidates are compiled by a second worker process (NVRTC only) through
// the store's compile cache, a claim's kernels in one call that delivers
// each as it compiles, so that the GPU measures a config as soon as its
// kernel is there. Hung or faulting kernels and compiles are killed with
// their process and recorded with their class; a config that broke the GPU
// worker twice is quarantined. No CUDA here.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "families/family.h"
#include "server/families.h"
#include "server/metrics.h"
#include "server/search/prior.h"
#include "server/search/strategy.h"
#include "server/worker_client.h"

namespace tuned {

/// Limits of the job runner (daemon flags).
struct JobRunnerOptions {
  /// A Measure call (verify + time one config) is killed after
  /// max(run_timeout_floor, run_timeout_multiple * best time so far).
  absl::Duration run_timeout_floor = absl::Seconds(30);
  double run_timeout_multiple = 500;
  /// A compile (a batch, then each of its kernels without a result alone) is
  /// killed after this (a job's claim of kernels: this per compile_batch).
  absl::Duration compile_timeout = absl::Seconds(120);
  /// Prepare (buffers, reference, baseline) is killed after this.
  absl::Duration prepare_timeout = absl::Minutes(10);
  /// Kernels per compile batch of the compile-ahead (compiled in parallel
  /// on the compiler's cores); a claim of a job's configs holds twice as
  /// many, compiled in one streamed call with compile_timeout for each
  /// compile_batch of them.
  int compile_batch = 32;
  /// Crashes of the GPU worker after which a config is never run again.
  int quarantine_after = 2;
  /// At a job's end its best few (the finalists) are judged: re-timed
  /// together, interleaved with the baseline, in a fresh GPU worker process
  /// on fresh inputs, and keep those times and their speedup interval, which
  /// decides what `best` serves (core/serving.h; 0: off, and then best
  /// serves cuBLAS for sgemm unless the margin rule of unjudged rows holds,
  /// kLegacyMargin).
  /// 5 rather than 3: on the H100 the model strategy's top 3 of 1024^3 by
  /// their first timings were three variants of one config within 1%, and
  /// the exhaustive winner, 1.7% faster raced, not among them
  /// (bench/RESULTS.md la2-regret); judging two more
  /// costs 2 x 100 runs of the kernel.
  int retime_top = 5;
  /// After the sweep, the untried neighbours (Family::Neighbours) of the
  /// job's best few OK configs are measured too, a local search around the
  /// winners, and again for a neighbour that joins the best few (a round of
  /// work items each; 0: off).
  int refine_top = 2;
  /// Seconds a claim of work items lasts without a heartbeat; the daemon
  /// renews its claims every third of it. After a daemon dies, its claims go
  /// back to the pool this long after its last heartbeat.
  double lease_seconds = 30;
  /// The daemon compiles every family's pruned space and its first round of
  /// neighbours (what a job's refinement reaches first) into the compile
  /// cache, on a thread and a compiler process of its own (the `ahead`
  /// compiler, at the lowest CPU priority), so that jobs find their kernels
  /// compiled (kernels do not depend on the shape). The neighbours of each
  /// finished job's best kAheadTop configs go first: where the refinement of
  /// the next shapes goes. The daemon turns it on (off with --compile-only
  /// unless asked for: the tests); it needs the ahead compiler.
  bool compile_ahead = false;
  /// Whether this daemon compiles and runs users' kernel specs (tuned
  /// --allow-user-kernels). Without it, a sweep of a user's spec is refused
  /// here, and its jobs queued by another daemon are neither advanced nor
  /// claimed: they wait for a daemon that allows them (Store::ClaimWork,
  /// Store::IdleJobs). The built-in spec families (transpose) are ours.
  bool user_kernels = false;
  /// A sweep's strategy and budget when its request names none (tuned
  /// --strategy, --budget; server/search/strategy.h).
  std::string strategy = std::string(search::kExhaustive);
  search::Budget budget;
  /// Measurements of another GPU of this architecture (prior/README.md;
  /// null: none, or one of another architecture): the model strategy learns
  /// from them while the database holds fewer than kOwnShapesEnough tuned
  /// shapes of a problem kind on this GPU kind (Knowledge), and the
  /// compile-ahead compiles the configs they rank first (Prior::Ranked).
  /// Never served. Outlives the runner.
  const search::Prior* prior = nullptr;
};

/// What a sweep request asks for beyond its problem: "" takes the daemon's
/// default.
struct SweepRequest {
  std::string strategy;
  std::string budget;  // "10s", "64"
};

/// Progress of the compile-ahead (JobRunnerOptions::compile_ahead): kernels
/// looked at (found cached or compiled) out of the total.
struct CompileAheadProgress {
  int64_t done = 0;
  int64_t total = 0;  // 0: not started (or off)
};

/// What the runner's steps of one job share (JobRunner::ContextOf): made
/// once where this daemon first works on the job (its advance or its first
/// claim), not at each step, and dropped when the job ends here.
struct JobContext {
  ProblemKey key;                  // the job's problem's (core/problem_key.h)
  const Family* family = nullptr;  // FamilyOf the key: the family in its variant
  Shape shape;                     // the problem's
  /// The family's space in the job's math mode and layout, pruned for this
  /// device and shape (Family::ValidSpace), and what the pruning dropped.
  std::vector<Config> valid;
  std::vector<Pruned> pruned;
  /// The kernel spec, with its source, that a worker's Prepare carries
  /// (SpecWithSource); unset for a family written as code.
  std::optional<v1::KernelSpec> spec;
  /// The search strategy between the job's rounds: its cost model is fitted
  /// once per job, not per round. Null until the first Advance here, and
  /// after the last round.
  std::unique_ptr<search::Strategy> strategy;
};

class JobRunner {
 public:
  /// `store`, `worker` (the GPU worker), `compiler` (a worker started with
  /// --compile-only --arch of the GPU), `metrics` (optional) and
  /// `ahead_compiler` (another such worker, for the compile-ahead; null: no
  /// compile-ahead) must outlive the runner. `who`: this daemon in the fleet
  /// (its lease is options.lease_seconds).
  JobRunner(Store* store, WorkerClient* worker, WorkerClient* compiler, int64_t device_id,
            DaemonIdentity who, JobRunnerOptions options = {}, Metrics* metrics = nullptr,
            WorkerClient* ahead_compiler = nullptr);
  ~JobRunner();

  /// Registers the daemon (handing back the claims of its earlier run: the
  /// jobs it worked on resume where they stopped) and starts the runner
  /// and heartbeat threads.
  absl::Status Start();
  /// Stops after the current candidate, killing a compile in progress, and
  /// hands this daemon's claims back to the pool at once; its jobs stay
  /// resumable, here or on another daemon.
  void Stop();
  /// This daemon's id in the store (after Start).
  int64_t daemon_id() const { return daemon_id_; }
  /// True until Stop() (the health service reports NOT_SERVING after).
  bool serving();

  /// Checks the problem, resolved at the API edge (TunerService::Validate),
  /// against the device (RESOURCE_EXHAUSTED), and against this daemon for a
  /// kernel spec (FAILED_PRECONDITION without --allow-user-kernels), prunes the
  /// space (FAILED_PRECONDITION if nothing is left) and queues a job of
  /// `quota.client` (RESOURCE_EXHAUSTED over the client's quota, Store::CreateJob).
  /// `sweep`: its strategy and budget (INVALID_ARGUMENT for an unknown
  /// strategy or a bad budget, nothing queued).
  absl::StatusOr<v1::Job> Submit(const ResolvedProblem& problem, const ClientQuota& quota = {},
                                 const SweepRequest& sweep = {});
  /// Cancels a queued or running job (NOT_FOUND if unknown; a finished job
  /// is returned unchanged).
  absl::StatusOr<v1::Job> Cancel(int64_t id);

  /// Increases whenever a job changes. WaitForChange blocks until it
  /// differs from `seen` or `timeout` passes, and returns the current value.
  uint64_t version();
  uint64_t WaitForChange(uint64_t seen, absl::Duration timeout);
  /// How often an idle daemon claims again: a job that another daemon of
  /// the fleet took in reaches it within this. An idle round costs the
  /// store two small queries (finished rounds, then a claim).
  static constexpr absl::Duration kIdlePoll = absl::Milliseconds(250);

  const v1::Device& device() const { return worker_->device(); }
  /// Safe from any thread.
  CompileAheadProgress compile_ahead() {
    absl::MutexLock lock(&mu_);
    return ahead_progress_;
  }

 private:
  void Loop();
  /// Renews the claims' lease and the cache of bests until Stop; notices a
  /// current job that ended elsewhere (cancelled).
  void HeartbeatLoop();
  /// Measures one claim's items (or re-times the job's finalists and ends
  /// it, for the re-timing item). Errors: the store's or the worker's.
  absl::Status RunClaim(const Claim& claim);
  /// Gives a job whose items are all done its next round (the pruned space,
  /// a refinement round, the re-timing item) or ends it. Another daemon may
  /// have done it first: then nothing changes.
  absl::Status Advance(const v1::Job& job);
  /// Advance()s every job of the kind whose items are all done; true if there
  /// was one.
  bool AdvanceIdleJobs();
  /// Compiles the next batch of the compile-ahead list through the compile
  /// cache; false when there is nothing left. The ahead thread only.
  bool CompileAhead();
  /// The ahead thread: CompileAhead() a batch at a time, while no job's
  /// compile is in flight, until the list is done; then waits for the
  /// neighbours of finished jobs' winners (QueueAhead).
  void AheadLoop();
  /// Orders the compile-ahead list by the prior (options_.prior): the
  /// configs it ranks first, then their neighbours, then the rest.
  void OrderByPrior(const std::vector<const Family*>& families);
  /// Puts the untried neighbours of the job's best kAheadTop OK configs at
  /// the front of the compile-ahead list (with the compile-ahead on).
  void QueueAhead(const v1::Job& job, const JobContext& ctx);
  /// Ends the job FAILED with `why` (logged).
  void FailJob(int64_t id, const absl::Status& why);
  /// Ends the job: DONE, or FAILED if no config passed verification; drops
  /// its context.
  absl::Status Finish(int64_t id, const JobContext& ctx);
  /// The job's context, made on first use (FamilyOf, the valid space):
  /// INVALID_ARGUMENT or NOT_FOUND where its family cannot be had. The
  /// runner thread only; a pointer stays valid until DropContext of the job
  /// or the next ContextOf of a job without one.
  absl::StatusOr<JobContext*> ContextOf(const v1::Job& job);
  void DropContext(int64_t id);
  /// Times the job's baseline on this GPU (and sets up its buffers and
  /// reference in the worker).
  absl::Status Prepare(const v1::Job& job, const JobContext& ctx, JobTime* time);
  /// The GPU worker's Prepare of the job's problem with `seed`
  /// (jobs_internal::PrepareRequest); a kernel spec's carries its reference
  /// and default config (SpecFamily::PrepareKernels) compiled by the job's
  /// compiler through the compile cache, confined as every config: the GPU
  /// worker compiles no spec code. FAILED_PRECONDITION naming the kernel
  /// where one does not compile; the family's errors where its kernels
  /// cannot be had at the shape.
  absl::StatusOr<v1::worker::Request> PrepareRequest(const JobContext& ctx, uint64_t seed, JobTime* time);
  /// Receives one kernel's result of CompileStage: its index in the
  /// kernels, and its result.
  using CompileDelivery = std::function<void(size_t index, const v1::worker::MeasureResult& result)>;
  /// Compiles the kernels through the compile cache and `compiler` (a job's:
  /// compiler_, on its own thread beside the GPU's measurements; the
  /// compile-ahead's: ahead_compiler_) in one streamed call
  /// (WorkerClient::CallStreaming, at most compile_timeout per compile_batch
  /// kernels); one COMPILED, COMPILE_ERROR or COMPILE_TIMEOUT result per
  /// kernel, each also handed to `on_result` (if set, on this thread, each
  /// index once) as soon as it is known: cache hits first, then the misses
  /// as they compile (each cached as it arrives). When the call fails (a
  /// hang or a crash), the kernels without a result yet are compiled one at
  /// a time. Touches only `compiler` and the store. Once `abandoned` (if
  /// set) is true (a cancelled job, whose caller interrupts `compiler`), it
  /// starts no compile: the kernels without a result keep none.
  std::vector<v1::worker::MeasureResult> CompileStage(const std::vector<v1::worker::Kernel>& kernels,
                                                      JobTime* time, WorkerClient* compiler,
                                                      const CompileDelivery& on_result = nullptr,
                                                      const std::function<bool()>& abandoned = nullptr);
  /// Verifies and times one compiled config on the GPU worker (unless
  /// quarantined or not compiled) and stores the result; restarts the worker
  /// if the config broke it.
  absl::Status MeasureOne(const v1::Job& job, const JobContext& ctx, const Config& config,
                          const v1::worker::Kernel& kernel,
                          const v1::worker::MeasureResult& compiled, double* best_ms,
                          JobTime* time);
  /// How a run of measurements ended.
  enum class MeasureOutcome { kAll, kStopping, kCancelled, kBudget };
  /// The OK measurements of the family's other shapes on this device kind
  /// (the same spec version, dtype and math mode as `job_problem`, not its
  /// own shape): the model strategy's knowledge. While fewer than
  /// kOwnShapesEnough shapes are tuned, also the prior's measurements of
  /// the other shapes the database has not tuned (never the job's shape).
  absl::StatusOr<std::vector<search::Record>> Knowledge(const Family& family,
                                                        const v1::Problem& job_problem);
  /// Compiles `configs` in one streamed CompileStage on a thread of its own
  /// and measures them in order, each as soon as its own kernel is
  /// delivered (the time the GPU waited for it is JobTime::wait_seconds),
  /// adding the time to the job's totals every compile_batch configs; stops
  /// early when the runner stops or the job is cancelled, and when the
  /// job's seconds budget is spent (its configs left are then skipped:
  /// Store::SkipRemaining), after the compile's end (its kernels are
  /// cached). Errors: the store's.
  absl::StatusOr<MeasureOutcome> MeasureAll(const v1::Job& job, const JobContext& ctx,
                                            const std::vector<Config>& configs, double* best_ms);
  /// The job's best `n` OK measurements, fastest first (Store::JobBest).
  /// Errors: the store's.
  absl::StatusOr<std::vector<v1::Measurement>> JobBest(const v1::Job& job, int n);
  /// Adds `time` to the job's totals and clears it.
  void AddTime(int64_t id, JobTime* time);
  /// Judges the job's finalists the way a client runs them: starts a fresh
  /// GPU worker process, prepares the problem with another seed (fresh
  /// inputs), and has it run each of the job's best `options_.retime_top` OK
  /// configs from its stored cubin, with the geometry and prescaling GetBest
  /// gives, interleaved with the baseline for at least 30 rounds (L2 flushed
  /// before each run); stores their medians and, from every round's pair,
  /// the speedup and its 95% interval, each finalist's in one transaction
  /// (Store::SetJudged). Repeated while the new top few include a config
  /// not yet judged whose time, corrected by the judging's bias (judged /
  /// first time, the median over the judged), beats the best judged one (at
  /// most kRetimePasses).
  /// Where the clock sat low twice, or the judging failed, no speedup is
  /// computed and the reason is stored (best then serves the baseline). A
  /// failure only logs (the first times stay).
  void JudgeFinalists(const v1::Job& job, const JobContext& ctx, JobTime* time);
  /// The judging call's limit: its rounds of `top` and the baseline at the
  /// slowest of their times, with a margin; at least run_timeout_floor.
  absl::Duration JudgingTimeout(const std::vector<v1::Measurement>& top, double baseline_ms) const;
  /// A verify+time call's limit: max(run_timeout_floor, run_timeout_multiple
  /// x `best_ms`).
  absl::Duration RunTimeout(double best_ms) const;
  /// Increments the version (version(), WaitForChange): a job changed.
  void NotifyChange();
  bool Cancelled(int64_t id);
  bool Stopping();

  Store* store_;
  WorkerClient* worker_;
  WorkerClient* compiler_;
  WorkerClient* ahead_compiler_;  // may be null: no compile-ahead
  int64_t device_id_;
  DaemonIdentity who_;
  JobRunnerOptions options_;
  Metrics* metrics_;  // may be null
  int64_t daemon_id_ = 0;
  // The job the GPU worker is prepared for, and its baseline on this GPU
  // (ms; 0 if none). Runner thread only.
  int64_t prepared_job_ = 0;
  double baseline_ms_ = 0;
  std::thread thread_, heartbeat_, ahead_thread_;
  absl::Mutex mu_;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t current_job_ ABSL_GUARDED_BY(mu_) = 0;  // the job of the claim being measured
  std::set<int64_t> cancelled_ ABSL_GUARDED_BY(mu_);  // ended while measured here
  // The compile-ahead list (built at its first batch; the ahead thread
  // only), the kernels to compile before the rest of it, and its progress.
  /// A kernel of the compile-ahead's list: its family, config and name;
  /// its source is made when its batch compiles (KernelOf): the whole
  /// list's sources, made at once, held 0.5 GB and took seconds of CPU for
  /// 7,306 kernels.
  struct AheadKernel {
    const Family* family;
    Config config;
    std::string name;
  };
  std::vector<AheadKernel> ahead_;
  std::deque<v1::worker::Kernel> ahead_first_ ABSL_GUARDED_BY(mu_);
  // Compile calls of jobs in flight (CompileStage on compiler_): the
  // compile-ahead waits for them, between its batches.
  int job_compiles_ ABSL_GUARDED_BY(mu_) = 0;
  // Each job's context (ContextOf; the Loop thread only).
  std::map<int64_t, std::unique_ptr<JobContext>> contexts_;
  CompileAheadProgress ahead_progress_ ABSL_GUARDED_BY(mu_);
};

/// The worker's description of one config's kernel for the shape on `device`.
v1::worker::Kernel KernelOf(const Family& family, const Config& config, const Shape& shape,
                            const v1::Device& device);


}  // namespace tuned
