// The job runner's lifecycle (server/jobs/jobs.h): start and stop, the heartbeat,
// submitting and cancelling, the claim loop, a job's rounds and its end.
// Compiling is in compile.cc, measuring in measure.cc, judging
// the finalists in judge.cc.
#include "server/jobs/jobs.h"

#include <algorithm>
#include <future>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "families/kernel_text.h"
#include "server/families.h"
#include "server/jobs/internal.h"
#include "core/status.h"
#include "spdlog/spdlog.h"

namespace tuned {

using jobs_internal::KeyOf;

namespace {
/// Job contexts kept (JobRunner::contexts_) at most: jobs that ended
/// elsewhere (cancelled, another daemon's last round) leave theirs, dropped
/// all at once past this bound.
constexpr size_t kMaxContexts = 64;
}  // namespace

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
  who_.user_kernels = options_.user_kernels;
  who_.sandbox = worker_->sandbox();
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
  compiler_->Interrupt();  // a compile may take a minute; what it had not delivered is lost
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

void JobRunner::NotifyChange() {
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

absl::StatusOr<v1::Job> JobRunner::Submit(const ResolvedProblem& resolved, const ClientQuota& quota,
                                          const SweepRequest& sweep) {
  JobSearch search{sweep.strategy.empty() ? options_.strategy : sweep.strategy,
                   options_.budget.seconds, options_.budget.configs};
  TUNED_RETURN_IF_ERROR(search::CheckStrategy(search.strategy));
  if (!sweep.budget.empty()) {
    auto budget = search::ParseBudget(sweep.budget);
    if (!budget.ok()) return budget.status();
    search.budget_seconds = budget->seconds;
    search.budget_configs = budget->configs;
  }
  const Family* family = resolved.family;
  const v1::Problem& problem = resolved.problem;
  if (!family->is_builtin() && !options_.user_kernels) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this daemon does not run kernel specs' code: start it with --allow-user-kernels, or "
        "submit the sweep of ", std::string(family->name()), " to a daemon that allows them"));
  }
  const Shape& shape = resolved.shape;
  TUNED_RETURN_IF_ERROR(family->ValidateProblem(shape, device(), problem.math()));
  std::vector<Pruned> pruned;
  const auto valid =
      family->ValidSpace(device(), shape, &pruned, problem.math(), problem.layout());
  if (valid.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "every config of ", std::string(family->name()), " was pruned for ", device().name(),
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
               family->name(), Family::ShapeString(shape), valid.size(), pruned.size(),
               search.strategy, budget.unlimited() ? "" : ", budget ", budget.ToString());
  auto job = store_->GetJob(*id);  // as submitted, before the runner is woken
  NotifyChange();
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
    NotifyChange();
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
    auto claim = store_->ClaimWork(daemon_id_, device_id_, prepared_job_, 2 * options_.compile_batch,
                                   options_.user_kernels);
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
      // A job submitted to another daemon of the fleet changes nothing
      // here: this daemon learns of it by claiming again, within kIdlePoll.
      if (!advanced) seen = WaitForChange(seen, kIdlePoll);
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
    NotifyChange();
  }
}

bool JobRunner::AdvanceIdleJobs() {
  auto idle = store_->IdleJobs(device_id_, options_.user_kernels);
  if (!idle.ok()) return false;  // the database is unreachable: ClaimWork says so too
  for (const v1::Job& job : *idle) {
    absl::Status s = Advance(job);
    if (!s.ok() && !absl::IsUnavailable(s)) FailJob(job.id(), s);
    NotifyChange();
  }
  return !idle->empty();
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
  auto ctx_or = ContextOf(*job);
  if (!ctx_or.ok()) return ctx_or.status();
  JobContext& ctx = **ctx_or;
  const Family& family = *ctx.family;
  JobTime time;
  if (prepared_job_ != job->id()) {
    auto prepared = Prepare(*job, ctx, &time);
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
               Family::ShapeString(ctx.shape),
               configs.size(), claim.items.empty() ? 0 : claim.items.front().round,
               retime ? " and its re-timing" : "",
               claim.taken_over > 0 ? absl::StrCat(" (", claim.taken_over, " after a lease ran out)")
                                    : "");
  double best_ms = job->has_best() ? job->best().median_ms() : 0;
  auto ran = MeasureAll(*job, ctx, configs, &best_ms);
  if (!ran.ok()) return ran.status();
  if (*ran != MeasureOutcome::kAll || !retime) return absl::OkStatus();
  JudgeFinalists(*job, ctx, &time);
  AddTime(job->id(), &time);
  return Finish(job->id(), ctx);
}

absl::StatusOr<JobContext*> JobRunner::ContextOf(const v1::Job& job) {
  if (auto it = contexts_.find(job.id()); it != contexts_.end()) return it->second.get();
  // A job of another daemon of the fleet, or of this one before a restart,
  // is read from the store: its key is resolved here, once per job.
  auto ctx = std::make_unique<JobContext>();
  ctx->key = KeyOf(job.problem());
  auto family = FamilyOf(ctx->key, StoredSpecs(store_));
  if (!family.ok()) return family.status();
  ctx->family = *family;
  ctx->shape.assign(job.problem().shape().begin(), job.problem().shape().end());
  ctx->valid = ctx->family->ValidSpace(device(), ctx->shape, &ctx->pruned, job.problem().math(),
                                       job.problem().layout());
  ctx->spec = SpecWithSource(*ctx->family);
  if (contexts_.size() >= kMaxContexts) contexts_.clear();
  return (contexts_[job.id()] = std::move(ctx)).get();
}

void JobRunner::DropContext(int64_t id) { contexts_.erase(id); }

absl::Status JobRunner::Advance(const v1::Job& job) {
  auto ctx_or = ContextOf(job);
  if (!ctx_or.ok()) return ctx_or.status();
  JobContext& ctx = **ctx_or;
  const Family& family = *ctx.family;
  auto to_items = [&family](const std::vector<Config>& configs) {
    std::vector<v1::KernelConfig> items;
    for (const Config& c : configs) {
      v1::KernelConfig& k = items.emplace_back();
      k.set_name(family.ConfigName(c));
      for (const auto& [name, value] : c) (*k.mutable_params())[name] = value;
    }
    return items;
  };
  const Shape& shape = ctx.shape;
  if (job.round() > 0 && device().compile_only()) return Finish(job.id(), ctx);  // nothing is timed
  // The strategy (server/search/) picks the next round's configs; empty: the
  // search is over.
  const std::string name = job.strategy().empty() ? std::string(search::kExhaustive) : job.strategy();
  // Made (its cost model fitted) once per job on this daemon, not every round.
  std::unique_ptr<search::Strategy>& strategy = ctx.strategy;
  if (strategy == nullptr || strategy->name() != name) {
    auto make = [&]() -> absl::StatusOr<std::unique_ptr<search::Strategy>> {
      std::vector<search::Record> records;
      if (name != search::kExhaustive) {
        auto known = Knowledge(family, job.problem());
        if (!known.ok()) return known.status();
        records = *std::move(known);
      }
      return search::MakeStrategy(name, family, device(), std::move(records), options_.refine_top);
    };
    absl::StatusOr<std::unique_ptr<search::Strategy>> made;
    if (job.round() == 0 && name != search::kExhaustive && !device().compile_only() &&
        prepared_job_ == 0) {
      // The cost model's fit (CPU: 0.3-0.7 s on the H100 host with a prior)
      // beside the worker's Prepare of the job's inputs, reference and
      // baseline (GPU: 0.3-1.2 s), which its first claim needs anyway. Only
      // on a daemon between jobs: ClaimWork prefers the prepared job, and a
      // job that came later must not take over one that is being searched.
      auto fit = std::async(std::launch::async, make);
      JobTime time;
      const absl::Status prepared = Prepare(job, ctx, &time);
      AddTime(job.id(), &time);
      made = fit.get();
      if (!prepared.ok()) return prepared;
    } else {
      made = make();
    }
    if (!made.ok()) return made.status();
    strategy = *std::move(made);
  }
  search::RoundInput in;
  in.family = &family;
  in.device = device();
  in.shape = shape;
  in.round = job.round();
  in.math = job.problem().math();
  in.layout = job.problem().layout();
  in.valid = ctx.valid;
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
                     next.size(), in.valid.size(), ctx.pruned.size());
      } else {
        spdlog::info("job {}: round {}: {} configs near its best", job.id(), job.round() + 1,
                     next.size());
      }
    }
    return added.status();
  }
  ctx.strategy.reset();  // the search is over (`strategy` is null from here)
  if (options_.retime_top >= 1) {  // the finalists, judged on one GPU
    return store_->AddRound(job.id(), job.round(), {}, /*retime=*/true).status();
  }
  return Finish(job.id(), ctx);
}

absl::Status JobRunner::Finish(int64_t id, const JobContext& ctx) {
  auto done = store_->GetJob(id);
  if (!done.ok()) return done.status();
  // No config passed verification (e.g. MATH_TF32 at K = 1, where no TF32
  // kernel meets the bound that cuBLAS's fp32 result sets): where the
  // family's baseline computes the same result and the job timed it, that
  // is the answer, and the job is DONE with a note (GetBest then serves the
  // baseline: db/store.h BestRow::baseline_only); otherwise it failed.
  std::string note;
  if (!done->has_best() && !device().compile_only()) {
    const Family* family = ctx.family;
    if (!family->baseline_serves_alone() || !(done->baseline_ms() > 0)) {
      const std::string why = "no config passed verification";
      auto failed = store_->FinishJob(id, v1::JOB_FAILED, why);
      if (failed.ok() && *failed) {
        spdlog::warn("job {} failed: {} ({} failed{})", id, why, done->failed(),
                     !family->baseline_serves_alone()
                         ? absl::StrCat("; ", std::string(family->name()), "'s baseline is no answer")
                         : "; no baseline timed");
      }
      DropContext(id);  // `ctx` dangles from here
      return failed.status();
    }
    note = absl::StrFormat("no config passed verification; the baseline (%s, %.4f ms) is served",
                           done->baseline_name(), done->baseline_ms());
  }
  auto ended = store_->FinishJob(id, v1::JOB_DONE, note);
  if (!ended.ok()) return ended.status();
  if (*ended) {
    QueueAhead(*done, ctx);
    spdlog::info("job {} done: {} ok, {} failed; {}; compile {:.1f} s, measure "
                 "{:.1f} s, wait {:.1f} s, {} worker restarts, {} cached",
                 id, done->done(), done->failed(),
                 note.empty() ? absl::StrFormat("best %s %.4f ms", done->best().config().name(),
                                                done->best().median_ms())
                              : note,
                 done->compile_seconds(), done->measure_seconds(), done->wait_seconds(),
                 done->worker_restarts(), done->cached());
  }
  DropContext(id);  // `ctx` dangles from here
  return absl::OkStatus();
}

namespace {
/// The prior's records of each shape the model strategy fits on: the
/// fastest this many, then every Prior::kThinEvery-th (about 200 of a
/// shape's 500).
constexpr size_t kPriorFastest = 100;
}  // namespace

absl::StatusOr<std::vector<search::Record>> JobRunner::Knowledge(const Family& family,
                                                                 const v1::Problem& job_problem) {
  const Shape except(job_problem.shape().begin(), job_problem.shape().end());
  auto shapes = store_->TunedShapes(device_id_, KeyOf(job_problem));
  if (!shapes.ok()) return shapes.status();
  std::vector<search::Record> records;
  for (const auto& shape : *shapes) {
    if (shape == except) continue;  // its own measurements: a re-sweep learns nothing from them
    v1::Problem problem = job_problem;  // the same family (and spec version), dtype, math mode, layout
    problem.mutable_shape()->Assign(shape.begin(), shape.end());
    auto all = store_->ListMeasurements(device_id_, problem, 0);
    if (!all.ok()) return all.status();
    for (const auto& m : *all) {
      if (m.status() != v1::MEASUREMENT_OK || m.median_ms() <= 0) continue;
      Config config(m.config().params().begin(), m.config().params().end());
      if (!family.CheckParams(config).ok()) continue;  // of an older space
      records.push_back({shape, std::move(config), m.median_ms()});
    }
  }
  const search::Prior* prior = options_.prior;
  if (prior != nullptr && family.spec() == nullptr &&
      shapes->size() < static_cast<size_t>(search::kOwnShapesEnough)) {
    const std::set<Shape> own(shapes->begin(), shapes->end());
    // Thinned: the cost model's fit grows with its records (each job fits
    // one), and the prior's slow configs teach it little more than "slow".
    for (search::Record& r : prior->Records(family.name(), job_problem.dtype(), job_problem.math(),
                                            except, &own, kPriorFastest)) {
      // The prior's problems are LAYOUT_NN: its configs, made for the
      // job's layout, stand for the same kernels reading the operands
      // there (a model of the tiles, not of the layout).
      r.config = family.InLayout(std::move(r.config), job_problem.layout());
      records.push_back(std::move(r));
    }
  }
  return records;
}

absl::StatusOr<std::vector<v1::Measurement>> JobRunner::JobBest(const v1::Job& job, int n) {
  return store_->JobBest(job.id(), n);
}

void JobRunner::AddTime(int64_t id, JobTime* time) {
  if (auto s = store_->AddJobTime(id, *time); !s.ok()) spdlog::warn("job {}: {}", id, s.ToString());
  *time = {};
}

}  // namespace tuned
