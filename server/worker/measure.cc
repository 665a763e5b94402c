#include "server/worker/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/serving.h"
#include "server/common/ipc.h"
#include "spdlog/spdlog.h"
#include "tuned/dtype.h"

namespace tuned {

absl::StatusOr<std::unique_ptr<DeviceProblem>> MakeProblem(const v1::worker::Prepare& request,
                                                           const v1::Device& device) {
  const v1::Problem& problem = request.problem();
  const Shape shape(problem.shape().begin(), problem.shape().end());
  const v1::Family family = problem.family();
  if (family != v1::FAMILY_SGEMM && problem.math() != v1::MATH_IEEE_FP32) {
    return absl::InvalidArgumentError(
        absl::StrCat("math mode ", EnumName(problem.math()), " is for sgemm only"));
  }
  if (family != v1::FAMILY_SGEMM && problem.layout() != v1::LAYOUT_NN) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout ", EnumName(problem.layout()), " is for sgemm only"));
  }
  if (family != v1::FAMILY_SGEMM && problem.epilogue() != v1::EPILOGUE_NONE) {
    return absl::InvalidArgumentError(
        absl::StrCat("epilogue ", EnumName(problem.epilogue()), " is for sgemm only"));
  }
  if (request.has_spec()) return MakeSpecProblem(request, shape, device);
  // Every built-in family, test-only ones too: the daemon decides what it serves.
  for (const Family* builtin : BuiltinFamilies()) {
    if (builtin->id() != family) continue;
    if (ProblemFactory make = BuiltinProblemFactory(builtin->name()); make != nullptr) {
      return make(request, device);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("family ", EnumName(family), " needs its kernel spec in the request"));
}

absl::StatusOr<std::unique_ptr<Worker>> Worker::Create(int gpu, bool compile_only,
                                                      int64_t memory_bytes, int arch) {
  auto w = std::unique_ptr<Worker>(new Worker());
  w->compile_only_ = compile_only;
  if (compile_only) {
    w->device_ = Sm90ReferenceDevice();
    w->device_.set_nvrtc_version(NvrtcVersion());
    w->device_.set_compile_only(true);
    w->device_.set_uuid("compile-only");
    if (memory_bytes > 0) w->device_.set_total_memory_bytes(memory_bytes);
    if (arch > 0) {
      w->device_.set_cc_major(arch / 10);
      w->device_.set_cc_minor(arch % 10);
    }
    return w;
  }
  auto dev = OpenDevice(gpu);
  if (!dev.ok()) return dev.status();
  w->device_ = *dev;
  TUNED_CUDA(cudaStreamCreateWithFlags(&w->stream_, cudaStreamNonBlocking));
  auto flusher = L2Flusher::Create(w->device_.l2_cache_bytes());
  if (!flusher.ok()) return flusher.status();
  w->flusher_ = *std::move(flusher);
  auto clock = GpuClock::Open(w->device_.uuid());
  if (clock.ok()) {
    w->clock_ = *std::move(clock);
    spdlog::info("SM clock through NVML: max {} MHz", w->clock_->max_sm_mhz());
  } else {
    spdlog::warn("the SM clock is unknown (timings are not checked for a low clock): {}",
                 clock.status().ToString());
  }
  return w;
}

Worker::~Worker() {
  problem_.reset();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

std::string Worker::Arch() const {
  return absl::StrCat("sm_", device_.cc_major(), device_.cc_minor());
}

absl::StatusOr<std::pair<double, int>> Worker::Time(
    const std::function<absl::Status(cudaStream_t)>& run, double best_ms, double first_ms,
    std::vector<ClockSample>* clock_samples, int max_reps) {
  // A clear loser keeps the time of its verification run.
  if (best_ms > 0 && first_ms > kLoserRatio * best_ms) return std::pair{first_ms, 1};
  ClockSampler sampler(clock_samples != nullptr ? clock_.get() : nullptr);
  sampler.Start();
  auto done = [&](double ms, int reps) {
    if (clock_samples != nullptr) *clock_samples = sampler.Stop();
    return std::pair{ms, reps};
  };
  // Before each timed run, outside its timing: the problem's reset, then the flush.
  auto flush = [this](cudaStream_t s) -> absl::Status {
    TUNED_RETURN_IF_ERROR(problem_->BeforeTimedRun(s));
    return flusher_->Flush(s);
  };
  auto first = TimeMedianMs(run, flush, /*warmup=*/first_ms > 0 ? 0 : 1, /*reps=*/1, stream_);
  if (!first.ok()) return first.status();
  if (best_ms > 0 && *first > kLoserRatio * best_ms) return done(*first, 1);
  const int reps = TimedRepetitions(*first, best_ms, max_reps);
  auto median = TimeMedianMs(run, flush, /*warmup=*/0, reps, stream_);
  if (!median.ok()) return median.status();
  return done(*median, reps);
}

absl::StatusOr<Worker::Timed> Worker::TimeClocked(
    const std::function<absl::Status(cudaStream_t)>& run, double best_ms, double first_ms,
    int max_reps) {
  Timed out;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<ClockSample> samples;
    auto t = Time(run, best_ms, first_ms, &samples, max_reps);
    if (!t.ok()) return t.status();
    out = {t->first, t->second, ClockMhz(samples), false};
    if (clock_ == nullptr || !ClockLow(samples, clock_->max_sm_mhz())) return out;
    out.low = true;
    if (attempt == 0) {
      spdlog::warn("SM clock {} MHz of {} MHz while timing ({:.4f} ms): re-timing after {} ms", out.mhz,
                   clock_->max_sm_mhz(), out.ms, kLowClockPauseMs);
      std::this_thread::sleep_for(std::chrono::milliseconds(kLowClockPauseMs));
    }
  }
  spdlog::warn("SM clock still {} MHz of {} MHz when re-timed: marked low", out.mhz, clock_->max_sm_mhz());
  return out;
}

absl::StatusOr<worker::PrepareResult> Worker::Prepare(const worker::Prepare& sent) {
  // The problem as the families' factories read it: the key's, at the shape.
  auto named = PreparedProblem(sent);
  if (!named.ok()) return named.status();
  worker::Prepare request = sent;
  *request.mutable_problem() = *std::move(named);
  worker::PrepareResult result;
  problem_.reset();
  const Shape shape(request.problem().shape().begin(), request.problem().shape().end());
  prepared_family_ = request.problem().family();
  prepared_shape_ = shape;
  baseline_ms_ = 0;
  if (compile_only_) {
    result.set_baseline_name("none (compile-only)");
    return result;
  }
  auto problem = MakeProblem(request, device_);
  if (!problem.ok()) return problem.status();
  problem_ = *std::move(problem);
  auto timed = TimeClocked([this](cudaStream_t s) { return problem_->RunBaseline(s); }, 0);
  if (!timed.ok()) return timed.status();
  baseline_ms_ = timed->ms;
  result.set_baseline_ms(timed->ms);
  result.set_sm_clock_mhz(static_cast<int32_t>(timed->mhz));
  result.set_clock_low(timed->low);
  result.set_baseline_name(problem_->BaselineName());
  result.set_baseline_error(problem_->BaselineError());
  result.set_tolerance(problem_->Tolerance());
  return result;
}

namespace {

CompileInput SourceOf(const worker::Kernel& k) {
  return {k.source(), k.name_expression(), {k.options().begin(), k.options().end()}, k.name()};
}

// A compile outcome as a pipe message: COMPILED with the binary, or
// COMPILE_ERROR (NVRTC's error, or a kernel that spills: CheckNoSpills).
worker::MeasureResult ToResult(const absl::StatusOr<CompiledKernel>& k) {
  worker::MeasureResult r;
  const absl::Status s = k.ok() ? CheckNoSpills(*k) : k.status();
  if (!s.ok()) {
    r.set_status(v1::MEASUREMENT_COMPILE_ERROR);
    r.set_message(std::string(s.message()));
    if (k.ok()) {  // compiled, but spills
      r.set_registers(k->registers);
      r.set_local_bytes(k->spill_bytes);
    }
    return r;
  }
  r.set_status(v1::MEASUREMENT_COMPILED);
  r.set_cubin(k->cubin);
  r.set_ptx(k->ptx);
  r.set_entry(k->entry);
  r.set_registers(k->registers);
  r.set_local_bytes(k->spill_bytes);
  r.set_compile_ms(k->compile_ms);
  r.set_message(k->log);
  return r;
}

}  // namespace

worker::CompileResult Worker::CompileBatch(const worker::Compile& request) {
  // No memo here: the daemon compiles each kernel once, through the store's
  // compile cache (server/jobs/compile.cc, CompileStage).
  std::vector<CompileInput> sources;
  for (const auto& k : request.kernels()) sources.push_back(SourceOf(k));
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  worker::CompileResult out;
  for (const auto& k : CompileMany(sources, Arch(), threads)) *out.add_results() = ToResult(k);
  return out;
}

absl::StatusOr<worker::CompileResult> Worker::CompileStreamed(const worker::Compile& request,
                                                               const Emit& emit) {
  std::vector<CompileInput> sources;
  for (const auto& k : request.kernels()) sources.push_back(SourceOf(k));
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  absl::Status written = absl::OkStatus();
  worker::CompileResult out;
  // CompileEach makes one call at a time: `written` and `out` need no lock.
  CompileEach(sources, Arch(), threads, [&](size_t i, absl::StatusOr<CompiledKernel> k) {
    if (!written.ok()) return;
    worker::Response partial;
    partial.mutable_compiled_one()->set_index(static_cast<int32_t>(i));
    *partial.mutable_compiled_one()->mutable_result() = ToResult(k);
    written = emit(partial);
    if (written.ok()) out.set_streamed(out.streamed() + 1);
  });
  if (!written.ok()) return written;
  return out;
}

worker::MeasureResult Worker::Measure(const worker::Measure& request) {
  const worker::Kernel& k = request.kernel();
  CompiledKernel compiled;
  if (request.compiled().status() == v1::MEASUREMENT_COMPILED) {
    const auto& c = request.compiled();
    compiled = {c.cubin(), c.ptx(), c.entry(), c.message(), c.registers(), c.local_bytes(), -1,
                c.compile_ms()};
  } else {
    auto fresh = Compile(k.source(), k.name_expression(), SourceOf(k).options, Arch());
    if (!fresh.ok()) return ToResult(fresh);
    compiled = *std::move(fresh);
  }
  if (compile_only_ && prepared_family_ == v1::FAMILY_FAULT_TEST) {
    bool exit_after = false;
    worker::MeasureResult r = SimulateFaultTest(k, prepared_shape_, &exit_after);
    if (exit_after) broken_ = true;
    return r;
  }
  worker::MeasureResult r =
      MeasureCompiled(compiled, k.geometry(), request.best_ms(), /*time=*/true,
                      request.max_repetitions() > 0 ? request.max_repetitions() : kMaxRepetitions);
  if (request.compiled().status() == v1::MEASUREMENT_COMPILED) {
    // The daemon has the code it sent: it does not cross the pipe again.
    r.clear_cubin();
    r.clear_ptx();
  }
  return r;
}

worker::MeasureResult Worker::MeasureCompiled(const CompiledKernel& compiled,
                                              const v1::LaunchGeometry& geometry, double best_ms,
                                              bool time, int max_reps) {
  worker::MeasureResult r;
  auto fail = [&r](v1::MeasurementStatus status, const absl::Status& s) {
    r.set_status(status);
    r.set_message(std::string(s.message()));
    return r;
  };
  r.set_compile_ms(compiled.compile_ms);
  r.set_cubin(compiled.cubin);
  r.set_ptx(compiled.ptx);
  r.set_entry(compiled.entry);
  r.set_registers(compiled.registers);
  r.set_local_bytes(compiled.spill_bytes);
  if (compile_only_) {
    r.set_status(v1::MEASUREMENT_COMPILED);
    r.set_message(compiled.log);
    return r;
  }
  if (!problem_) {
    return fail(v1::MEASUREMENT_LAUNCH_ERROR, absl::FailedPreconditionError("no problem prepared"));
  }
  auto loaded = LoadedKernel::Load(compiled.cubin, compiled.entry);
  if (!loaded.ok()) return fail(v1::MEASUREMENT_LAUNCH_ERROR, loaded.status());
  r.set_registers(loaded->registers());
  r.set_local_bytes(loaded->local_bytes());
  // What a launch of the candidate costs: the problem's preparation of the
  // output (split-K: C = beta * C) and the kernel.
  auto run = [&](cudaStream_t s) -> absl::Status {
    TUNED_RETURN_IF_ERROR(problem_->BeforeLaunch(geometry, s));
    return loaded->Launch(geometry, problem_->KernelArgs().data(), s);
  };

  // A launch or kernel failure may leave the context unusable (a sticky
  // error: illegal address, misaligned access, ...): a device fault.
  auto launch_failed = [&](const absl::Status& s) {
    if (cudaDeviceSynchronize() != cudaSuccess) {
      broken_ = true;
      return fail(v1::MEASUREMENT_DEVICE_FAULT, s);
    }
    return fail(v1::MEASUREMENT_LAUNCH_ERROR, s);
  };
  if (auto s = problem_->PoisonOutput(stream_); !s.ok()) return launch_failed(s);
  // The verification run, timed with events (no flush): screens clear losers.
  auto verify_ms = TimeMedianMs(run, nullptr, /*warmup=*/0, /*reps=*/1, stream_);
  if (!verify_ms.ok()) return launch_failed(verify_ms.status());
  if (auto s = CudaStatus(cudaStreamSynchronize(stream_), "kernel"); !s.ok()) return launch_failed(s);
  auto error = problem_->CheckOutput(stream_);
  if (!error.ok()) return launch_failed(error.status());
  r.set_error(*error);
  if (!(*error <= problem_->Tolerance())) {
    r.set_status(v1::MEASUREMENT_WRONG_ANSWER);
    r.set_message(absl::StrCat("error ", *error, " exceeds tolerance ", problem_->Tolerance()));
    return r;
  }
  r.set_status(v1::MEASUREMENT_OK);
  if (!time) return r;
  auto timed = TimeClocked(run, best_ms, *verify_ms, max_reps);
  if (!timed.ok()) return launch_failed(timed.status());
  r.set_median_ms(timed->ms);
  r.set_repetitions(timed->reps);
  r.set_sm_clock_mhz(static_cast<int32_t>(timed->mhz));
  r.set_clock_low(timed->low);
  return r;
}

absl::StatusOr<worker::RetimeResult> Worker::RetimeTogether(const worker::Retime& request) {
  if (!problem_ || compile_only_) return absl::InvalidArgumentError("no problem prepared on a GPU");
  if (request.kernels_size() != request.compiled_size() || request.kernels_size() == 0) {
    return absl::InvalidArgumentError("retime: one compiled result per kernel, at least one");
  }
  for (int i = 0; i < request.kernels_size(); ++i) {
    if (request.compiled(i).status() != v1::MEASUREMENT_COMPILED) {
      return absl::InvalidArgumentError(absl::StrCat(request.kernels(i).name(), " is not compiled"));
    }
  }
  // Rounds: kTimingBudgetMs per kernel over one round (every run once); the
  // top candidates take about the baseline's time.
  const int runs_per_round = request.kernels_size() + 1;
  const double round_ms = std::max(baseline_ms_ * static_cast<double>(runs_per_round), 1e-3);
  const int rounds = static_cast<int>(std::clamp(kTimingBudgetMs * request.kernels_size() / round_ms,
                                                 double{kRetimeMinRounds}, double{kRetimeMaxRounds}));
  const int segments = request.segments() > 0
                           ? std::min(request.segments(), kRetimeMaxSegments)
                           : RetimeSegments(round_ms * (rounds + kRetimeWarmupRounds));
  // A problem within half the L2 is timed warm too, in the same rounds.
  const bool warm = JudgesWarm(problem_->OperandBytes(), device_.l2_cache_bytes());
  auto flush = [this](cudaStream_t s) { return flusher_->Flush(s); };
  auto reset = [this](cudaStream_t s) { return problem_->BeforeTimedRun(s); };
  auto failed = [this](const absl::Status& s) {
    if (cudaDeviceSynchronize() != cudaSuccess) broken_ = true;
    return s;
  };
  // Every segment's samples, run by run (the kernels', then the baseline's),
  // flushed and warm.
  std::vector<std::vector<double>> pooled(static_cast<size_t>(runs_per_round));
  std::vector<std::vector<double>> pooled_warm(static_cast<size_t>(runs_per_round));
  worker::RetimeResult result;
  int slowest_mhz = 0;
  for (int segment = 0; segment < segments; ++segment) {
    // The kernels' code loaded afresh for each segment (the last segment's
    // modules unloaded), as two judgings in turn would load it.
    std::vector<LoadedKernel> loaded;
    for (int i = 0; i < request.kernels_size(); ++i) {
      const auto& c = request.compiled(i);
      auto k = LoadedKernel::Load(c.cubin(), c.entry());
      if (!k.ok()) return k.status();
      loaded.push_back(*std::move(k));
    }
    std::vector<std::function<absl::Status(cudaStream_t)>> runs;
    for (int i = 0; i < request.kernels_size(); ++i) {
      const v1::LaunchGeometry& geometry = request.kernels(i).geometry();
      const LoadedKernel* k = &loaded[i];
      runs.push_back([this, k, &geometry](cudaStream_t s) -> absl::Status {
        TUNED_RETURN_IF_ERROR(problem_->BeforeLaunch(geometry, s));
        return k->Launch(geometry, problem_->KernelArgs().data(), s);
      });
    }
    runs.push_back([this](cudaStream_t s) { return problem_->RunBaseline(s); });
    std::vector<std::vector<double>> kept, kept_warm;
    bool low = false;
    unsigned mhz_now = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (auto warm = TimeInterleavedSamplesMs(runs, flush, kRetimeWarmupRounds, stream_, nullptr, reset);
          !warm.ok()) {
        return failed(warm.status());
      }
      ClockSampler sampler(clock_.get());
      sampler.Start();
      auto samples =
          TimeInterleavedSamplesMs(runs, flush, rounds, stream_, warm ? &kept_warm : nullptr, reset);
      const std::vector<ClockSample> mhz = sampler.Stop();
      if (!samples.ok()) return failed(samples.status());
      kept = *std::move(samples);
      mhz_now = ClockMhz(mhz);
      if (clock_ == nullptr) break;
      low = ClockLow(mhz, clock_->max_sm_mhz());
      if (!low) break;
      if (attempt == 0) {
        spdlog::warn("re-timing: SM clock {} MHz of {} MHz; again after {} ms", mhz_now,
                     clock_->max_sm_mhz(), kLowClockPauseMs);
        std::this_thread::sleep_for(std::chrono::milliseconds(kLowClockPauseMs));
      }
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      pooled[i].insert(pooled[i].end(), kept[i].begin(), kept[i].end());
    }
    for (size_t i = 0; i < kept_warm.size(); ++i) {
      pooled_warm[i].insert(pooled_warm[i].end(), kept_warm[i].begin(), kept_warm[i].end());
    }
    if (segment == 0 || static_cast<int>(mhz_now) < slowest_mhz) slowest_mhz = static_cast<int>(mhz_now);
    result.set_clock_low(result.clock_low() || low);
  }
  for (size_t i = 0; i < pooled.size(); ++i) {
    const std::vector<double>& ms = pooled[i];
    if (i + 1 < pooled.size()) {
      result.add_median_ms(Median(ms));
      result.add_samples()->mutable_ms()->Assign(ms.begin(), ms.end());
    } else {
      result.set_baseline_ms(Median(ms));
      result.mutable_baseline_samples()->Assign(ms.begin(), ms.end());
    }
  }
  if (warm) {
    for (size_t i = 0; i + 1 < pooled_warm.size(); ++i) {
      result.add_warm_samples()->mutable_ms()->Assign(pooled_warm[i].begin(), pooled_warm[i].end());
    }
    result.mutable_warm_baseline_samples()->Assign(pooled_warm.back().begin(),
                                                   pooled_warm.back().end());
  }
  result.set_rounds(rounds * segments);
  result.set_segments(segments);
  result.set_sm_clock_mhz(slowest_mhz);
  if (clock_ != nullptr) result.set_max_sm_clock_mhz(static_cast<int32_t>(clock_->max_sm_mhz()));
  return result;
}

worker::Response Worker::Handle(const worker::Request& request, const Emit& emit) {
  worker::Response response;
  switch (request.kind_case()) {
    case worker::Request::kHello:
      *response.mutable_device() = device_;
      break;
    case worker::Request::kPrepare: {
      auto r = Prepare(request.prepare());
      if (r.ok()) {
        *response.mutable_prepared() = *r;
      } else {
        response.set_error(r.status().ToString());
        if (!compile_only_ && cudaDeviceSynchronize() != cudaSuccess) broken_ = true;
      }
      break;
    }
    case worker::Request::kMeasure:
      *response.mutable_measured() = Measure(request.measure());
      break;
    case worker::Request::kCompile:
      if (request.compile().stream() && emit) {
        auto r = CompileStreamed(request.compile(), emit);
        if (r.ok()) {
          *response.mutable_compiled() = *std::move(r);
        } else {
          response.set_error(r.status().ToString());
        }
      } else {
        *response.mutable_compiled() = CompileBatch(request.compile());
      }
      break;
    case worker::Request::kRetime: {
      auto r = RetimeTogether(request.retime());
      if (r.ok()) {
        *response.mutable_retimed() = *r;
      } else {
        response.set_error(r.status().ToString());
      }
      break;
    }
    default:
      response.set_error("empty request");
  }
  return response;
}

}  // namespace tuned
