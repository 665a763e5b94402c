// Measuring a job's configs on the GPU worker: preparing the problem (the
// baseline's time), then verifying and timing each config as soon as the
// compiler delivers its kernel, storing every result as it arrives.
#include "server/jobs/jobs.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "families/kernel_text.h"
#include "server/families.h"
#include "server/jobs/internal.h"
#include "core/status.h"
#include "core/clock_rule.h"
#include "spdlog/spdlog.h"

namespace tuned {

using jobs_internal::MetricOf;

namespace {

/// Whether a result means the GPU worker is gone or unusable.
bool BrokeWorker(v1::MeasurementStatus s) {
  return s == v1::MEASUREMENT_DEVICE_FAULT || s == v1::MEASUREMENT_RUN_TIMEOUT ||
         s == v1::MEASUREMENT_WORKER_DIED;
}

}  // namespace

absl::Duration JobRunner::RunTimeout(double best_ms) const {
  return std::max(options_.run_timeout_floor,
                  absl::Milliseconds(options_.run_timeout_multiple * std::max(best_ms, 0.0)));
}

absl::Status JobRunner::Prepare(const v1::Job& job, const JobContext& ctx, JobTime* time) {
  prepared_job_ = 0;
  auto made = PrepareRequest(ctx, static_cast<uint64_t>(job.id()), time);
  if (!made.ok()) return made.status();
  const v1::worker::Request& request = *made;
  // The process that will judge this job's finalists (JudgeFinalists),
  // started while the job searches.
  if (options_.retime_top >= 1 && !device().compile_only()) worker_->StartSpare();
  const absl::Time start = absl::Now();
  auto response = worker_->Call(request, options_.prepare_timeout);
  if (!response.ok()) {  // the worker died or hung: one restart and retry
    ++time->worker_restarts;
    TUNED_RETURN_IF_ERROR(worker_->Restart());
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
    TUNED_RETURN_IF_ERROR(store_->SetJobErrorBound(job.id(), p.baseline_error(), p.tolerance()));
  }
  if (p.baseline_ms() > 0) {
    spdlog::info("job {}: {} {:.4f} ms", job.id(), p.baseline_name(), p.baseline_ms());
    return store_->SetJobBaseline(job.id(), p.baseline_ms(),
                                  MetricOf(*ctx.family, ctx.shape, p.baseline_ms()), p.baseline_name());
  }
  return absl::OkStatus();
}

absl::Status JobRunner::MeasureOne(const v1::Job& job, const JobContext& ctx, const Config& config,
                                   const v1::worker::Kernel& kernel,
                                   const v1::worker::MeasureResult& compiled, double* best_ms,
                                   JobTime* time) {
  const Family& family = *ctx.family;
  const Shape& shape = ctx.shape;
  const absl::Time started = absl::Now();  // for metrics
  v1::Measurement m;
  m.mutable_config()->set_name(kernel.name());
  for (const auto& [k, v] : config) (*m.mutable_config()->mutable_params())[k] = v;
  m.set_metric_unit(std::string(family.metric_unit()));
  m.set_job_id(job.id());

  v1::worker::MeasureResult r;
  auto crashes = store_->CrashCount(device_id_, ctx.key, kernel.name());
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
    // The code that was sent (the worker does not send it back), with the
    // compile's NVRTC log, as the compile cache keeps the same binary: the
    // store then holds one row for both (InsertBinary), not a second copy of
    // the cubin and PTX.
    binary = {kernel.source(), compiled.entry(), compiled.cubin(), compiled.ptx(),
              compiled.message()};
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
  NotifyChange();
  if (restart) {
    const std::string what =
        absl::StrCat(v1::MeasurementStatus_Name(m.status()), ": ", m.message());
    auto count = store_->AddCrash(device_id_, ctx.key, kernel.name(), what);
    if (!count.ok()) return count.status();
    spdlog::warn("job {}: {} broke the GPU worker ({} time(s)): {}", job.id(), kernel.name(),
                 *count, what);
    const absl::Time start = absl::Now();
    ++time->worker_restarts;
    TUNED_RETURN_IF_ERROR(worker_->Restart());
    TUNED_RETURN_IF_ERROR(Prepare(job, ctx, time));
    time->wait_seconds += absl::ToDoubleSeconds(absl::Now() - start);
  }
  return absl::OkStatus();
}

absl::StatusOr<JobRunner::MeasureOutcome> JobRunner::MeasureAll(const v1::Job& job,
                                                                const JobContext& ctx,
                                                                const std::vector<Config>& configs,
                                                                double* best_ms) {
  const Family& family = *ctx.family;
  const Shape& shape = ctx.shape;
  std::vector<v1::worker::Kernel> kernels;
  kernels.reserve(configs.size());
  for (const Config& config : configs) kernels.push_back(KernelOf(family, config, shape, device()));
  // One streamed compile of every kernel, on a thread of its own, which
  // hands each result over as it comes: config i waits for kernel i alone.
  struct Compiled {
    absl::Mutex mu;
    std::vector<std::optional<v1::worker::MeasureResult>> results ABSL_GUARDED_BY(mu);
  } compiled;
  {
    absl::MutexLock lock(&compiled.mu);
    compiled.results.resize(kernels.size());
  }
  JobTime compile_time;  // the compile thread's until it is joined
  // A cancelled job's compile is abandoned: the next job does not wait for
  // the rest of its batch (compile_timeout per batch at most).
  std::atomic<bool> abandoned{false};
  std::thread compile([this, &kernels, &compiled, &compile_time, &abandoned] {
    CompileStage(
        kernels, &compile_time, compiler_,
        [&compiled](size_t i, const v1::worker::MeasureResult& r) {
          absl::MutexLock lock(&compiled.mu);
          compiled.results[i] = r;
        },
        [&abandoned] { return abandoned.load(); });
  });

  JobTime time;
  double measured_seconds = 0;  // by this call, beside job.measure_seconds() at its claim
  auto stop = [&]() {
    return Stopping()              ? MeasureOutcome::kStopping
           : Cancelled(job.id()) ? MeasureOutcome::kCancelled
                                 : MeasureOutcome::kAll;
  };
  auto measure = [&]() -> absl::StatusOr<MeasureOutcome> {
    for (size_t i = 0; i < configs.size(); ++i) {
      if (i > 0 && i % options_.compile_batch == 0) {
        measured_seconds += time.measure_seconds;
        AddTime(job.id(), &time);
      }
      if (const MeasureOutcome s = stop(); s != MeasureOutcome::kAll) return s;
      if (job.budget_seconds() > 0 &&
          job.measure_seconds() + measured_seconds + time.measure_seconds >= job.budget_seconds()) {
        measured_seconds += time.measure_seconds;
        AddTime(job.id(), &time);
        auto skipped = store_->SkipRemaining(job.id());
        if (!skipped.ok()) return skipped.status();
        spdlog::info("job {}: its budget of {} s is spent ({:.2f} s); {} configs skipped",
                     job.id(), job.budget_seconds(), job.measure_seconds() + measured_seconds,
                     *skipped);
        return MeasureOutcome::kBudget;
      }
      // Kernel i, looking up every 100 ms for a stop or a cancel.
      const absl::Time wait_start = absl::Now();
      v1::worker::MeasureResult result;
      for (bool ready = false; !ready;) {
        {
          absl::MutexLock lock(&compiled.mu);
          auto delivered = [&compiled, i]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(compiled.mu) {
            return compiled.results[i].has_value();
          };
          ready = compiled.mu.AwaitWithTimeout(absl::Condition(&delivered), absl::Milliseconds(100));
          if (ready) result = *std::move(compiled.results[i]);
        }
        if (!ready && stop() != MeasureOutcome::kAll) break;
      }
      time.wait_seconds += absl::ToDoubleSeconds(absl::Now() - wait_start);
      // A compile that a stop interrupted is no result.
      if (const MeasureOutcome s = stop(); s != MeasureOutcome::kAll) return s;
      if (auto s = MeasureOne(job, ctx, configs[i], kernels[i], result, best_ms, &time);
          !s.ok()) {
        return s;
      }
    }
    return MeasureOutcome::kAll;
  };
  const absl::StatusOr<MeasureOutcome> outcome = measure();
  if (outcome.ok() && *outcome == MeasureOutcome::kCancelled) {
    abandoned = true;
    compiler_->Interrupt();  // the compile in progress returns at once; Restart brings it back
  }
  compile.join();  // a stop or a cancel interrupts it; otherwise it caches the kernels left
  time.compile_seconds += compile_time.compile_seconds;
  time.cached += compile_time.cached;
  AddTime(job.id(), &time);
  return outcome;
}

}  // namespace tuned
