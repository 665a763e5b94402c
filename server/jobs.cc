#include "server/jobs.h"

#include <algorithm>
#include <future>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/families/kernel_text.h"
#include "server/serving.h"
#include "server/worker/clock.h"  // kLowClockFraction (no CUDA there)
#include "spdlog/spdlog.h"

namespace tuned {

namespace {
/// Rounds of end-of-job re-timing at most (JobRunner::RetimeTop). 3 let a
/// config that was never re-timed win 1024^3 on the H100 with a first time
/// 20% under its true one, among ten configs within 1% (bench/results/
/// 2026-11-22_h100_sgemm_suite_arow.txt): a pass costs a few rounds
/// of the top few, so 10 are cheap.
constexpr int kRetimePasses = 10;

/// Mixed into the job id for the judging's inputs, so that they differ from
/// the ones its candidates were verified and timed on.
constexpr uint64_t kJudgingSeed = 0x9E3779B97F4A7C15ull;

/// A finished job's best configs whose neighbours the compile-ahead takes
/// first (JobRunner::QueueAhead): the model strategy starts the next shapes
/// from these winners and refines around them.
constexpr int kAheadTop = 8;

/// The compile-ahead logs its progress every this many kernels.
constexpr int64_t kAheadLogEvery = 500;

/// Strategies kept between a job's rounds (JobRunner::strategies_) at most.
constexpr size_t kMaxCachedStrategies = 64;

/// The compile cache's key of a kernel for the device (defined below).
CompileKey KeyOf(const v1::worker::Kernel& k, const v1::Device& device);

/// GFLOPS or GB/s of a run of `ms` milliseconds (Family::Work); 0 if none.
double MetricOf(const Family& family, const Shape& shape, double ms) {
  return ms > 0 ? family.Work(shape) / (ms * 1e6) : 0;
}
}  // namespace

absl::Duration JobRunner::RunTimeout(double best_ms) const {
  return std::max(options_.run_timeout_floor,
                  absl::Milliseconds(options_.run_timeout_multiple * std::max(best_ms, 0.0)));
}

absl::StatusOr<const Family*> FamilyOf(const v1::Problem& problem) {
  const Family* family = FindFamily(problem.family());
  if (family == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown kernel family ", EnumName(problem.family()),
                     " (known: sgemm, transpose)"));
  }
  if (problem.dtype() != v1::DTYPE_F32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dtype ", EnumName(problem.dtype()), " is not supported by ", std::string(family->name()),
        " (supported: f32)"));
  }
  if (auto s = family->ValidateMath(problem.math()); !s.ok()) return s;
  return family;
}

JobRunner::JobRunner(Store* store, WorkerClient* worker, WorkerClient* compiler,
                     int64_t device_id, DaemonIdentity who, JobRunnerOptions options,
                     Metrics* metrics, WorkerClient* ahead_compiler)
    : store_(store),
      worker_(worker),
      compiler_(compiler),
      ahead_compiler_(ahead_compiler),
      device_id_(device_id),
      who_(std::move(who)),
      options_(options),
      metrics_(metrics) {
  options_.compile_batch = std::max(1, options_.compile_batch);
}

JobRunner::~JobRunner() { Stop(); }

absl::Status JobRunner::Start() {
  who_.lease_seconds = options_.lease_seconds;
  auto id = store_->RegisterDaemon(device_id_, who_);
  if (!id.ok()) return id.status();
  daemon_id_ = *id;
  spdlog::info("daemon {} ({} gpu {}, {}); claims lease {} s; database {}", daemon_id_, who_.host,
               who_.gpu, who_.gpu_uuid, options_.lease_seconds, store_->name());
  thread_ = std::thread([this] { Loop(); });
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  if (options_.compile_ahead && ahead_compiler_ != nullptr) {
    ahead_thread_ = std::thread([this] { AheadLoop(); });
  }
  return absl::OkStatus();
}

void JobRunner::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    stop_ = true;
    ++version_;
  }
  compiler_->Interrupt();  // a compile batch may take a minute; nothing of it is stored
  if (ahead_compiler_ != nullptr) ahead_compiler_->Interrupt();
  if (thread_.joinable()) thread_.join();
  if (ahead_thread_.joinable()) ahead_thread_.join();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (daemon_id_ > 0) {
    if (auto s = store_->ReleaseClaims(daemon_id_, /*stopped=*/true); !s.ok()) {
      spdlog::warn("handing back this daemon's claims: {} (they go back when the lease ends)",
                   s.ToString());
    } else {
      spdlog::info("job runner stopped; its claims are back in the pool");
    }
  }
}

void JobRunner::HeartbeatLoop() {
  const absl::Duration renew = absl::Seconds(std::max(0.1, options_.lease_seconds / 3));
  absl::Time next_renewal = absl::Now();
  bool down = false;  // the database was unreachable at the last try
  while (true) {
    int64_t job;
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::Seconds(1));
      if (stop_) return;
      job = current_job_;
    }
    absl::Status s = store_->Refresh();  // another daemon's new best
    if (s.ok() && absl::Now() >= next_renewal) {
      next_renewal = absl::Now() + renew;
      auto beat = store_->Heartbeat(daemon_id_, job);
      s = beat.status();
      if (beat.ok()) {
        if (metrics_ != nullptr) metrics_->Heartbeat(beat->held);
        if (job > 0 && !beat->job_active) {  // cancelled, or ended by another daemon
          absl::MutexLock lock(&mu_);
          cancelled_.insert(job);
        }
      }
    }
    if (!s.ok() != down) {
      down = !s.ok();
      if (down) {
        spdlog::error("database {}: {}; cached kernels are still served", store_->name(),
                      s.ToString());
      } else {
        spdlog::info("database {} is back", store_->name());
      }
    }
  }
}

void JobRunner::Bump() {
  absl::MutexLock lock(&mu_);
  ++version_;
}

uint64_t JobRunner::version() {
  absl::MutexLock lock(&mu_);
  return version_;
}

uint64_t JobRunner::WaitForChange(uint64_t seen, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return version_ != seen; };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  return version_;
}

bool JobRunner::Stopping() {
  absl::MutexLock lock(&mu_);
  return stop_;
}

bool JobRunner::serving() { return !Stopping(); }

bool JobRunner::Cancelled(int64_t id) {
  absl::MutexLock lock(&mu_);
  return cancelled_.count(id) > 0;
}

absl::StatusOr<v1::Job> JobRunner::Submit(const v1::Problem& problem, const ClientQuota& quota,
                                          const SweepRequest& sweep) {
  JobSearch search{sweep.strategy.empty() ? options_.strategy : sweep.strategy,
                   options_.budget.seconds, options_.budget.configs};
  if (auto s = search::CheckStrategy(search.strategy); !s.ok()) return s;
  if (!sweep.budget.empty()) {
    auto budget = search::ParseBudget(sweep.budget);
    if (!budget.ok()) return budget.status();
    search.budget_seconds = budget->seconds;
    search.budget_configs = budget->configs;
  }
  auto family = FamilyOf(problem);
  if (!family.ok()) return family.status();
  const Shape shape(problem.shape().begin(), problem.shape().end());
  if (auto s = (*family)->ValidateProblem(shape, device(), problem.math()); !s.ok()) return s;
  std::vector<Pruned> pruned;
  const auto valid = (*family)->ValidSpace(device(), shape, &pruned, problem.math());
  if (valid.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "every config of ", std::string((*family)->name()), " was pruned for ", device().name(),
        pruned.empty() ? "" : absl::StrCat("; e.g. ", pruned.front().reason)));
  }
  // What it will measure at most, for the quota (its rounds set the total).
  int64_t total = static_cast<int64_t>(valid.size());
  if (search.budget_configs > 0) total = std::min(total, search.budget_configs);
  auto id = store_->CreateJob(device_id_, problem, static_cast<int32_t>(total),
                              static_cast<int32_t>(pruned.size()), quota, search);
  if (!id.ok()) return id.status();
  const search::Budget budget{search.budget_seconds, search.budget_configs};
  spdlog::info("job {} queued: {} {} ({} configs, {} pruned; strategy {}{}{})", *id,
               (*family)->name(), Family::ShapeString(shape), valid.size(), pruned.size(),
               search.strategy, budget.unlimited() ? "" : ", budget ", budget.ToString());
  auto job = store_->GetJob(*id);  // as submitted, before the runner is woken
  Bump();
  return job;
}

absl::StatusOr<v1::Job> JobRunner::Cancel(int64_t id) {
  auto job = store_->GetJob(id);
  if (!job.ok()) return job.status();
  if (job->state() == v1::JOB_QUEUED || job->state() == v1::JOB_RUNNING) {
    {
      absl::MutexLock lock(&mu_);
      cancelled_.insert(id);
    }
    // The job ends now; the daemons measuring it stop within one candidate
    // (this one at once, the others at their next heartbeat).
    if (auto s = store_->FinishJob(id, v1::JOB_CANCELLED, "cancelled"); !s.ok()) return s.status();
    Bump();
    spdlog::info("job {} cancelled", id);
  }
  return store_->GetJob(id);
}

void JobRunner::Loop() {
  uint64_t seen = version();
  while (!Stopping()) {
    // Jobs whose items are all done get their next round first, so that a
    // daemon finishes the job it is on (FIFO) before it starts the next one.
    const bool advanced = AdvanceIdleJobs();
    auto claim = store_->ClaimWork(daemon_id_, device_id_, prepared_job_, 2 * options_.compile_batch);
    if (!claim.ok()) {  // the database is unreachable: try again (the heartbeat logs it)
      spdlog::debug("claiming work: {}", claim.status().ToString());
      seen = WaitForChange(seen, absl::Seconds(1));
      continue;
    }
    if (!claim->has_value()) {
      {
        absl::MutexLock lock(&mu_);
        current_job_ = 0;
      }
      if (!advanced) seen = WaitForChange(seen, absl::Seconds(1));
      continue;
    }
    const Claim& c = **claim;
    if (metrics_ != nullptr) metrics_->Claimed(static_cast<int>(c.items.size()), c.taken_over);
    {
      absl::MutexLock lock(&mu_);
      current_job_ = c.job_id;
    }
    absl::Status s = RunClaim(c);
    if (absl::IsUnavailable(s)) {
      spdlog::warn("job {}: {}; its items are claimed again", c.job_id, s.ToString());
    } else if (!s.ok()) {
      FailJob(c.job_id, s);
    }
    Bump();
  }
}

bool JobRunner::AdvanceIdleJobs() {
  auto idle = store_->IdleJobs(device_id_);
  if (!idle.ok()) return false;  // the database is unreachable: ClaimWork says so too
  for (const v1::Job& job : *idle) {
    absl::Status s = Advance(job);
    if (!s.ok() && !absl::IsUnavailable(s)) FailJob(job.id(), s);
    Bump();
  }
  return !idle->empty();
}

void JobRunner::AheadLoop() {
  while (!Stopping()) {
    {  // A job's compile has the cores (NVRTC threads at nice 19 still share
       // their caches and memory bandwidth): wait for it to end.
      absl::MutexLock lock(&mu_);
      auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || job_compiles_ == 0; };
      mu_.Await(absl::Condition(&idle));
      if (stop_) return;
    }
    if (CompileAhead()) continue;
    // All compiled: wait for the neighbours of the next job's winners.
    absl::MutexLock lock(&mu_);
    auto work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !ahead_first_.empty(); };
    mu_.AwaitWithTimeout(absl::Condition(&work), absl::Seconds(10));
  }
}

void JobRunner::QueueAhead(const v1::Job& job) {
  if (!options_.compile_ahead || ahead_compiler_ == nullptr) return;
  auto family = FamilyOf(job.problem());
  auto top = JobBest(job, kAheadTop);
  if (!family.ok() || !top.ok()) return;
  const Shape shape(job.problem().shape().begin(), job.problem().shape().end());
  std::vector<v1::worker::Kernel> kernels;
  std::set<std::string> names;
  for (const auto& m : *top) {
    const Config config(m.config().params().begin(), m.config().params().end());
    for (const Config& n : (*family)->Neighbours(config)) {
      if (!(*family)->Admits(n, job.problem().math()) || !(*family)->Check(n, device()).ok() ||
          !names.insert((*family)->ConfigName(n)).second) {
        continue;
      }
      kernels.push_back(KernelOf(**family, n, shape, device()));
    }
  }
  absl::MutexLock lock(&mu_);
  ahead_first_.insert(ahead_first_.begin(), kernels.begin(), kernels.end());
}

bool JobRunner::CompileAhead() {
  {  // The neighbours of finished jobs' winners first (the cache skips what it has).
    std::vector<v1::worker::Kernel> first;
    {
      absl::MutexLock lock(&mu_);
      while (!ahead_first_.empty() && static_cast<int>(first.size()) < options_.compile_batch) {
        first.push_back(std::move(ahead_first_.front()));
        ahead_first_.pop_front();
      }
    }
    if (!first.empty()) {
      JobTime time;
      CompileStage(first, &time, ahead_compiler_);
      return !Stopping();
    }
  }
  if (ahead_.empty()) {
    std::set<std::string> names;
    for (const Family* family : AllFamilies()) {
      if (family->id() == v1::FAMILY_FAULT_TEST) continue;  // compiles forever on purpose
      const Shape shape(family->dims().size(), 1024);  // kernels do not depend on it
      for (v1::Math math : family->MathModes()) {
        for (const Config& c : family->ValidSpace(device(), nullptr, math)) {
          std::vector<Config> reach = family->Neighbours(c);
          reach.push_back(c);
          for (const Config& r : reach) {
            if (!family->Admits(r, math) || !family->Check(r, device()).ok() ||
                !names.insert(family->ConfigName(r)).second) {
              continue;
            }
            ahead_.push_back(KernelOf(*family, r, shape, device()));
          }
        }
      }
    }
    absl::MutexLock lock(&mu_);
    ahead_progress_.total = static_cast<int64_t>(ahead_.size());
    spdlog::info("compiling ahead: {} kernels (every family's space and its neighbours)",
                 ahead_.size());
  }
  int64_t done;
  {
    absl::MutexLock lock(&mu_);
    done = ahead_progress_.done;
  }
  if (done >= static_cast<int64_t>(ahead_.size())) return false;
  const auto first = ahead_.begin() + done;
  const std::vector<v1::worker::Kernel> batch(
      first, first + std::min<int64_t>(options_.compile_batch, ahead_.size() - done));
  JobTime time;
  CompileStage(batch, &time, ahead_compiler_);  // caches what compiles (or fails to); a timeout is retried later
  if (Stopping()) return false;  // the batch was interrupted: not counted
  absl::MutexLock lock(&mu_);
  ahead_progress_.done = done + static_cast<int64_t>(batch.size());
  if (ahead_progress_.done == ahead_progress_.total) {
    spdlog::info("compiled ahead: {} kernels", ahead_progress_.total);
  } else if (ahead_progress_.done / kAheadLogEvery != done / kAheadLogEvery) {
    spdlog::info("compiled ahead: {} of {} kernels", ahead_progress_.done, ahead_progress_.total);
  }
  return true;
}

void JobRunner::FailJob(int64_t id, const absl::Status& why) {
  spdlog::error("job {} failed: {}", id, why.ToString());
  if (auto f = store_->FinishJob(id, v1::JOB_FAILED, why.ToString()); !f.ok()) {
    spdlog::error("job {}: cannot record failure: {}", id, f.status().ToString());
  }
}

absl::Status JobRunner::RunClaim(const Claim& claim) {
  auto job = store_->GetJob(claim.job_id);
  if (!job.ok()) return job.status();
  if (job->state() != v1::JOB_QUEUED && job->state() != v1::JOB_RUNNING) return absl::OkStatus();
  auto family_or = FamilyOf(job->problem());
  if (!family_or.ok()) return family_or.status();
  const Family& family = **family_or;
  JobTime time;
  if (prepared_job_ != job->id()) {
    auto prepared = Prepare(*job, &time);
    AddTime(job->id(), &time);
    if (!prepared.ok()) return prepared;
  }
  std::vector<Config> configs;
  bool retime = false;
  for (const WorkItem& item : claim.items) {
    if (item.retime) {
      retime = true;
    } else {
      configs.emplace_back(item.config.params().begin(), item.config.params().end());
    }
  }
  spdlog::info("job {}: {} {}: claimed {} configs of round {}{}{}", job->id(), family.name(),
               Family::ShapeString(Shape(job->problem().shape().begin(), job->problem().shape().end())),
               configs.size(), claim.items.empty() ? 0 : claim.items.front().round,
               retime ? " and its re-timing" : "",
               claim.taken_over > 0 ? absl::StrCat(" (", claim.taken_over, " after a lease ran out)")
                                    : "");
  double best_ms = job->has_best() ? job->best().median_ms() : 0;
  auto ran = MeasureAll(*job, family, configs, &best_ms);
  if (!ran.ok()) return ran.status();
  if (*ran != Ran::kAll || !retime) return absl::OkStatus();
  RetimeTop(*job, family, &time);
  AddTime(job->id(), &time);
  return Finish(job->id());
}

absl::Status JobRunner::Advance(const v1::Job& job) {
  auto family_or = FamilyOf(job.problem());
  if (!family_or.ok()) return family_or.status();
  const Family& family = **family_or;
  auto to_items = [&family](const std::vector<Config>& configs) {
    std::vector<v1::KernelConfig> items;
    for (const Config& c : configs) {
      v1::KernelConfig& k = items.emplace_back();
      k.set_name(family.ConfigName(c));
      for (const auto& [name, value] : c) (*k.mutable_params())[name] = value;
    }
    return items;
  };
  const Shape shape(job.problem().shape().begin(), job.problem().shape().end());
  if (job.round() > 0 && device().compile_only()) {  // nothing is timed
    strategies_.erase(job.id());
    return Finish(job.id());
  }
  // The strategy (server/search/) picks the next round's configs; empty: the
  // search is over.
  const std::string name = job.strategy().empty() ? std::string(search::kExhaustive) : job.strategy();
  // Made (its cost model fitted) once per job on this daemon, not every round;
  // jobs that ended elsewhere (cancelled, another daemon's last round) leave
  // entries, dropped all at once past a bound.
  if (strategies_.size() > kMaxCachedStrategies) strategies_.clear();
  std::unique_ptr<search::Strategy>& strategy = strategies_[job.id()];
  if (strategy == nullptr || strategy->name() != name) {
    std::vector<search::Record> records;
    if (name != search::kExhaustive) {
      auto known = Knowledge(family, shape, job.problem().math());
      if (!known.ok()) return known.status();
      records = *std::move(known);
    }
    auto made = search::MakeStrategy(name, family, device(), std::move(records),
                                     options_.refine_top);
    if (!made.ok()) {
      strategies_.erase(job.id());
      return made.status();
    }
    strategy = *std::move(made);
  }
  search::RoundInput in;
  in.family = &family;
  in.device = device();
  in.shape = shape;
  in.round = job.round();
  std::vector<Pruned> pruned;
  in.math = job.problem().math();
  in.valid = family.ValidSpace(device(), shape, &pruned, in.math);
  if (in.valid.empty()) return absl::FailedPreconditionError("every config was pruned");
  in.budget = {job.budget_seconds(), job.budget_configs()};
  in.spent_seconds = job.measure_seconds();
  // A config is compiled if the cache holds its kernel's outcome (a failed
  // compile costs no wait either); a database error counts as not compiled.
  in.compiled = [&](const Config& c) {
    auto hit = store_->HasCompiled(KeyOf(KernelOf(family, c, shape, device()), device()));
    return hit.ok() && *hit;
  };
  if (job.round() > 0) {
    auto top = JobBest(job, std::max(3, options_.refine_top));
    if (!top.ok()) return top.status();
    for (const auto& m : *top) {
      in.best.emplace_back(m.config().params().begin(), m.config().params().end());
      in.best_ms.push_back(m.median_ms());
    }
    auto measured = store_->MeasuredConfigs(job.id());
    if (!measured.ok()) return measured.status();
    in.measured = *std::move(measured);
  }
  const std::vector<Config> next = strategy->NextRound(in);
  if (job.round() == 0 && next.empty()) {
    return absl::FailedPreconditionError("the strategy chose no config");
  }
  if (!next.empty()) {
    auto added = store_->AddRound(job.id(), job.round(), to_items(next));
    if (added.ok() && *added) {
      if (job.round() == 0) {
        spdlog::info("job {}: {} {}: {}; round 1: {} configs ({} in the space, {} pruned)",
                     job.id(), family.name(), Family::ShapeString(shape), strategy->Describe(),
                     next.size(), in.valid.size(), pruned.size());
      } else {
        spdlog::info("job {}: round {}: {} configs near its best", job.id(), job.round() + 1,
                     next.size());
      }
    }
    return added.status();
  }
  strategies_.erase(job.id());  // the search is over (`strategy` dangles from here)
  if (options_.retime_top >= 1) {  // the finalists, judged on one GPU
    return store_->AddRound(job.id(), job.round(), {}, /*retime=*/true).status();
  }
  return Finish(job.id());
}

absl::Status JobRunner::Finish(int64_t id) {
  auto done = store_->GetJob(id);
  if (!done.ok()) return done.status();
  // No config passed verification (e.g. MATH_TF32 at K = 1, where no TF32
  // kernel meets the bound that cuBLAS's fp32 result sets): where the
  // family's baseline computes the same result and the job timed it, that
  // is the answer, and the job is DONE with a note (GetBest then serves the
  // baseline: db/store.h BestRow::baseline_only); otherwise it failed.
  std::string note;
  if (!done->has_best() && !device().compile_only()) {
    const Family* family = FindFamily(done->problem().family());
    if (family == nullptr || !family->baseline_is_candidate() || !(done->baseline_ms() > 0)) {
      const std::string why = "no config passed verification";
      auto failed = store_->FinishJob(id, v1::JOB_FAILED, why);
      if (failed.ok() && *failed) {
        spdlog::warn("job {} failed: {} ({} failed{})", id, why, done->failed(),
                     family != nullptr && !family->baseline_is_candidate()
                         ? absl::StrCat("; ", std::string(family->name()), "'s baseline is no answer")
                         : "; no baseline timed");
      }
      return failed.status();
    }
    note = absl::StrFormat("no config passed verification; the baseline (%s, %.4f ms) is served",
                           done->baseline_name(), done->baseline_ms());
  }
  auto ended = store_->FinishJob(id, v1::JOB_DONE, note);
  if (!ended.ok()) return ended.status();
  if (*ended) {
    QueueAhead(*done);
    spdlog::info("job {} done: {} ok, {} failed; {}; compile {:.1f} s, measure "
                 "{:.1f} s, wait {:.1f} s, {} worker restarts, {} cached",
                 id, done->done(), done->failed(),
                 note.empty() ? absl::StrFormat("best %s %.4f ms", done->best().config().name(),
                                                done->best().median_ms())
                              : note,
                 done->compile_seconds(), done->measure_seconds(), done->wait_seconds(),
                 done->worker_restarts(), done->cached());
  }
  return absl::OkStatus();
}

absl::Status JobRunner::Prepare(const v1::Job& job, JobTime* time) {
  prepared_job_ = 0;
  v1::worker::Request request;
  request.mutable_prepare()->set_seed(static_cast<uint64_t>(job.id()));
  *request.mutable_prepare()->mutable_problem() = job.problem();
  const absl::Time start = absl::Now();
  auto response = worker_->Call(request, options_.prepare_timeout);
  if (!response.ok()) {  // the worker died or hung: one restart and retry
    ++time->worker_restarts;
    if (auto s = worker_->Restart(); !s.ok()) return s;
    response = worker_->Call(request, options_.prepare_timeout);
    if (!response.ok()) return response.status();
  }
  time->measure_seconds += absl::ToDoubleSeconds(absl::Now() - start);
  if (!response->error().empty()) return absl::InternalError(response->error());
  const auto& p = response->prepared();
  prepared_job_ = job.id();
  baseline_ms_ = p.baseline_ms();
  if (p.clock_low()) {
    // Its ratios are not used to serve: the judging at the job's end times
    // the baseline again, in a fresh process, and computes no speedup from
    // a low clock.
    spdlog::warn("job {}: {} timed at {} MHz, under {:.0f}% of the SM clock's maximum, twice: "
                 "{:.4f} ms is suspect", job.id(), p.baseline_name(), p.sm_clock_mhz(),
                 100 * kLowClockFraction, p.baseline_ms());
  }
  if (p.baseline_error() > 0) {
    spdlog::info("job {}: {} error {:.3g} against the fp64 reference; bound {:.3g}", job.id(),
                 p.baseline_name(), p.baseline_error(), p.tolerance());
    if (auto s = store_->SetJobErrorBound(job.id(), p.baseline_error(), p.tolerance()); !s.ok()) {
      return s;
    }
  }
  if (p.baseline_ms() > 0) {
    const Family* family = FindFamily(job.problem().family());
    const Shape shape(job.problem().shape().begin(), job.problem().shape().end());
    spdlog::info("job {}: {} {:.4f} ms", job.id(), p.baseline_name(), p.baseline_ms());
    return store_->SetJobBaseline(job.id(), p.baseline_ms(),
                                  MetricOf(*family, shape, p.baseline_ms()), p.baseline_name());
  }
  return absl::OkStatus();
}

v1::worker::Kernel KernelOf(const Family& family, const Config& config, const Shape& shape,
                            const v1::Device& device) {
  const KernelSource src = family.Source(config);
  v1::worker::Kernel kernel;
  kernel.set_name(family.ConfigName(config));
  kernel.set_source(SourceText(src));
  kernel.set_name_expression(src.name_expression);
  for (const auto& o : src.options) kernel.add_options(o);
  *kernel.mutable_geometry() = family.Geometry(config, shape, device);
  return kernel;
}

namespace {

CompileKey KeyOf(const v1::worker::Kernel& k, const v1::Device& device) {
  return {k.source(), k.name_expression(), absl::StrJoin(k.options(), "\n"),
          absl::StrCat("sm_", device.cc_major(), device.cc_minor()), device.nvrtc_version()};
}

v1::worker::MeasureResult FromCache(const CompiledRow& row) {
  v1::worker::MeasureResult r;
  r.set_status(row.ok ? v1::MEASUREMENT_COMPILED : v1::MEASUREMENT_COMPILE_ERROR);
  r.set_message(row.message);
  r.set_cubin(row.binary.cubin);
  r.set_ptx(row.binary.ptx);
  r.set_entry(row.binary.entry);
  r.set_registers(row.registers);
  r.set_local_bytes(row.local_bytes);
  r.set_compile_ms(row.compile_ms);
  r.set_cached(true);
  return r;
}

CompiledRow ToCache(const v1::worker::Kernel& k, const v1::worker::MeasureResult& r) {
  CompiledRow row;
  row.ok = r.status() == v1::MEASUREMENT_COMPILED;
  row.message = r.message();
  if (row.ok) row.binary = {k.source(), r.entry(), r.cubin(), r.ptx(), r.message()};
  row.registers = r.registers();
  row.local_bytes = r.local_bytes();
  row.compile_ms = r.compile_ms();
  return row;
}

/// Whether a result means the GPU worker is gone or unusable.
bool BrokeWorker(v1::MeasurementStatus s) {
  return s == v1::MEASUREMENT_DEVICE_FAULT || s == v1::MEASUREMENT_RUN_TIMEOUT ||
         s == v1::MEASUREMENT_WORKER_DIED;
}

}  // namespace

std::vector<v1::worker::MeasureResult> JobRunner::CompileStage(
    const std::vector<v1::worker::Kernel>& kernels, JobTime* time, WorkerClient* compiler) {
  const absl::Time start = absl::Now();
  std::vector<v1::worker::MeasureResult> results(kernels.size());
  std::vector<size_t> misses;
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto hit = store_->LookupCompiled(KeyOf(kernels[i], device()));
    if (hit.ok() && hit->has_value()) {
      results[i] = FromCache(**hit);
      ++time->cached;
    } else {
      if (!hit.ok()) spdlog::warn("compile cache: {}", hit.status().ToString());
      misses.push_back(i);
    }
  }
  // Keeps a compiler's answer (COMPILED or COMPILE_ERROR), caching it.
  auto keep = [&](size_t i, const v1::worker::MeasureResult& r) {
    results[i] = r;
    if (r.status() == v1::MEASUREMENT_COMPILED || r.status() == v1::MEASUREMENT_COMPILE_ERROR) {
      if (auto s = store_->AddCompiled(KeyOf(kernels[i], device()), ToCache(kernels[i], r)); !s.ok()) {
        spdlog::warn("compile cache: {}", s.ToString());
      }
    }
  };
  auto call = [&](const std::vector<size_t>& which) -> absl::StatusOr<v1::worker::CompileResult> {
    if (Stopping()) return absl::CancelledError("the daemon is stopping");  // nothing is stored
    if (!compiler->alive()) {
      if (auto s = compiler->Restart(); !s.ok()) return s;
    }
    v1::worker::Request request;
    for (size_t i : which) *request.mutable_compile()->add_kernels() = kernels[i];
    const bool job = compiler == compiler_;
    if (job) {
      absl::MutexLock lock(&mu_);
      ++job_compiles_;
    }
    auto response = compiler->Call(request, options_.compile_timeout);
    if (job) {
      absl::MutexLock lock(&mu_);
      --job_compiles_;
    }
    if (!response.ok()) return response.status();
    if (!response->error().empty()) return absl::InternalError(response->error());
    if (response->compiled().results_size() != static_cast<int>(which.size())) {
      return absl::InternalError("compiler answered with the wrong number of results");
    }
    return response->compiled();
  };
  // A kernel whose compile timed out or killed the compiler (not cached).
  auto failed = [&](size_t i, const absl::Status& why) {
    v1::worker::MeasureResult r;
    r.set_status(absl::IsDeadlineExceeded(why) ? v1::MEASUREMENT_COMPILE_TIMEOUT
                                               : v1::MEASUREMENT_COMPILE_ERROR);
    r.set_message(absl::StrCat("compiler: ", why.message()));
    spdlog::warn("{}: {}", kernels[i].name(), r.message());
    results[i] = r;
  };
  if (!misses.empty()) {
    auto batch = call(misses);
    if (batch.ok()) {
      for (size_t j = 0; j < misses.size(); ++j) keep(misses[j], batch->results(static_cast<int>(j)));
    } else if (misses.size() == 1) {
      failed(misses[0], batch.status());
    } else {
      // A hang or crash somewhere in the batch: each kernel alone finds it.
      spdlog::warn("compile batch of {}: {}; compiling one at a time", misses.size(),
                   batch.status().ToString());
      for (size_t i : misses) {
        auto one = call({i});
        if (one.ok()) {
          keep(i, one->results(0));
        } else {
          failed(i, one.status());
        }
      }
    }
  }
  time->compile_seconds += absl::ToDoubleSeconds(absl::Now() - start);
  return results;
}

absl::Status JobRunner::MeasureOne(const v1::Job& job, const Family& family, const Config& config,
                                   const v1::worker::Kernel& kernel,
                                   const v1::worker::MeasureResult& compiled, double* best_ms,
                                   JobTime* time) {
  const Shape shape(job.problem().shape().begin(), job.problem().shape().end());
  const absl::Time started = absl::Now();  // for metrics
  v1::Measurement m;
  m.mutable_config()->set_name(kernel.name());
  for (const auto& [k, v] : config) (*m.mutable_config()->mutable_params())[k] = v;
  m.set_metric_unit(std::string(family.metric_unit()));
  m.set_job_id(job.id());

  v1::worker::MeasureResult r;
  auto crashes = store_->CrashCount(device_id_, family.id(), kernel.name());
  if (!crashes.ok()) return crashes.status();
  if (*crashes >= options_.quarantine_after) {
    r.set_status(v1::MEASUREMENT_QUARANTINED);
    r.set_message(absl::StrCat("quarantined: it broke the GPU worker ", *crashes,
                               " times before; not run"));
  } else if (compiled.status() != v1::MEASUREMENT_COMPILED) {
    r = compiled;  // a compile error or timeout ends here
  } else {
    v1::worker::Request request;
    *request.mutable_measure()->mutable_kernel() = kernel;
    request.mutable_measure()->set_best_ms(*best_ms);
    request.mutable_measure()->set_max_repetitions(search::SearchRepetitions(job.strategy()));
    *request.mutable_measure()->mutable_compiled() = compiled;
    const absl::Time start = absl::Now();
    auto response = worker_->Call(request, RunTimeout(*best_ms));
    time->measure_seconds += absl::ToDoubleSeconds(absl::Now() - start);
    if (response.ok() && response->error().empty()) {
      r = response->measured();
    } else {
      r.set_status(response.ok() ? v1::MEASUREMENT_LAUNCH_ERROR
                   : absl::IsDeadlineExceeded(response.status()) ? v1::MEASUREMENT_RUN_TIMEOUT
                                                                 : v1::MEASUREMENT_WORKER_DIED);
      r.set_message(response.ok() ? response->error() : std::string(response.status().message()));
    }
  }

  m.set_status(r.status());
  m.set_median_ms(r.median_ms());
  m.set_error(r.error());
  m.set_message(r.status() == v1::MEASUREMENT_OK ? "" : r.message());
  m.set_repetitions(r.repetitions());
  m.set_sm_clock_mhz(r.sm_clock_mhz());
  m.set_clock_low(r.clock_low());
  m.set_registers(r.registers());
  KernelBinary binary;
  if (r.status() == v1::MEASUREMENT_OK && r.median_ms() > 0) {
    m.set_metric(MetricOf(family, shape, r.median_ms()));
    *best_ms = *best_ms > 0 ? std::min(*best_ms, r.median_ms()) : r.median_ms();
    binary = {kernel.source(), r.entry(), r.cubin(), r.ptx(), ""};
  }
  const bool restart = BrokeWorker(r.status()) || r.worker_exits() || !worker_->alive();
  spdlog::debug("job {}: {} {} {:.4f} ms", job.id(), kernel.name(),
                v1::MeasurementStatus_Name(m.status()), m.median_ms());
  // A measurement is not given up while the database is briefly away.
  for (absl::Duration pause = absl::Milliseconds(100);; pause = std::min(pause * 2, absl::Seconds(5))) {
    auto stored = store_->AddMeasurement(job.id(), m, binary.cubin.empty() ? nullptr : &binary,
                                         daemon_id_, baseline_ms_);
    if (stored.ok()) {
      if (!*stored) {
        spdlog::warn("job {}: {} was measured by another daemon too (a lease ran out); the "
                     "first measurement stays", job.id(), kernel.name());
        if (metrics_ != nullptr) metrics_->MeasuredTwice();
      }
      break;
    }
    const absl::Status& s = stored.status();
    if (!absl::IsUnavailable(s) || Stopping()) return s;
    spdlog::warn("job {}: storing {}: {}; retrying", job.id(), kernel.name(), s.ToString());
    absl::SleepFor(pause);
  }
  if (metrics_ != nullptr) {
    metrics_->Measured(m, compiled.cached() ? 0 : compiled.compile_ms(), absl::Now() - started);
  }
  Bump();
  if (restart) {
    const std::string what =
        absl::StrCat(v1::MeasurementStatus_Name(m.status()), ": ", m.message());
    auto count = store_->AddCrash(device_id_, family.id(), kernel.name(), what);
    if (!count.ok()) return count.status();
    spdlog::warn("job {}: {} broke the GPU worker ({} time(s)): {}", job.id(), kernel.name(),
                 *count, what);
    const absl::Time start = absl::Now();
    ++time->worker_restarts;
    if (auto s = worker_->Restart(); !s.ok()) return s;
    if (auto s = Prepare(job, time); !s.ok()) return s;
    time->wait_seconds += absl::ToDoubleSeconds(absl::Now() - start);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<search::Record>> JobRunner::Knowledge(const Family& family,
                                                                 const Shape& except,
                                                                 v1::Math math) {
  auto shapes = store_->TunedShapes(device_id_, family.id(), v1::DTYPE_F32, math);
  if (!shapes.ok()) return shapes.status();
  std::vector<search::Record> records;
  for (const auto& shape : *shapes) {
    if (shape == except) continue;  // its own measurements: a re-sweep learns nothing from them
    v1::Problem problem;
    problem.set_family(family.id());
    problem.set_dtype(v1::DTYPE_F32);
    problem.set_math(math);
    for (int64_t d : shape) problem.add_shape(d);
    auto all = store_->ListMeasurements(device_id_, problem, 0);
    if (!all.ok()) return all.status();
    for (const auto& m : *all) {
      if (m.status() != v1::MEASUREMENT_OK || m.median_ms() <= 0) continue;
      Config config(m.config().params().begin(), m.config().params().end());
      if (!family.CheckParams(config).ok()) continue;  // of an older space
      records.push_back({shape, std::move(config), m.median_ms()});
    }
  }
  return records;
}

absl::StatusOr<std::vector<v1::Measurement>> JobRunner::JobBest(const v1::Job& job, int n) {
  auto all = store_->ListMeasurements(device_id_, job.problem(), 0);  // OK first, fastest first
  if (!all.ok()) return all.status();
  std::vector<v1::Measurement> best;
  for (auto& m : *all) {
    if (static_cast<int>(best.size()) == n) break;
    if (m.job_id() == job.id() && m.status() == v1::MEASUREMENT_OK) best.push_back(std::move(m));
  }
  return best;
}

void JobRunner::RetimeTop(const v1::Job& job, const Family& family, JobTime* time) {
  if (options_.retime_top < 1) return;
  const Shape shape(job.problem().shape().begin(), job.problem().shape().end());
  const std::string base =
      job.baseline_name().empty() ? std::string(family.baseline_name()) : job.baseline_name();
  // The top few as they stand; a judging failure is stored with them, so
  // that best serves the baseline rather than an unjudged kernel.
  auto fail_all = [&](const std::vector<v1::Measurement>& top, const std::string& why) {
    spdlog::warn("job {}: judging the finalists failed: {}; their earlier times stay", job.id(), why);
    for (const auto& m : top) {
      StoredSpeedup none{.note = absl::StrCat("the judging failed: ", why),
                         .sm_clock_mhz = m.sm_clock_mhz(), .clock_low = m.clock_low()};
      if (auto s = store_->SetSpeedup(job.id(), m.config().name(), none); !s.ok()) {
        spdlog::warn("job {}: {}", job.id(), s.ToString());
      }
    }
    Bump();
  };
  // A fresh worker process, not the one that measured hundreds of kernels,
  // on fresh inputs (another seed): what a client's process sees.
  prepared_job_ = 0;
  {
    auto top = JobBest(job, options_.retime_top);
    if (!top.ok() || top->empty()) return;
    const absl::Time start = absl::Now();
    absl::Status fresh = worker_->Respawn();
    v1::worker::Request prepare;
    prepare.mutable_prepare()->set_seed(static_cast<uint64_t>(job.id()) ^ kJudgingSeed);
    *prepare.mutable_prepare()->mutable_problem() = job.problem();
    if (fresh.ok()) {
      auto response = worker_->Call(prepare, options_.prepare_timeout);
      if (!response.ok()) {
        fresh = response.status();
      } else if (!response->error().empty()) {
        fresh = absl::InternalError(response->error());
      }
    }
    time->measure_seconds += absl::ToDoubleSeconds(absl::Now() - start);
    if (!fresh.ok()) {
      fail_all(*top, fresh.ToString());
      ++time->worker_restarts;
      if (auto s = worker_->Restart(); !s.ok()) spdlog::error("{}", s.ToString());
      return;
    }
  }
  std::set<std::string> retimed;
  for (int pass = 0; pass < kRetimePasses; ++pass) {
    auto best = JobBest(job, options_.retime_top);
    if (!best.ok()) {
      spdlog::warn("job {}: re-timing: {}", job.id(), best.status().ToString());
      return;
    }
    const std::vector<v1::Measurement>& top = *best;
    std::vector<v1::worker::Kernel> kernels;
    bool unjudged = false;
    for (const auto& m : top) {
      const Config config(m.config().params().begin(), m.config().params().end());
      // The geometry GetBest returns for the shape (Family::Geometry on this device).
      kernels.push_back(KernelOf(family, config, shape, device()));
      unjudged |= retimed.count(m.config().name()) == 0;
    }
    if (top.empty() || !unjudged) return;
    // The cubins stored with the measurements: what GetBest serves.
    std::vector<v1::worker::MeasureResult> compiled;
    for (const auto& m : top) {
      auto binary = store_->MeasurementBinary(job.id(), m.config().name());
      if (!binary.ok()) {
        fail_all(top, binary.status().ToString());
        return;
      }
      v1::worker::MeasureResult& c = compiled.emplace_back();
      c.set_status(v1::MEASUREMENT_COMPILED);
      c.set_cubin(binary->cubin);
      c.set_ptx(binary->ptx);
      c.set_entry(binary->entry);
    }
    v1::worker::Request request;
    for (size_t i = 0; i < kernels.size(); ++i) {
      *request.mutable_retime()->add_kernels() = kernels[i];
      *request.mutable_retime()->add_compiled() = compiled[i];
    }
    const absl::Time start = absl::Now();
    auto response = worker_->Call(request, JudgingTimeout(top, job.baseline_ms()));
    time->measure_seconds += absl::ToDoubleSeconds(absl::Now() - start);
    if (!response.ok() || !response->error().empty() ||
        response->retimed().median_ms_size() != static_cast<int>(top.size()) ||
        response->retimed().samples_size() != static_cast<int>(top.size())) {
      fail_all(top, response.ok() ? response->error() : response.status().ToString());
      if (!worker_->alive() || (response.ok() && !response->error().empty())) {
        ++time->worker_restarts;
        if (auto s = worker_->Restart(); !s.ok()) spdlog::error("{}", s.ToString());
      }
      return;
    }
    const auto& r = response->retimed();
    const std::vector<double> baseline_samples(r.baseline_samples().begin(), r.baseline_samples().end());
    const std::string low_clock =
        r.clock_low() ? absl::StrFormat("the SM clock sat at %d MHz, under %.0f%% of its %d MHz, while %s "
                                        "and the finalists were timed, and again when re-timed",
                                        r.sm_clock_mhz(), 100 * kLowClockFraction,
                                        r.max_sm_clock_mhz(), base)
                      : "";
    for (size_t i = 0; i < top.size(); ++i) {
      const int k = static_cast<int>(i);
      const double ms = r.median_ms(k);
      const std::string& name = top[i].config().name();
      const std::string note = absl::StrFormat(
          "judged at the job's end in a fresh worker process with its top %d and %s, interleaved, "
          "%d rounds in %d segments (before: %.4f ms)%s",
          static_cast<int>(top.size()), base, r.rounds(), std::max(r.segments(), 1),
          top[i].median_ms(),
          r.clock_low() ? absl::StrCat("; clock low: ", r.sm_clock_mhz(), " MHz") : "");
      // A baseline timed on a down-clocked GPU reaches no ratio: not stored.
      StoredSpeedup judged;
      judged.sm_clock_mhz = r.sm_clock_mhz();
      judged.clock_low = r.clock_low();
      if (r.clock_low()) {
        judged.note = low_clock;
      } else {
        const std::vector<double> kernel_samples(r.samples(k).ms().begin(), r.samples(k).ms().end());
        auto interval = BootstrapSpeedup(kernel_samples, baseline_samples);
        if (interval.ok()) {
          judged.speedup = interval->speedup;
          judged.ci_low = interval->low;
          judged.ci_high = interval->high;
          judged.pairs = interval->pairs;
        } else {
          judged.note = std::string(interval.status().message());
        }
      }
      const Store::Retimed time{.median_ms = ms, .metric = MetricOf(family, shape, ms), .note = note,
                                .baseline_ms = r.clock_low() ? 0 : r.baseline_ms()};
      if (auto s = store_->SetJudged(job.id(), name, time, judged); !s.ok()) {
        spdlog::warn("job {}: {}", job.id(), s.ToString());
      }
      retimed.insert(name);
      spdlog::info("job {}: {} judged {:.4f} ms (before {:.4f} ms): {}", job.id(), name, ms,
                   top[i].median_ms(),
                   judged.pairs > 0
                       ? FormatSpeedup({judged.speedup, judged.ci_low, judged.ci_high, judged.pairs})
                       : judged.note);
    }
    if (r.baseline_ms() > 0 && !r.clock_low()) {
      if (auto s = store_->SetJobBaseline(job.id(), r.baseline_ms(),
                                          MetricOf(family, shape, r.baseline_ms()), base);
          !s.ok()) {
        spdlog::warn("job {}: {}", job.id(), s.ToString());
      }
    }
    Bump();
  }
}

absl::Duration JobRunner::JudgingTimeout(const std::vector<v1::Measurement>& top,
                                         double baseline_ms) const {
  double slowest = baseline_ms;
  for (const auto& m : top) slowest = std::max(slowest, m.median_ms());
  // Two attempts (a low clock) of at most 103 rounds (kRetimeMaxRounds and
  // kRetimeWarmupRounds of server/worker/measure.h) of every finalist and
  // the baseline, with room for flushes and a slower GPU.
  const double ms = 2 * 103 * static_cast<double>(top.size() + 1) * slowest * 4;
  return std::max(options_.run_timeout_floor, absl::Milliseconds(ms) + absl::Seconds(30));
}

void JobRunner::AddTime(int64_t id, JobTime* time) {
  if (auto s = store_->AddJobTime(id, *time); !s.ok()) spdlog::warn("job {}: {}", id, s.ToString());
  *time = {};
}

absl::StatusOr<JobRunner::Ran> JobRunner::MeasureAll(const v1::Job& job, const Family& family,
                                                     const std::vector<Config>& configs,
                                                     double* best_ms) {
  const Shape shape(job.problem().shape().begin(), job.problem().shape().end());
  std::vector<std::vector<v1::worker::Kernel>> batches;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (i % options_.compile_batch == 0) batches.emplace_back();
    batches.back().push_back(KernelOf(family, configs[i], shape, device()));
  }
  // The compiler works one batch ahead of the GPU.
  JobTime time, compile_time;
  double measured_seconds = 0;  // by this call, beside job.measure_seconds() at its claim
  auto compile = [&](size_t b) {
    return std::async(std::launch::async,
                      [this, &batches, &compile_time, b] { return CompileStage(batches[b], &compile_time, compiler_); });
  };
  std::future<std::vector<v1::worker::MeasureResult>> next;
  if (!batches.empty()) next = compile(0);
  for (size_t b = 0; b < batches.size(); ++b) {
    const absl::Time wait_start = absl::Now();
    const auto compiled = next.get();
    time.wait_seconds += absl::ToDoubleSeconds(absl::Now() - wait_start);
    time.compile_seconds += compile_time.compile_seconds;
    time.cached += compile_time.cached;
    compile_time = {};
    if (b + 1 < batches.size()) next = compile(b + 1);
    for (size_t i = 0; i < batches[b].size(); ++i) {
      const Ran stop = Stopping()              ? Ran::kStopping
                       : Cancelled(job.id()) ? Ran::kCancelled
                                             : Ran::kAll;
      if (stop != Ran::kAll) {
        AddTime(job.id(), &time);
        return stop;
      }
      if (job.budget_seconds() > 0 &&
          job.measure_seconds() + measured_seconds + time.measure_seconds >= job.budget_seconds()) {
        measured_seconds += time.measure_seconds;
        AddTime(job.id(), &time);
        auto skipped = store_->SkipRemaining(job.id());
        if (!skipped.ok()) return skipped.status();
        spdlog::info("job {}: its budget of {} s is spent ({:.2f} s); {} configs skipped",
                     job.id(), job.budget_seconds(), job.measure_seconds() + measured_seconds,
                     *skipped);
        return Ran::kBudget;
      }
      const Config& config = configs[b * options_.compile_batch + i];
      if (auto s = MeasureOne(job, family, config, batches[b][i], compiled[i], best_ms, &time);
          !s.ok()) {
        AddTime(job.id(), &time);
        return s;
      }
    }
    measured_seconds += time.measure_seconds;
    AddTime(job.id(), &time);
  }
  return Ran::kAll;
}

}  // namespace tuned
