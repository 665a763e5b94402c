#include "server/service.h"

#include "families/kernel_text.h"
#include "core/serving.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace tuned {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

namespace {
// Marks a call whose request did not parse: gRPC then hands the interceptor a
// null message after receiving it, and sends an error status with no message;
// that status becomes INVALID_ARGUMENT. Only for methods with one request
// message (a stream's end also reads as a null message).
class UnparsedRequestInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit UnparsedRequestInterceptor(std::string method) : method_(std::move(method)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* batch) override {
    using grpc::experimental::InterceptionHookPoints;
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        batch->GetRecvMessage() == nullptr) {
      unparsed_ = true;
    }
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) && unparsed_ &&
        !batch->GetSendStatus().ok()) {
      batch->ModifySendStatus(ToGrpc(absl::InvalidArgumentError(
          absl::StrCat("the request to ", method_, " is not a valid protobuf message of its type"))));
    }
    batch->Proceed();
  }

 private:
  const std::string method_;
  bool unparsed_ = false;
};

class UnparsedRequestFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    using Type = grpc::experimental::ServerRpcInfo::Type;
    if (info->type() != Type::UNARY && info->type() != Type::SERVER_STREAMING) return nullptr;
    return new UnparsedRequestInterceptor(info->method());
  }
};

bool Finished(v1::JobState s) {
  return s == v1::JOB_DONE || s == v1::JOB_FAILED || s == v1::JOB_CANCELLED;
}

absl::Status CheckId(int64_t id) {
  if (id <= 0) return absl::InvalidArgumentError(absl::StrCat("job id must be positive, got ", id));
  return absl::OkStatus();
}
}  // namespace

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ServerInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<UnparsedRequestFactory>());
  return out;
}

absl::StatusOr<const Family*> TunerService::Validate(const v1::Problem& problem) const {
  auto family = FamilyOf(problem);
  if (!family.ok()) return family.status();
  const Shape shape(problem.shape().begin(), problem.shape().end());
  TUNED_RETURN_IF_ERROR((*family)->ValidateShape(shape));
  return family;
}

absl::StatusOr<ClientQuota> TunerService::Writer(const grpc::ServerContextBase& ctx) const {
  const auto caller = CallerOf(ctx, options_.tokens);
  if (!caller) {
    return absl::UnauthenticatedError("this call changes state and needs a token (tunectl --token or TUNED_TOKEN)");
  }
  if (draining_) return absl::UnavailableError("the daemon is stopping; it takes no new work");
  return ClientQuota{*caller, options_.max_jobs_per_client, options_.max_configs_per_client};
}

grpc::Status TunerService::SubmitSweep(grpc::ServerContext* ctx, const v1::SubmitSweepRequest* req,
                                       v1::Job* job) {
  auto quota = Writer(*ctx);
  if (!quota.ok()) return ToGrpc(quota.status());
  auto submitted = runner_->Submit(req->problem(), *quota, {req->strategy(), req->budget()});
  if (!submitted.ok()) return ToGrpc(submitted.status());
  *job = *submitted;
  return grpc::Status::OK;
}

grpc::Status TunerService::GetJob(grpc::ServerContext*, const v1::GetJobRequest* req, v1::Job* job) {
  if (auto s = CheckId(req->id()); !s.ok()) return ToGrpc(s);
  auto got = store_->GetJob(req->id());
  if (!got.ok()) return ToGrpc(got.status());
  *job = *got;
  return grpc::Status::OK;
}

grpc::Status TunerService::WatchJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                                    grpc::ServerWriter<v1::JobEvent>* writer) {
  if (auto s = CheckId(req->id()); !s.ok()) return ToGrpc(s);
  uint64_t seen = runner_->version();
  std::string last;
  // Every RPC is bounded: a watch ends (OK, the job still running) after
  // kMaxWatch; the client library watches again.
  const absl::Time end = absl::Now() + kMaxWatch;
  while (!ctx->IsCancelled() && absl::Now() < end) {
    auto job = store_->GetJob(req->id());
    if (!job.ok()) return ToGrpc(job.status());
    std::string now = job->SerializeAsString();
    if (now != last) {
      v1::JobEvent event;
      *event.mutable_job() = *job;
      if (!writer->Write(event)) return grpc::Status::OK;  // client went away
      last = std::move(now);
    }
    if (Finished(job->state())) return grpc::Status::OK;
    seen = runner_->WaitForChange(seen, absl::Milliseconds(500));
  }
  if (!ctx->IsCancelled()) return grpc::Status::OK;  // kMaxWatch: the client watches again
  return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled by the client");
}

grpc::Status TunerService::CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req,
                                     v1::Job* job) {
  if (auto s = CheckId(req->id()); !s.ok()) return ToGrpc(s);
  const auto caller = CallerOf(*ctx, options_.tokens);
  if (!caller) return ToGrpc(absl::UnauthenticatedError("cancelling a job needs a token"));
  // A remote client cancels its own jobs; local users (the socket's group) any.
  if (*caller != kLocalClient) {
    auto owned = store_->GetJob(req->id());
    if (!owned.ok()) return ToGrpc(owned.status());
    if (owned->client() != *caller) {
      return ToGrpc(absl::PermissionDeniedError(absl::StrCat(
          "job ", req->id(), " belongs to '", owned->client(), "', not to '", *caller, "'")));
    }
  }
  auto cancelled = runner_->Cancel(req->id());
  if (!cancelled.ok()) return ToGrpc(cancelled.status());
  *job = *cancelled;
  return grpc::Status::OK;
}

grpc::Status TunerService::ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* req,
                                    v1::ListJobsResponse* resp) {
  if (req->limit() < 0) {
    return ToGrpc(absl::InvalidArgumentError(
        absl::StrCat("limit must be >= 0 (0: the newest 50), got ", req->limit())));
  }
  auto jobs = store_->ListJobs(req->limit());
  if (!jobs.ok()) return ToGrpc(jobs.status());
  for (auto& j : *jobs) *resp->add_jobs() = std::move(j);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* TunerService::GetBest(grpc::CallbackServerContext* ctx,
                                                const v1::GetBestRequest* req,
                                                v1::BestKernel* best) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(Best(*ctx, *req, best));
  return reactor;
}

grpc::Status TunerService::Best(const grpc::ServerContextBase& ctx_ref,
                                const v1::GetBestRequest& req_ref, v1::BestKernel* best) {
  const grpc::ServerContextBase* ctx = &ctx_ref;
  const v1::GetBestRequest* req = &req_ref;
  auto family = Validate(req->problem());
  if (!family.ok()) return ToGrpc(family.status());
  const Shape shape(req->problem().shape().begin(), req->problem().shape().end());
  v1::Problem tuned_problem = req->problem();
  best->set_match(v1::MATCH_EXACT);
  auto row = store_->Best(device_id_, tuned_problem);
  if (row.ok() && (*row)->baseline_only && !(*family)->baseline_is_candidate()) {
    // Not stored by this build (its runner fails such a job): nothing to serve.
    row = absl::NotFoundError(absl::StrCat("no config of ", std::string((*family)->name()), " ",
                                           Family::ShapeString(shape), " passed verification"));
  }
  if (absl::IsNotFound(row.status())) {
    if (req->tune_if_missing()) {  // queuing a sweep changes state: the caller's quota
      auto quota = Writer(*ctx);
      if (!quota.ok()) return ToGrpc(quota.status());
      auto job = runner_->Submit(req->problem(), *quota);
      if (!job.ok()) return ToGrpc(job.status());
      best->set_queued_job_id(job->id());
    }
    auto shapes = store_->TunedShapes(device_id_, FamilyKey(req->problem()), req->problem().dtype(),
                                      req->problem().math());
    if (!shapes.ok()) return ToGrpc(shapes.status());
    const auto nearest = NearestShape(shape, *shapes);
    if (options_.metrics != nullptr) options_.metrics->Lookup(nearest ? "nearest" : "miss");
    if (!nearest) {
      const std::string queued =
          best->queued_job_id() > 0 ? absl::StrCat("; queued job ", best->queued_job_id()) : "";
      return ToGrpc(absl::NotFoundError(absl::StrCat(row.status().message(),
                                                     ", nor for a shape near it", queued)));
    }
    tuned_problem.mutable_shape()->Assign(nearest->begin(), nearest->end());
    best->set_match(v1::MATCH_NEAREST);
    row = store_->Best(device_id_, tuned_problem);
  } else if (row.ok() && options_.metrics != nullptr) {
    options_.metrics->Lookup("exact");
  }
  if (!row.ok()) return ToGrpc(row.status());
  const BestRow& found = **row;
  *best->mutable_problem() = req->problem();
  best->mutable_tuned_shape()->Assign(tuned_problem.shape().begin(), tuned_problem.shape().end());
  if (found.baseline_only) return BaselineOnly(found, tuned_problem, **family, best);
  const auto& params = found.measurement.config().params();
  const Config config(params.begin(), params.end());
  *best->mutable_measurement() = found.measurement;
  if (req->view() != v1::BEST_VIEW_BASIC) {
    best->set_source(found.binary.source);
    best->set_cubin(found.binary.cubin);
    best->set_ptx(found.binary.ptx);
  }
  best->set_entry(found.binary.entry);
  // Every config is correct for every shape: the geometry is the requested shape's.
  *best->mutable_geometry() = (*family)->Geometry(config, shape, runner_->device());
  for (const auto& a : (*family)->Arguments()) best->add_arguments(a);
  // Timings are those measured on the tuned shape.
  const Shape timed(tuned_problem.shape().begin(), tuned_problem.shape().end());
  best->set_baseline_ms(found.baseline_ms);
  if (found.baseline_ms > 0) {
    best->set_baseline_metric((*family)->Work(timed) / (found.baseline_ms * 1e6));
  }
  best->set_baseline_name(found.baseline_name);
  best->set_baseline_error(found.baseline_error);
  // What is served: the kernel only where its judging shows it surely faster
  // (core/serving.h, DecideServing).
  const StoredSpeedup& sp = found.speedup;
  ServingInput serving{.baseline_is_candidate = (*family)->baseline_is_candidate(),
                       .kernel_ms = found.measurement.median_ms(),
                       .baseline_ms = found.baseline_ms,
                       .baseline_name = found.baseline_name,
                       .interval = std::nullopt,
                       .judging_note = sp.note};
  if (sp.pairs > 0) {
    serving.interval = SpeedupInterval{sp.speedup, sp.ci_low, sp.ci_high, sp.pairs};
    best->set_speedup(sp.speedup);
    best->set_speedup_ci_low(sp.ci_low);
    best->set_speedup_ci_high(sp.ci_high);
    best->set_speedup_pairs(sp.pairs);
  }
  const ServingDecision decision = DecideServing(serving);
  best->set_use_baseline(decision.use_baseline);
  best->set_serving_reason(decision.reason);
  *best->mutable_device() = runner_->device();
  return grpc::Status::OK;
}

grpc::Status TunerService::BaselineOnly(const BestRow& found, const v1::Problem& tuned_problem,
                                        const Family& family, v1::BestKernel* best) const {
  // No kernel (tuner.proto, BestKernel): no measurement, source, binaries,
  // entry, geometry or arguments; the baseline's times and why it is served.
  const Shape timed(tuned_problem.shape().begin(), tuned_problem.shape().end());
  best->set_baseline_ms(found.baseline_ms);
  best->set_baseline_metric(family.Work(timed) / (found.baseline_ms * 1e6));
  best->set_baseline_name(found.baseline_name);
  best->set_baseline_error(found.baseline_error);
  const ServingDecision decision =
      DecideServing({.baseline_is_candidate = family.baseline_is_candidate(),
                     .kernel_ms = 0,
                     .baseline_ms = found.baseline_ms,
                     .baseline_name = found.baseline_name,
                     .interval = std::nullopt,
                     .judging_note = "",
                     .no_kernel = true});
  best->set_use_baseline(decision.use_baseline);
  best->set_serving_reason(absl::StrCat(decision.reason, " (every config of job ",
                                        found.baseline_job, " failed; its measurements say why)"));
  *best->mutable_device() = runner_->device();
  return grpc::Status::OK;
}

grpc::Status TunerService::ListMeasurements(grpc::ServerContext*,
                                            const v1::ListMeasurementsRequest* req,
                                            v1::ListMeasurementsResponse* resp) {
  if (auto family = Validate(req->problem()); !family.ok()) return ToGrpc(family.status());
  if (req->top() < 0) return ToGrpc(absl::InvalidArgumentError("top must be >= 0"));
  auto rows = store_->ListMeasurements(device_id_, req->problem(), req->top());
  if (!rows.ok()) return ToGrpc(rows.status());
  for (auto& m : *rows) *resp->add_measurements() = std::move(m);
  return grpc::Status::OK;
}

grpc::Status TunerService::DescribeDevice(grpc::ServerContext*, const v1::DescribeDeviceRequest*,
                                          v1::Device* device) {
  *device = runner_->device();
  const CompileAheadProgress ahead = runner_->compile_ahead();
  device->set_compiled_ahead(ahead.done);
  device->set_compile_ahead_total(ahead.total);
  return grpc::Status::OK;
}

grpc::Status TunerService::ListTuned(grpc::ServerContext*, const v1::ListTunedRequest* req,
                                     v1::ListTunedResponse* resp) {
  for (const Family* f : AllFamilies()) {
    if (req->family() != v1::FAMILY_UNSPECIFIED && req->family() != f->id()) continue;
    for (v1::Math math : f->MathModes()) {
      auto shapes = store_->TunedShapes(device_id_, FamilyKey(f->id()), v1::DTYPE_F32, math);
      if (!shapes.ok()) return ToGrpc(shapes.status());
      for (const auto& shape : *shapes) {
        v1::Problem* p = resp->add_problems();
        p->set_family(f->id());
        p->set_dtype(v1::DTYPE_F32);
        p->set_math(math);
        p->mutable_shape()->Assign(shape.begin(), shape.end());
      }
    }
  }
  return grpc::Status::OK;
}

grpc::Status TunerService::ImportKernel(grpc::ServerContext* ctx, const v1::ImportKernelRequest* req,
                                        v1::Job* job) {
  auto quota = Writer(*ctx);
  if (!quota.ok()) return ToGrpc(quota.status());
  const v1::BestKernel& k = req->kernel();
  auto family = Validate(k.problem());
  if (!family.ok()) return ToGrpc(family.status());
  const v1::Device& here = runner_->device();
  if (k.device().name() != here.name() || k.device().cc_major() != here.cc_major() ||
      k.device().cc_minor() != here.cc_minor()) {
    return ToGrpc(absl::FailedPreconditionError(absl::StrCat(
        "kernel was tuned on ", k.device().name(), " (sm_", k.device().cc_major(),
        k.device().cc_minor(), "); this daemon owns ", here.name(), " (sm_", here.cc_major(),
        here.cc_minor(), ")")));
  }
  const auto& params = k.measurement().config().params();
  const Config config(params.begin(), params.end());
  if (auto s = (*family)->CheckParams(config); !s.ok()) {
    return ToGrpc(absl::InvalidArgumentError(s.message()));
  }
  if (k.measurement().status() != v1::MEASUREMENT_OK || !(k.measurement().median_ms() > 0) ||
      k.cubin().empty() || k.entry().empty()) {
    return ToGrpc(absl::InvalidArgumentError(
        "an imported kernel needs an OK measurement with its time, a cubin and an entry"));
  }
  v1::Measurement m = k.measurement();
  m.mutable_config()->set_name((*family)->ConfigName(config));
  m.set_message(absl::StrCat("imported; tuned on ", k.device().name(), " driver ",
                             k.device().driver_version()));
  // An import runs nothing on this GPU, so only the client is recorded, no cap.
  auto id = store_->CreateJob(device_id_, k.problem(), 1, 0, ClientQuota{quota->client});
  if (!id.ok()) return ToGrpc(id.status());
  // The source is the family's own for the checked parameters, never the
  // client's text: what the daemon serves as a kernel's source is what it
  // would have compiled itself.
  const KernelBinary binary{SourceText((*family)->Source(config)), k.entry(), k.cubin(), k.ptx(), ""};
  absl::Status s = store_->SetJobBaseline(*id, k.baseline_ms(), k.baseline_metric(), k.baseline_name());
  if (s.ok()) s = store_->AddMeasurement(*id, m, &binary, /*daemon_id=*/0, k.baseline_ms()).status();
  if (s.ok() && k.speedup_pairs() > 0) {  // the judging travels with the kernel (dump, import)
    s = store_->SetSpeedup(*id, m.config().name(),
                           StoredSpeedup{.speedup = k.speedup(), .ci_low = k.speedup_ci_low(),
                                         .ci_high = k.speedup_ci_high(), .pairs = k.speedup_pairs(),
                                         .note = "", .sm_clock_mhz = m.sm_clock_mhz(),
                                         .clock_low = m.clock_low()});
  }
  if (s.ok()) s = store_->FinishJob(*id, v1::JOB_DONE).status();
  if (!s.ok()) return ToGrpc(s);
  auto stored = store_->GetJob(*id);
  if (!stored.ok()) return ToGrpc(stored.status());
  *job = *stored;
  return grpc::Status::OK;
}

grpc::Status TunerService::ListDaemons(grpc::ServerContext*, const v1::ListDaemonsRequest* req,
                                       v1::ListDaemonsResponse* resp) {
  auto daemons = store_->ListDaemons(req->all());
  if (!daemons.ok()) return ToGrpc(daemons.status());
  for (auto& d : *daemons) *resp->add_daemons() = std::move(d);
  return grpc::Status::OK;
}

}  // namespace tuned
