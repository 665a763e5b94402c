#include "server/jobs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tuned {

namespace {
// Candidates compiled per batch (in parallel on the worker's cores) before measuring.
constexpr size_t kCompileBatch = 64;
}  // namespace

absl::StatusOr<const Family*> FamilyOf(const v1::Problem& problem) {
  const Family* family = FindFamily(problem.family());
  if (family == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown kernel family ", v1::Family_Name(problem.family()),
                     " (known: sgemm, transpose)"));
  }
  if (problem.dtype() != v1::DTYPE_F32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dtype ", v1::DType_Name(problem.dtype()), " is not supported by ", std::string(family->name()),
        " (supported: f32)"));
  }
  return family;
}

JobRunner::JobRunner(Store* store, WorkerClient* worker, int64_t device_id, Metrics* metrics)
    : store_(store), worker_(worker), device_id_(device_id), metrics_(metrics) {}

JobRunner::~JobRunner() { Stop(); }

absl::Status JobRunner::Start() {
  auto requeued = store_->RequeueRunningJobs();
  if (!requeued.ok()) return requeued.status();
  for (int64_t id : *requeued) spdlog::info("job {} was interrupted; it resumes", id);
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void JobRunner::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    ++version_;
  }
  if (thread_.joinable()) thread_.join();
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

bool JobRunner::Cancelled(int64_t id) {
  absl::MutexLock lock(&mu_);
  return cancelled_.count(id) > 0;
}

absl::StatusOr<v1::Job> JobRunner::Submit(const v1::Problem& problem, const ClientQuota& quota) {
  auto family = FamilyOf(problem);
  if (!family.ok()) return family.status();
  const Shape shape(problem.shape().begin(), problem.shape().end());
  if (auto s = (*family)->ValidateProblem(shape, device()); !s.ok()) return s;
  std::vector<Pruned> pruned;
  const auto valid = (*family)->ValidSpace(device(), &pruned);
  if (valid.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "every config of ", std::string((*family)->name()), " was pruned for ", device().name(),
        pruned.empty() ? "" : absl::StrCat("; e.g. ", pruned.front().reason)));
  }
  auto id = store_->CreateJob(device_id_, problem, static_cast<int32_t>(valid.size()),
                              static_cast<int32_t>(pruned.size()), quota);
  if (!id.ok()) return id.status();
  spdlog::info("job {} queued: {} {} ({} configs, {} pruned)", *id, (*family)->name(),
               Family::ShapeString(shape), valid.size(), pruned.size());
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
    // A queued job is cancelled here; a running one by its runner, within one candidate.
    if (job->state() == v1::JOB_QUEUED) {
      if (auto s = store_->SetJobState(id, v1::JOB_CANCELLED); !s.ok()) return s;
    }
    Bump();
    spdlog::info("job {} cancelled", id);
  }
  return store_->GetJob(id);
}

void JobRunner::Loop() {
  uint64_t seen = version();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
    }
    auto next = store_->NextQueuedJob(device_id_);
    if (!next.ok()) {
      spdlog::error("job queue: {}", next.status().ToString());
      seen = WaitForChange(seen, absl::Seconds(1));
      continue;
    }
    if (!next->has_value()) {
      seen = WaitForChange(seen, absl::Seconds(1));
      continue;
    }
    const int64_t id = **next;
    if (auto s = RunJob(id); !s.ok()) {
      spdlog::error("job {} failed: {}", id, s.ToString());
      if (auto f = store_->SetJobState(id, v1::JOB_FAILED, s.ToString()); !f.ok()) {
        spdlog::error("job {}: cannot record failure: {}", id, f.ToString());
      }
    }
    Bump();
  }
}

absl::Status JobRunner::Prepare(const v1::Job& job) {
  v1::worker::Request request;
  request.mutable_prepare()->set_seed(static_cast<uint64_t>(job.id()));
  *request.mutable_prepare()->mutable_problem() = job.problem();
  auto response = worker_->Call(request);
  if (!response.ok()) {  // the worker died: one restart and retry
    if (auto s = worker_->Restart(); !s.ok()) return s;
    response = worker_->Call(request);
    if (!response.ok()) return response.status();
  }
  if (!response->error().empty()) return absl::InternalError(response->error());
  const auto& p = response->prepared();
  if (p.baseline_ms() > 0) {
    const Family* family = FindFamily(job.problem().family());
    const Shape shape(job.problem().shape().begin(), job.problem().shape().end());
    spdlog::info("job {}: {} {:.4f} ms", job.id(), p.baseline_name(), p.baseline_ms());
    return store_->SetJobBaseline(job.id(), p.baseline_ms(),
                                  family->Work(shape) / (p.baseline_ms() * 1e6), p.baseline_name());
  }
  return absl::OkStatus();
}

v1::worker::Kernel KernelOf(const Family& family, const Config& config, const Shape& shape) {
  const KernelSource src = family.Source(config);
  v1::worker::Kernel kernel;
  kernel.set_name(family.ConfigName(config));
  kernel.set_source(src.source);
  kernel.set_name_expression(src.name_expression);
  for (const auto& o : src.options) kernel.add_options(o);
  *kernel.mutable_geometry() = family.Geometry(config, shape);
  return kernel;
}

absl::Status JobRunner::MeasureOne(const v1::Job& job, const Family& family, const Config& config,
                                   const v1::worker::Kernel& kernel,
                                   const v1::worker::MeasureResult* precompiled, double* best_ms) {
  const Shape shape(job.problem().shape().begin(), job.problem().shape().end());
  const absl::Time started = absl::Now();  // for metrics
  v1::Measurement m;
  m.mutable_config()->set_name(kernel.name());
  for (const auto& [k, v] : config) (*m.mutable_config()->mutable_params())[k] = v;
  m.set_metric_unit(std::string(family.metric_unit()));
  m.set_job_id(job.id());

  // A compile error, or compile-only mode, ends here; otherwise the GPU measures.
  absl::StatusOr<v1::worker::MeasureResult> result;
  if (precompiled != nullptr && (precompiled->status() != v1::MEASUREMENT_COMPILED ||
                                 device().compile_only())) {
    result = *precompiled;
  } else {
    v1::worker::Request request;
    *request.mutable_measure()->mutable_kernel() = kernel;
    request.mutable_measure()->set_best_ms(*best_ms);
    if (precompiled != nullptr) *request.mutable_measure()->mutable_compiled() = *precompiled;
    auto response = worker_->Call(request);
    if (response.ok()) {
      result = response->measured();
    } else {
      result = response.status();
    }
  }

  KernelBinary binary;
  bool restart = false;
  if (!result.ok()) {
    m.set_status(v1::MEASUREMENT_WORKER_DIED);
    m.set_message(std::string(result.status().message()));
    restart = true;
  } else {
    const auto& r = *result;
    m.set_status(r.status());
    m.set_median_ms(r.median_ms());
    m.set_error(r.error());
    m.set_message(r.status() == v1::MEASUREMENT_OK ? "" : r.message());
    m.set_repetitions(r.repetitions());
    m.set_registers(r.registers());
    if (r.status() == v1::MEASUREMENT_OK && r.median_ms() > 0) {
      m.set_metric(family.Work(shape) / (r.median_ms() * 1e6));
      *best_ms = *best_ms > 0 ? std::min(*best_ms, r.median_ms()) : r.median_ms();
      binary = {kernel.source(), r.entry(), r.cubin(), r.ptx(), ""};
    }
    restart = r.worker_exits();
  }
  spdlog::debug("job {}: {} {} {:.4f} ms", job.id(), kernel.name(),
                v1::MeasurementStatus_Name(m.status()), m.median_ms());
  if (auto s = store_->AddMeasurement(job.id(), m, binary.cubin.empty() ? nullptr : &binary);
      !s.ok()) {
    return s;
  }
  if (metrics_ != nullptr) metrics_->Measured(m, result.ok() ? result->compile_ms() : 0, absl::Now() - started);
  Bump();
  if (restart) {
    spdlog::warn("job {}: {} broke the GPU worker: {}", job.id(), kernel.name(), m.message());
    if (auto s = worker_->Restart(); !s.ok()) return s;
    if (auto s = Prepare(job); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status JobRunner::RunJob(int64_t id) {
  auto job = store_->GetJob(id);
  if (!job.ok()) return job.status();
  auto family_or = FamilyOf(job->problem());
  if (!family_or.ok()) return family_or.status();
  const Family& family = **family_or;
  const Shape shape(job->problem().shape().begin(), job->problem().shape().end());
  if (auto s = store_->SetJobState(id, v1::JOB_RUNNING); !s.ok()) return s;
  Bump();

  std::vector<Pruned> pruned;
  const auto configs = family.ValidSpace(device(), &pruned);
  for (const auto& p : pruned) {
    spdlog::debug("job {}: pruned {}: {}", id, family.ConfigName(p.config), p.reason);
  }
  auto measured = store_->MeasuredConfigs(id);
  if (!measured.ok()) return measured.status();
  spdlog::info("job {}: {} {}: {} configs ({} already measured), {} pruned", id, family.name(),
               Family::ShapeString(shape), configs.size(), measured->size(), pruned.size());
  if (auto s = Prepare(*job); !s.ok()) return s;

  std::vector<const Config*> pending;
  for (const Config& c : configs) {
    if (measured->count(family.ConfigName(c)) == 0) pending.push_back(&c);
  }
  double best_ms = job->has_best() ? job->best().median_ms() : 0;
  for (size_t begin = 0; begin < pending.size(); begin += kCompileBatch) {
    const size_t end = std::min(pending.size(), begin + kCompileBatch);
    // Compile the batch in parallel on the worker's CPU cores...
    std::vector<v1::worker::Kernel> kernels;
    v1::worker::Request compile;
    for (size_t i = begin; i < end; ++i) {
      kernels.push_back(KernelOf(family, *pending[i], shape));
      *compile.mutable_compile()->add_kernels() = kernels.back();
    }
    auto compiled = worker_->Call(compile);
    if (!compiled.ok()) {  // the worker died compiling: restart; each kernel then compiles alone
      if (auto s = worker_->Restart(); !s.ok()) return s;
      if (auto s = Prepare(*job); !s.ok()) return s;
    }
    // ...then verify and time each on the GPU, storing every result.
    for (size_t i = begin; i < end; ++i) {
      {
        absl::MutexLock lock(&mu_);
        if (stop_) return store_->SetJobState(id, v1::JOB_QUEUED);  // resumes on restart
      }
      if (Cancelled(id)) return store_->SetJobState(id, v1::JOB_CANCELLED);
      const v1::worker::MeasureResult* precompiled =
          compiled.ok() && compiled->compiled().results_size() == static_cast<int>(end - begin)
              ? &compiled->compiled().results(static_cast<int>(i - begin))
              : nullptr;
      if (auto s = MeasureOne(*job, family, *pending[i], kernels[i - begin], precompiled, &best_ms);
          !s.ok()) {
        return s;
      }
    }
  }

  auto done = store_->GetJob(id);
  if (!done.ok()) return done.status();
  if (!done->has_best() && !device().compile_only()) {
    return store_->SetJobState(id, v1::JOB_FAILED, "no config passed verification");
  }
  spdlog::info("job {} done: {} ok, {} failed; best {} {:.4f} ms", id, done->done(), done->failed(),
               done->best().config().name(), done->best().median_ms());
  return store_->SetJobState(id, v1::JOB_DONE);
}

}  // namespace tuned
