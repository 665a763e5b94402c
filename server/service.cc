#include "server/service.h"

#include "grpcpp/support/byte_buffer.h"

#include "families/kernel_text.h"
#include "families/spec/spec.h"
#include "families/spec_family.h"
#include "server/families.h"
#include "server/worker_client.h"
#include "core/serving.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/text.h"

namespace tuned {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), BoundMessage(status.message()));
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
    // GetBest takes raw bytes and parses them itself (AnswerBest); the hot
    // read runs without interception.
    if (std::string_view(info->method()) == "/tuned.v1.Tuner/GetBest") return nullptr;
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

// The numbers an imported kernel brings (times, rates, its judging), which
// `best` serves and compares as they are: each finite and in its range.
absl::Status CheckImportedNumbers(const v1::BestKernel& k) {
  const v1::Measurement& m = k.measurement();
  struct Number {
    const char* name;
    double value;
    bool zero_ok;  // 0 means "none" or "unknown"
  };
  for (const Number& n : {Number{"measurement.median_ms", m.median_ms(), false},
                          Number{"measurement.metric", m.metric(), true},
                          Number{"measurement.error", m.error(), true},
                          Number{"baseline_ms", k.baseline_ms(), true},
                          Number{"baseline_metric", k.baseline_metric(), true},
                          Number{"baseline_error", k.baseline_error(), true}}) {
    if (!std::isfinite(n.value) || n.value < 0 || (!n.zero_ok && n.value == 0)) {
      return absl::InvalidArgumentError(absl::StrCat("an imported kernel's ", n.name, " must be a finite number ",
                                                     n.zero_ok ? ">= 0" : "> 0", ", got ", n.value));
    }
  }
  if (m.repetitions() < 0 || m.registers() < 0 || m.sm_clock_mhz() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an imported kernel's measurement.repetitions, registers and sm_clock_mhz must be >= 0, got ",
        m.repetitions(), ", ", m.registers(), ", ", m.sm_clock_mhz()));
  }
  if (k.speedup_pairs() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("an imported kernel's speedup_pairs must be >= 0 (0: not judged), got ", k.speedup_pairs()));
  }
  if (k.speedup_pairs() > 0) {
    const double low = k.speedup_ci_low(), speedup = k.speedup(), high = k.speedup_ci_high();
    if (!std::isfinite(low) || !std::isfinite(high) || !(low > 0) || !(low <= speedup && speedup <= high)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "an imported kernel's judging needs 0 < speedup_ci_low <= speedup <= speedup_ci_high, all finite; got ",
          low, " <= ", speedup, " <= ", high));
    }
  }
  return absl::OkStatus();
}
/// OK where `client` may bring a kernel spec's code to this daemon
/// (RegisterFamily, ImportKernel of a spec's kernel): the daemon runs specs'
/// code (--allow-user-kernels; else FAILED_PRECONDITION), and the client is
/// local or its token has the register scope (else PERMISSION_DENIED).
absl::Status MayBringSpecCode(const ServiceOptions& options, const std::string& client,
                              std::string_view what) {
  if (!options.allow_user_kernels) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this daemon takes no ", std::string(what), ": a spec is code that runs on the GPU host; start it "
        "with --allow-user-kernels to allow them"));
  }
  if (client != kLocalClient && (options.tokens == nullptr || !options.tokens->HasScope(client, kRegisterScope))) {
    return absl::PermissionDeniedError(absl::StrCat(
        "client '", client, "' may not bring ", std::string(what), ": its token needs the '",
        std::string(kRegisterScope), "' scope (server/auth.h)"));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ServerInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<UnparsedRequestFactory>());
  return out;
}

absl::StatusOr<ResolvedProblem> TunerService::Validate(const v1::Problem& problem) const {
  ResolvedProblem r{.problem = problem};
  TUNED_RETURN_IF_ERROR(ResolveProblem(&r.problem, store_));
  r.key = KeyOf(r.problem);
  auto family = FamilyOf(r.key, StoredSpecs(store_));
  if (!family.ok()) return family.status();
  r.family = *family;
  r.shape.assign(r.problem.shape().begin(), r.problem.shape().end());
  TUNED_RETURN_IF_ERROR(r.family->ValidateShape(r.shape));
  return r;
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
  auto problem = Validate(req->problem());
  if (!problem.ok()) return ToGrpc(problem.status());
  auto submitted = runner_->Submit(*problem, *quota, {req->strategy(), req->budget()});
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

grpc::Status TunerService::AnswerBest(const grpc::ServerContextBase& ctx,
                                      const grpc::ByteBuffer& request, grpc::ByteBuffer* response) {
  grpc::Slice raw;
  if (grpc::Status s = request.DumpToSingleSlice(&raw); !s.ok()) return s;
  const absl::string_view bytes(reinterpret_cast<const char*>(raw.begin()), raw.size());
  // Read before the answer is built: a change after it leaves the answer unheld.
  const BestAnswers::Generations now{store_->BestGeneration(), store_->SpecGeneration()};
  if (auto held = answers_.Find(bytes, now)) {
    if (options_.metrics != nullptr) options_.metrics->Lookup(held->nearest ? "nearest" : "exact");
    *response = grpc::ByteBuffer(&held->bytes, 1);
    return grpc::Status::OK;
  }
  v1::GetBestRequest req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return ToGrpc(absl::InvalidArgumentError(
        "the request to /tuned.v1.Tuner/GetBest is not a valid protobuf message of its type"));
  }
  v1::BestKernel best;
  std::shared_ptr<const BestRow> row;
  if (grpc::Status s = Best(ctx, req, &best, &row); !s.ok()) return s;
  const size_t size = best.ByteSizeLong();
  grpc::Slice answer(grpc_slice_malloc(size), grpc::Slice::STEAL_REF);
  best.SerializeWithCachedSizesToArray(const_cast<uint8_t*>(answer.begin()));
  if (best.queued_job_id() == 0 && row != nullptr) {  // a call that queued a job queues again
    const bool nearest = best.match() == v1::MATCH_NEAREST;
    BestAnswers::Answer held{.bytes = answer, .nearest = nearest, .row = row->held};
    // A nearest shape's answer depends on every best and the tuned shapes;
    // a spec named without its full hash on the version it resolves to.
    if (nearest) held.best_generation = now.best;
    if (!req.problem().family_name().empty() && req.problem().spec_hash().size() < 64) {
      held.spec_generation = now.spec;
    }
    answers_.Add(bytes, std::move(held));
  }
  *response = grpc::ByteBuffer(&answer, 1);
  return grpc::Status::OK;
}

grpc::Status TunerService::Best(const grpc::ServerContextBase& ctx_ref,
                                const v1::GetBestRequest& req_ref, v1::BestKernel* best,
                                std::shared_ptr<const BestRow>* served) {
  const grpc::ServerContextBase* ctx = &ctx_ref;
  v1::GetBestRequest resolved = req_ref;
  const v1::GetBestRequest* req = &resolved;
  if (!v1::BestView_IsValid(req->view())) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat(
        "unknown view ", EnumName(req->view()), " (BEST_VIEW_FULL, the default, or BEST_VIEW_BASIC)")));
  }
  auto problem = Validate(resolved.problem());
  if (!problem.ok()) return ToGrpc(problem.status());
  *resolved.mutable_problem() = problem->problem;
  const Family* family = problem->family;
  const Shape& shape = problem->shape;
  v1::Problem tuned_problem = req->problem();
  best->set_match(v1::MATCH_EXACT);
  auto row = store_->Best(device_id_, tuned_problem);
  if (row.ok() && (*row)->baseline_only && !family->baseline_serves_alone()) {
    // Not stored by this build (its runner fails such a job): nothing to serve.
    row = absl::NotFoundError(absl::StrCat("no config of ", std::string(family->name()), " ",
                                           Family::ShapeString(shape), " passed verification"));
  }
  if (absl::IsNotFound(row.status())) {
    if (req->tune_if_missing()) {  // queuing a sweep changes state: the caller's quota
      auto quota = Writer(*ctx);
      if (!quota.ok()) return ToGrpc(quota.status());
      auto job = runner_->Submit(*problem, *quota);
      if (!job.ok()) return ToGrpc(job.status());
      best->set_queued_job_id(job->id());
    }
    auto shapes = store_->TunedShapes(device_id_, problem->key);
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
    if (row.ok() && !(*row)->baseline_only) {
      // A kernel spec's config may not run at this shape (a restriction
      // over dimensions): no kernel to serve from the nearest shape then.
      const auto& p = (*row)->measurement.config().params();
      if (auto runs = family->RunsAt(Config(p.begin(), p.end()), shape); !runs.ok()) {
        return ToGrpc(absl::NotFoundError(absl::StrCat(
            "no kernel tuned for ", Family::ShapeString(shape),
            "; the nearest tuned shape's (", Family::ShapeString(*nearest), ") does not run there: ",
            runs.message())));
      }
    }
  } else if (row.ok() && options_.metrics != nullptr) {
    options_.metrics->Lookup("exact");
  }
  if (!row.ok()) return ToGrpc(row.status());
  *served = *row;
  const BestRow& found = **row;
  *best->mutable_problem() = req->problem();
  best->mutable_tuned_shape()->Assign(tuned_problem.shape().begin(), tuned_problem.shape().end());
  if (found.baseline_only) return BaselineOnly(found, tuned_problem, *family, best);
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
  *best->mutable_geometry() = family->Geometry(config, shape, runner_->device());
  for (const auto& a : family->Arguments()) best->add_arguments(a);
  // Timings are those measured on the tuned shape.
  const Shape timed(tuned_problem.shape().begin(), tuned_problem.shape().end());
  best->set_baseline_ms(found.baseline_ms);
  if (found.baseline_ms > 0) {
    best->set_baseline_metric(family->Work(timed) / (found.baseline_ms * 1e6));
  }
  best->set_baseline_name(found.baseline_name);
  best->set_baseline_error(found.baseline_error);
  // What is served: the kernel only where its judging shows it surely faster
  // (core/serving.h, DecideServing).
  const StoredSpeedup& sp = found.speedup;
  ServingInput serving{.baseline_is_candidate = family->baseline_is_candidate(),
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
  if (family->spec() != nullptr) {
    if (decision.use_baseline) ServeDefaultConfig(*family, tuned_problem, req->view(), best);
    auto args = family->KernelArguments(shape);
    if (!args.ok()) return ToGrpc(args.status());
    for (auto& a : *args) *best->add_kernel_arguments() = std::move(a);
  }
  return grpc::Status::OK;
}

void TunerService::ServeDefaultConfig(const Family& family, const v1::Problem& tuned_problem,
                                      v1::BestView view, v1::BestKernel* best) const {
  // A kernel spec's baseline is its default config, a kernel like the
  // others: where it is served, the client gets its kernel.
  const std::string name = family.ConfigName(family.DefaultConfig());
  // The reason names what is served first: DecideServing's "<baseline>: why"
  // becomes "the default config NAME: why".
  const std::string& decided = best->serving_reason();
  const size_t colon = decided.find(": ");
  const std::string why = colon == std::string::npos ? decided : decided.substr(colon + 2);
  auto all = store_->ListMeasurements(device_id_, tuned_problem, 0);
  if (!all.ok()) return;
  for (const v1::Measurement& m : *all) {
    if (m.status() != v1::MEASUREMENT_OK || m.config().name() != name) continue;
    auto binary = store_->MeasurementBinary(m.job_id(), name);
    if (!binary.ok()) return;
    const Shape shape(best->problem().shape().begin(), best->problem().shape().end());
    *best->mutable_measurement() = m;
    best->clear_source();
    best->clear_cubin();
    best->clear_ptx();
    if (view != v1::BEST_VIEW_BASIC) {
      best->set_source(binary->source);
      best->set_cubin(binary->cubin);
      best->set_ptx(binary->ptx);
    }
    best->set_entry(binary->entry);
    *best->mutable_geometry() = family.Geometry(family.DefaultConfig(), shape, runner_->device());
    best->set_use_baseline(false);
    best->set_serving_reason(absl::StrCat("the default config ", name, ": ", why));
    return;
  }
  best->set_use_baseline(false);
  best->set_serving_reason(
      absl::StrCat("the best config (the default config ", name, " has no measurement here): ", why));
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
  auto resolved = Validate(req->problem());
  if (!resolved.ok()) return ToGrpc(resolved.status());
  const v1::Problem& problem = resolved->problem;
  if (req->top() < 0) return ToGrpc(absl::InvalidArgumentError("top must be >= 0"));
  auto rows = store_->ListMeasurements(device_id_, problem, req->top());
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

grpc::Status TunerService::DescribePrior(grpc::ServerContext*, const v1::DescribePriorRequest*,
                                         v1::PriorInfo* info) {
  const search::Prior* prior = options_.prior;
  info->set_own_shapes_enough(search::kOwnShapesEnough);
  if (prior == nullptr) return grpc::Status::OK;
  info->set_loaded(true);
  info->set_origin(prior->origin());
  info->set_version(prior->version());
  *info->mutable_device() = prior->device();
  info->set_source(prior->source());
  const search::PriorMatch match = prior->Match(runner_->device());
  info->set_used(match != search::PriorMatch::kNone);
  info->set_match(std::string(search::PriorMatchName(match)));
  for (const auto& [key, problems] : prior->problems()) {
    const auto& [family, dtype, math] = key;
    v1::PriorInfo::Problems* p = info->add_problems();
    p->set_family(family);
    p->set_dtype(dtype);
    p->set_math(math);
    p->set_shapes(static_cast<int32_t>(problems.by_shape.size()));
    p->set_measurements(problems.rows());
    if (const Family* f = FindFamily(family); f != nullptr) {  // else none of its own
      v1::Problem like;
      like.set_family(f->id());
      like.set_dtype(dtype);
      like.set_math(math);
      auto own = store_->TunedShapes(device_id_, KeyOf(like));
      if (!own.ok()) return ToGrpc(own.status());
      p->set_own_shapes(static_cast<int32_t>(own->size()));
    }
    p->set_in_use(info->used() && p->own_shapes() < search::kOwnShapesEnough);
  }
  return grpc::Status::OK;
}

grpc::Status TunerService::RegisterFamily(grpc::ServerContext* ctx, const v1::RegisterFamilyRequest* req,
                                          v1::FamilyInfo* info) {
  if (!options_.allow_user_kernels) {
    return ToGrpc(MayBringSpecCode(options_, std::string(kLocalClient), "kernel specs"));
  }
  auto quota = Writer(*ctx);
  if (!quota.ok()) return ToGrpc(quota.status());
  if (auto s = MayBringSpecCode(options_, quota->client, "kernel specs"); !s.ok()) return ToGrpc(s);
  if (req->has_spec() && !req->json().empty()) {
    return ToGrpc(absl::InvalidArgumentError("a kernel spec comes as a message (spec) or as JSON (json), not both"));
  }
  v1::KernelSpec spec = req->spec();
  if (!req->json().empty()) {
    auto parsed = spec::ParseSpecJson(req->json());
    if (!parsed.ok()) return ToGrpc(parsed.status());
    spec = *std::move(parsed);
  }
  // Checked and compiled before anything holds it: a refused spec leaves no
  // trace, in the store or in this process's registry.
  if (auto s = CheckSpecFamilyName(spec.name()); !s.ok()) return ToGrpc(s);
  auto checked = SpecFamily::Create(spec);
  if (!checked.ok()) return ToGrpc(checked.status());
  if (auto s = BeginRegistration(quota->client); !s.ok()) return ToGrpc(s);
  const absl::Status compiled = CompileCheck(**checked);
  EndRegistration();
  if (!compiled.ok()) return ToGrpc(compiled);
  const std::string hash = spec::SpecHash(spec);
  auto created = store_->AddSpec(spec, hash, quota->client, absl::ToUnixSeconds(absl::Now()));
  if (!created.ok()) return ToGrpc(created.status());
  auto family = AddSpecFamily(spec);
  if (!family.ok()) return ToGrpc(family.status());
  auto stored = store_->GetSpec(spec.name(), hash);
  if (!stored.ok()) return ToGrpc(stored.status());
  *info = DescribeFamily(**family, /*with_spec=*/true);
  info->set_created(*created);
  info->set_created_unix(stored->created_unix);
  info->set_client(stored->client);
  info->set_versions(stored->versions);
  return grpc::Status::OK;
}

absl::Status TunerService::BeginRegistration(const std::string& client) {
  absl::MutexLock lock(&registrations_mu_);
  const int quota = options_.max_registrations_per_client;
  if (quota > 0) {
    std::deque<absl::Time>& times = registered_[client];
    const absl::Time now = absl::Now();
    while (!times.empty() && times.front() < now - absl::Hours(1)) times.pop_front();
    if (std::ssize(times) >= quota) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "client '", client, "' registered ", quota, " kernel specs in the last hour, its quota "
          "(tuned --max-registrations-per-client); the next one is taken from ",
          absl::FormatTime("%H:%M:%S UTC", times.front() + absl::Hours(1), absl::UTCTimeZone())));
    }
    times.push_back(now);
  }
  if (registrations_compiling_ >= kMaxRegistrationCompiles) {
    return absl::UnavailableError(absl::StrCat(
        kMaxRegistrationCompiles, " registrations are compiling their specs now, the most at once; "
        "try again when one is over (each takes up to the compile timeout)"));
  }
  ++registrations_compiling_;
  return absl::OkStatus();
}

void TunerService::EndRegistration() {
  absl::MutexLock lock(&registrations_mu_);
  --registrations_compiling_;
}

absl::Status TunerService::CompileCheck(const Family& family) const {
  // The user's code compiles in a compiler process of its own (never in the
  // daemon), killed past the compile timeout: the config a job measures
  // first (the default, else the reference config, else the first of the
  // space), and the reference kernel.
  const v1::KernelSpec& spec = *family.spec();
  Config config = Config(spec.default_config().begin(), spec.default_config().end());
  if (config.empty()) {
    config = Config(spec.verification().reference_config().begin(), spec.verification().reference_config().end());
  }
  if (config.empty()) config = family.Space().front();
  v1::worker::Request request;
  v1::worker::Kernel* k = request.mutable_compile()->add_kernels();
  const KernelSource source = family.Source(config);
  k->set_name(family.ConfigName(config));
  k->set_source(SourceText(source));
  k->set_name_expression(source.name_expression);
  for (const auto& o : source.options) k->add_options(o);
  if (!spec.verification().reference_kernel().empty()) {
    v1::worker::Kernel* r = request.mutable_compile()->add_kernels();
    *r = *k;
    r->set_name(spec.verification().reference_kernel());
    r->set_name_expression(spec.verification().reference_kernel());
  }
  if (options_.worker_path.empty()) return absl::OkStatus();  // tests without a compiler
  auto compiler = WorkerClient::Start(options_.worker_path, options_.compiler_args, "spec compiler");
  if (!compiler.ok()) return compiler.status();
  auto response = (*compiler)->Call(request, options_.compile_timeout);
  if (!response.ok()) {
    if (absl::IsDeadlineExceeded(response.status())) {
      return absl::InvalidArgumentError(absl::StrCat("source: ", k->name(), " did not compile within ",
                                                     absl::FormatDuration(options_.compile_timeout)));
    }
    return response.status();
  }
  // The compiler's error: a compile limit passed (CompileLimits), the spec's doing.
  if (!response->error().empty()) return absl::InvalidArgumentError(absl::StrCat("source: ", response->error()));
  const auto& results = response->compiled().results();
  for (int i = 0; i < results.size(); ++i) {
    if (results[i].status() == v1::MEASUREMENT_COMPILED) {
      TUNED_RETURN_IF_ERROR(spec::CheckKernelParameters(spec, results[i].ptx(), results[i].entry()));
      continue;
    }
    std::string log = results[i].message();
    if (log.size() > 4000) log = absl::StrCat(log.substr(0, 4000), "...");
    return absl::InvalidArgumentError(absl::StrCat("source: ", request.compile().kernels(i).name(),
                                                   " does not compile: ", log));
  }
  return absl::OkStatus();
}

grpc::Status TunerService::ListFamilies(grpc::ServerContext*, const v1::ListFamiliesRequest*,
                                        v1::ListFamiliesResponse* resp) {
  for (const Family* f : AllFamilies()) *resp->add_families() = DescribeFamily(*f, /*with_spec=*/false);
  auto specs = store_->ListSpecs();
  if (!specs.ok()) return ToGrpc(specs.status());
  for (const StoredSpec& s : *specs) {
    auto family = AddSpecFamily(s.spec);
    if (!family.ok()) continue;  // stored by a build whose rules differ: GetFamily says why
    v1::FamilyInfo* info = resp->add_families();
    *info = DescribeFamily(**family, /*with_spec=*/false);
    info->set_created_unix(s.created_unix);
    info->set_client(s.client);
    info->set_versions(s.versions);
  }
  return grpc::Status::OK;
}

grpc::Status TunerService::GetFamily(grpc::ServerContext*, const v1::GetFamilyRequest* req,
                                     v1::FamilyInfo* info) {
  if (const Family* f = FindFamily(req->name()); f != nullptr) {
    if (!req->spec_hash().empty()) {
      return ToGrpc(absl::InvalidArgumentError(absl::StrCat(req->name(), " is built in: it has no versions")));
    }
    *info = DescribeFamily(*f, /*with_spec=*/true);
    return grpc::Status::OK;
  }
  auto stored = store_->GetSpec(req->name(), req->spec_hash());
  if (!stored.ok()) return ToGrpc(stored.status());
  auto family = AddSpecFamily(stored->spec);
  if (!family.ok()) return ToGrpc(family.status());
  *info = DescribeFamily(**family, /*with_spec=*/true);
  info->set_created_unix(stored->created_unix);
  info->set_client(stored->client);
  info->set_versions(stored->versions);
  return grpc::Status::OK;
}

grpc::Status TunerService::ListTuned(grpc::ServerContext*, const v1::ListTunedRequest* req,
                                     v1::ListTunedResponse* resp) {
  if (req->family() != v1::FAMILY_UNSPECIFIED && FindFamily(req->family()) == nullptr) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat("unknown kernel family ", EnumName(req->family()))));
  }
  for (const Family* base : AllFamilies()) {
    if (req->family() != v1::FAMILY_UNSPECIFIED && req->family() != base->id()) continue;
    for (v1::DType dtype : base->DTypes()) {
      const Family* f = base->ForDType(dtype);
      if (f == nullptr) continue;
      for (v1::Math math : f->MathModes()) {
        for (v1::Layout layout : f->Layouts()) {
          for (v1::Epilogue epilogue : f->Epilogues()) {
            v1::Problem like;
            like.set_family(f->id());
            like.set_dtype(dtype);
            like.set_math(math);
            like.set_layout(layout);
            like.set_epilogue(epilogue);
            auto shapes = store_->TunedShapes(device_id_, KeyOf(like));
            if (!shapes.ok()) return ToGrpc(shapes.status());
            for (const auto& shape : *shapes) {
              v1::Problem* p = resp->add_problems();
              *p = like;
              p->mutable_shape()->Assign(shape.begin(), shape.end());
            }
          }
        }
      }
    }
  }
  if (req->family() != v1::FAMILY_UNSPECIFIED) return grpc::Status::OK;
  // The kernel specs' newest versions.
  auto specs = store_->ListSpecs();
  if (!specs.ok()) return ToGrpc(specs.status());
  for (const StoredSpec& s : *specs) {
    v1::Problem like;
    like.set_family_name(s.spec.name());
    like.set_spec_hash(s.hash);
    auto shapes = store_->TunedShapes(device_id_, KeyOf(like));
    if (!shapes.ok()) return ToGrpc(shapes.status());
    for (const auto& shape : *shapes) {
      v1::Problem* p = resp->add_problems();
      *p = like;
      p->mutable_shape()->Assign(shape.begin(), shape.end());
    }
  }
  return grpc::Status::OK;
}

grpc::Status TunerService::ImportKernel(grpc::ServerContext* ctx, const v1::ImportKernelRequest* req,
                                        v1::Job* job) {
  auto quota = Writer(*ctx);
  if (!quota.ok()) return ToGrpc(quota.status());
  v1::BestKernel k = req->kernel();
  auto problem = Validate(k.problem());
  if (!problem.ok()) return ToGrpc(problem.status());
  *k.mutable_problem() = problem->problem;
  const Family* family = problem->family;
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
  if (auto s = family->CheckParams(config); !s.ok()) {
    return ToGrpc(absl::InvalidArgumentError(s.message()));
  }
  if (!family->is_builtin()) {
    // A spec's kernel is its author's code, and a client's cubin of it is
    // not the spec's source compiled: it is never stored nor served. The
    // import queues a sweep of the problem, whose kernels this daemon
    // compiles from the spec and its worker verifies against the spec's
    // reference before any is served.
    if (auto s = MayBringSpecCode(options_, quota->client, "kernels of kernel specs"); !s.ok()) {
      return ToGrpc(s);
    }
    auto queued = runner_->Submit(*problem, *quota);
    if (!queued.ok()) return ToGrpc(queued.status());
    *job = *queued;
    return grpc::Status::OK;
  }
  if (k.measurement().status() != v1::MEASUREMENT_OK || !(k.measurement().median_ms() > 0) ||
      k.cubin().empty() || k.entry().empty()) {
    return ToGrpc(absl::InvalidArgumentError(
        "an imported kernel needs an OK measurement with its time, a cubin and an entry"));
  }
  if (auto s = CheckImportedNumbers(k); !s.ok()) return ToGrpc(s);
  v1::Measurement m = k.measurement();
  m.mutable_config()->set_name(family->ConfigName(config));
  m.set_message(absl::StrCat("imported; tuned on ", k.device().name(), " driver ",
                             k.device().driver_version()));
  // An import runs nothing on this GPU, so only the client is recorded, no cap.
  auto id = store_->CreateJob(device_id_, k.problem(), 1, 0, ClientQuota{quota->client});
  if (!id.ok()) return ToGrpc(id.status());
  // The source is the family's own for the checked parameters, never the
  // client's text: what the daemon serves as a kernel's source is what it
  // would have compiled itself.
  const KernelBinary binary{SourceText(family->Source(config)), k.entry(), k.cubin(), k.ptx(), ""};
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
  if (!s.ok()) {
    // Never left queued: a runner would take it for a sweep to run.
    (void)store_->FinishJob(*id, v1::JOB_FAILED, absl::StrCat("import failed: ", s.message()));
    return ToGrpc(s);
  }
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
