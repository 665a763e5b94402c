// Compiling a job's kernels through the store's compile cache (CompileStage,
// KernelOf), and the compile-ahead that fills that cache before jobs ask
// (JobRunnerOptions::compile_ahead).
#include "server/jobs/jobs.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "families/kernel_text.h"
#include "families/spec_family.h"
#include "server/common/idle.h"
#include "server/families.h"
#include "server/jobs/internal.h"
#include "core/status.h"
#include "spdlog/spdlog.h"

namespace tuned {

using jobs_internal::KeyOf;

namespace {
/// A finished job's best configs whose neighbours the compile-ahead takes
/// first (JobRunner::QueueAhead): the model strategy starts the next shapes
/// from these winners and refines around them.
constexpr int kAheadTop = 8;

/// With a prior, the compile-ahead takes the neighbours of the prior's this
/// many best-ranked configs of each math mode early (search::AheadPlaces).
constexpr size_t kPriorNeighboursOf = 64;

/// The compile-ahead logs its progress every this many kernels.
constexpr int64_t kAheadLogEvery = 500;

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

}  // namespace

namespace jobs_internal {

CompileKey KeyOf(const v1::worker::Kernel& k, const v1::Device& device) {
  return {k.source(), k.name_expression(), absl::StrJoin(k.options(), "\n"),
          absl::StrCat("sm_", device.cc_major(), device.cc_minor()), device.nvrtc_version()};
}

}  // namespace jobs_internal

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

absl::StatusOr<v1::worker::Request> JobRunner::PrepareRequest(const JobContext& ctx, uint64_t seed,
                                                              JobTime* time) {
  v1::worker::Request request = jobs_internal::PrepareRequest(ctx, seed);
  // A compile-only worker prepares nothing to run.
  if (!ctx.spec || device().compile_only()) return request;
  const auto* family = dynamic_cast<const SpecFamily*>(ctx.family);
  if (family == nullptr) return absl::InternalError("a kernel spec's job without a spec family");
  auto needed = family->PrepareKernels(ctx.shape);
  if (!needed.ok()) return needed.status();
  std::vector<v1::worker::Kernel> kernels;
  for (const SpecFamily::PrepareKernel& k : *needed) {
    v1::worker::Kernel& kernel = kernels.emplace_back();
    kernel.set_name(k.name);
    kernel.set_source(SourceText(k.source));
    kernel.set_name_expression(k.source.name_expression);
    for (const auto& o : k.source.options) kernel.add_options(o);
    *kernel.mutable_geometry() = k.geometry;
  }
  const std::vector<v1::worker::MeasureResult> compiled = CompileStage(kernels, time, compiler_);
  v1::worker::Prepare* prepare = request.mutable_prepare();
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (compiled[i].status() != v1::MEASUREMENT_COMPILED) {
      return absl::FailedPreconditionError(
          absl::StrCat(kernels[i].name(), " does not compile: ", compiled[i].message()));
    }
    *prepare->add_spec_kernels() = kernels[i];
    v1::worker::MeasureResult& binary = *prepare->add_spec_compiled();
    binary.set_status(v1::MEASUREMENT_COMPILED);
    binary.set_cubin(compiled[i].cubin());
    binary.set_entry(compiled[i].entry());
  }
  return request;
}

void JobRunner::AheadLoop() {
  // Background work as its compiler's: making the list (seconds of CPU for
  // a few thousand kernels), the compile cache's look-ups and writes. At
  // idle CPU priority a look-up thread that wakes takes its core back at
  // once, where the CPUs are not split (server/common/cpus.h) or beside
  // gRPC's and the runner's threads where they are.
  if (auto s = EnterIdlePriority(); !s.ok()) spdlog::warn("compile-ahead: {}", s.ToString());
  while (!Stopping()) {
    {  // A job's compile has the cores (NVRTC threads at idle priority still share
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

void JobRunner::QueueAhead(const v1::Job& job, const JobContext& ctx) {
  if (!options_.compile_ahead || ahead_compiler_ == nullptr) return;
  auto top = JobBest(job, kAheadTop);
  if (!top.ok()) return;
  const Family* family = ctx.family;
  if (!family->is_builtin() && !options_.user_kernels) return;  // a spec's code: not here
  const Shape& shape = ctx.shape;
  std::vector<v1::worker::Kernel> kernels;
  std::set<std::string> names;
  for (const auto& m : *top) {
    const Config config(m.config().params().begin(), m.config().params().end());
    for (const Config& n : family->Neighbours(config)) {
      if (!family->AdmitsIn(n, job.problem().math(), job.problem().layout()) ||
          !family->Check(n, device()).ok() ||
          !names.insert(family->ConfigName(n)).second) {
        continue;
      }
      kernels.push_back(KernelOf(*family, n, shape, device()));
    }
  }
  absl::MutexLock lock(&mu_);
  ahead_first_.insert(ahead_first_.begin(), kernels.begin(), kernels.end());
}

void JobRunner::OrderByPrior(const std::vector<const Family*>& families) {
  const std::map<std::string, size_t> place =
      search::AheadPlaces(*options_.prior, families, kPriorNeighboursOf);
  auto of = [&](const AheadKernel& k) {
    auto it = place.find(k.name);
    return it == place.end() ? SIZE_MAX : it->second;
  };
  std::stable_sort(ahead_.begin(), ahead_.end(),
                   [&](const auto& a, const auto& b) { return of(a) < of(b); });
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
    // The built-in families, and the newest version of each registered
    // kernel spec where this daemon runs specs' code (--allow-user-kernels).
    std::vector<const Family*> families = AllFamilies();
    if (auto specs = store_->ListSpecs(); options_.user_kernels && specs.ok()) {
      for (const StoredSpec& s : *specs) {
        if (auto f = AddSpecFamily(s.spec); f.ok()) families.push_back(*f);
      }
    }
    for (const Family* family : families) {
      if (family->id() == v1::FAMILY_FAULT_TEST) continue;  // compiles forever on purpose
      for (v1::Math math : family->MathModes()) {
        for (const Config& c : family->ValidSpace(device(), nullptr, math)) {
          if (Stopping()) {  // made again at the next start
            ahead_.clear();
            return false;
          }
          std::vector<Config> reach = family->Neighbours(c);
          reach.push_back(c);
          for (const Config& r : reach) {
            if (!family->Admits(r, math) || !family->Check(r, device()).ok()) continue;
            std::string name = family->ConfigName(r);
            if (names.insert(name).second) ahead_.push_back({family, r, std::move(name)});
          }
        }
      }
    }
    if (options_.prior != nullptr) OrderByPrior(families);
    absl::MutexLock lock(&mu_);
    ahead_progress_.total = static_cast<int64_t>(ahead_.size());
    spdlog::info("compiling ahead: {} kernels (every family's space and its neighbours, kernel specs "
                 "{}{})",
                 ahead_.size(), options_.user_kernels ? "included" : "not (no --allow-user-kernels)",
                 options_.prior != nullptr ? "; the prior's best first" : "");
  }
  int64_t done;
  {
    absl::MutexLock lock(&mu_);
    done = ahead_progress_.done;
  }
  if (done >= static_cast<int64_t>(ahead_.size())) return false;
  std::vector<v1::worker::Kernel> batch;
  const int64_t end = std::min<int64_t>(done + options_.compile_batch, ahead_.size());
  for (int64_t i = done; i < end; ++i) {
    const AheadKernel& k = ahead_[i];
    const Shape shape(k.family->dims().size(), 1024);  // kernels do not depend on it
    batch.push_back(KernelOf(*k.family, k.config, shape, device()));
  }
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

std::vector<v1::worker::MeasureResult> JobRunner::CompileStage(
    const std::vector<v1::worker::Kernel>& kernels, JobTime* time, WorkerClient* compiler,
    const CompileDelivery& on_result, const std::function<bool()>& abandoned) {
  auto given_up = [&] { return abandoned != nullptr && abandoned(); };
  const absl::Time start = absl::Now();
  std::vector<v1::worker::MeasureResult> results(kernels.size());
  std::vector<bool> delivered(kernels.size(), false);
  auto deliver = [&](size_t i, const v1::worker::MeasureResult& r) {
    results[i] = r;
    delivered[i] = true;
    if (on_result) on_result(i, results[i]);
  };
  std::vector<size_t> misses;
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto hit = store_->LookupCompiled(KeyOf(kernels[i], device()));
    if (hit.ok() && hit->has_value()) {
      deliver(i, FromCache(**hit));
      ++time->cached;
    } else {
      if (!hit.ok()) spdlog::warn("compile cache: {}", hit.status().ToString());
      misses.push_back(i);
    }
  }
  // Delivers a compiler's answer (COMPILED or COMPILE_ERROR), caching it.
  auto keep = [&](size_t i, const v1::worker::MeasureResult& r) {
    deliver(i, r);
    if (r.status() == v1::MEASUREMENT_COMPILED || r.status() == v1::MEASUREMENT_COMPILE_ERROR) {
      if (auto s = store_->AddCompiled(KeyOf(kernels[i], device()), ToCache(kernels[i], r)); !s.ok()) {
        spdlog::warn("compile cache: {}", s.ToString());
      }
    }
  };
  // One streamed compile of the kernels `which`, each kept as it arrives;
  // an error leaves the kernels not delivered yet without a result. The
  // call's limit is compile_timeout per compile_batch kernels.
  auto call = [&](const std::vector<size_t>& which) -> absl::Status {
    if (Stopping()) return absl::CancelledError("the daemon is stopping");  // nothing is stored
    if (given_up()) return absl::CancelledError("the job was cancelled");
    if (!compiler->alive()) {
      TUNED_RETURN_IF_ERROR(compiler->Restart());
    }
    v1::worker::Request request;
    for (size_t i : which) *request.mutable_compile()->add_kernels() = kernels[i];
    request.mutable_compile()->set_stream(true);
    const bool job = compiler == compiler_;
    if (job) {
      absl::MutexLock lock(&mu_);
      ++job_compiles_;
    }
    const int64_t batches = (static_cast<int64_t>(which.size()) + options_.compile_batch - 1) /
                            options_.compile_batch;
    std::string bad;  // a partial answer that does not fit the request
    auto response = compiler->CallStreaming(
        request, options_.compile_timeout * batches, [&](const v1::worker::CompiledOne& one) {
          const int j = one.index();
          if (j < 0 || j >= static_cast<int>(which.size()) || delivered[which[j]]) {
            bad = absl::StrCat("the compiler answered kernel ", j, " of ", which.size(),
                               ": out of range or twice");
            return;
          }
          keep(which[j], one.result());
        });
    if (job) {
      absl::MutexLock lock(&mu_);
      --job_compiles_;
    }
    if (!response.ok()) return response.status();
    if (!response->error().empty()) return absl::InternalError(response->error());
    if (!bad.empty()) return absl::InternalError(bad);
    const v1::worker::CompileResult& all = response->compiled();
    if (all.results_size() > 0) {  // a worker that answers at once, not streaming
      if (all.results_size() != static_cast<int>(which.size())) {
        return absl::InternalError("compiler answered with the wrong number of results");
      }
      for (size_t j = 0; j < which.size(); ++j) {
        if (!delivered[which[j]]) keep(which[j], all.results(static_cast<int>(j)));
      }
    }
    for (size_t i : which) {
      if (!delivered[i]) return absl::InternalError("the compiler left kernels without a result");
    }
    return absl::OkStatus();
  };
  // A kernel whose compile timed out or killed the compiler (not cached).
  auto failed = [&](size_t i, const absl::Status& why) {
    v1::worker::MeasureResult r;
    r.set_status(absl::IsDeadlineExceeded(why) ? v1::MEASUREMENT_COMPILE_TIMEOUT
                                               : v1::MEASUREMENT_COMPILE_ERROR);
    r.set_message(absl::StrCat("compiler: ", why.message()));
    spdlog::warn("{}: {}", kernels[i].name(), r.message());
    deliver(i, r);
  };
  if (!misses.empty()) {
    const absl::Status all = call(misses);
    if (!all.ok() && given_up()) {
      // Cancelled: the compiler was interrupted; nothing is compiled alone.
    } else if (!all.ok() && misses.size() == 1) {
      if (!delivered[misses[0]]) failed(misses[0], all);
    } else if (!all.ok()) {
      // A hang or crash among the kernels not delivered: each alone finds it.
      std::vector<size_t> left;
      for (size_t i : misses) {
        if (!delivered[i]) left.push_back(i);
      }
      spdlog::warn("compile of {} kernels: {}; {} without a result, compiling them one at a time",
                   misses.size(), all.ToString(), left.size());
      for (size_t i : left) {
        const absl::Status one = call({i});
        if (!one.ok() && !delivered[i]) failed(i, one);
      }
    }
  }
  time->compile_seconds += absl::ToDoubleSeconds(absl::Now() - start);
  return results;
}

}  // namespace tuned
