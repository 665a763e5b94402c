// gRPC handlers of tuned.v1.Tuner: validate, call the runner or the store,
// and convert absl::Status to a gRPC status once, here.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "server/best_answers.h"
#include "server/auth.h"
#include "server/jobs/jobs.h"
#include "server/metrics.h"
#include "grpcpp/support/server_interceptor.h"
#include "tuned/v1/tuner.grpc.pb.h"

namespace tuned {

/// absl::Status -> grpc::Status with the same code and its message within
/// BoundMessage's 1 KiB (core/text.h).
grpc::Status ToGrpc(const absl::Status& status);

/// The daemon's server interceptors (ServerBuilder::experimental()
/// .SetInterceptorCreators): a unary or server-streaming request whose bytes
/// do not parse as its message gets INVALID_ARGUMENT with a message, where
/// gRPC itself answers INTERNAL (UNIMPLEMENTED for callback methods) with none.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
ServerInterceptors();

/// What the service needs beyond the store and the runner; pointers may be
/// null and must outlive the service.
/// The longest a WatchJob stream lasts; it then ends OK with the job still
/// running, and the client library (Client::WatchJob) watches again.
inline constexpr absl::Duration kMaxWatch = absl::Minutes(10);

struct ServiceOptions {
  const TokenTable* tokens = nullptr;  // of the TLS port, to name its callers
  Metrics* metrics = nullptr;
  int max_jobs_per_client = 0;         // queued + running; 0: no cap
  int64_t max_configs_per_client = 0;  // configs not yet measured; 0: no cap
  int max_registrations_per_client = 0;  // kernel specs registered in the last hour; 0: no cap
  /// RegisterFamily is refused unless set (tuned --allow-user-kernels).
  bool allow_user_kernels = false;
  /// The compiler process RegisterFamily starts to compile a spec's first
  /// config (tuned-worker and its --compile-only arguments), and how long
  /// it may take. No path: the compile is not checked (tests).
  std::string worker_path;
  std::vector<std::string> compiler_args;
  absl::Duration compile_timeout = absl::Seconds(120);
  /// The prior loaded (whatever its GPU; null: off), for DescribePrior.
  const search::Prior* prior = nullptr;
};

// GetBest, the hot read, is served by gRPC's asynchronous API (BestPollers,
// no hand-off to a thread pool) as raw bytes, from answers serialized once
// (BestAnswers); the other methods are synchronous.
class TunerService final : public v1::Tuner::WithRawMethod_GetBest<v1::Tuner::Service> {
 public:
  /// `store` and `runner` must outlive the service.
  TunerService(Store* store, JobRunner* runner, int64_t device_id, ServiceOptions options = {})
      : store_(store), runner_(runner), device_id_(device_id), options_(options) {}

  /// From now on, calls that would queue work are UNAVAILABLE (SIGTERM: the
  /// daemon stops; reads go on until it does).
  void Drain() { draining_ = true; }

  grpc::Status SubmitSweep(grpc::ServerContext*, const v1::SubmitSweepRequest*, v1::Job*) override;
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest*, v1::Job*) override;
  grpc::Status DescribePrior(grpc::ServerContext*, const v1::DescribePriorRequest*,
                             v1::PriorInfo*) override;
  grpc::Status WatchJob(grpc::ServerContext*, const v1::GetJobRequest*,
                        grpc::ServerWriter<v1::JobEvent>*) override;
  grpc::Status CancelJob(grpc::ServerContext*, const v1::CancelJobRequest*, v1::Job*) override;
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest*,
                        v1::ListJobsResponse*) override;
  grpc::Status ListMeasurements(grpc::ServerContext*, const v1::ListMeasurementsRequest*,
                                v1::ListMeasurementsResponse*) override;
  grpc::Status DescribeDevice(grpc::ServerContext*, const v1::DescribeDeviceRequest*,
                              v1::Device*) override;
  grpc::Status ListTuned(grpc::ServerContext*, const v1::ListTunedRequest*,
                         v1::ListTunedResponse*) override;
  grpc::Status ImportKernel(grpc::ServerContext*, const v1::ImportKernelRequest*,
                            v1::Job*) override;
  grpc::Status ListDaemons(grpc::ServerContext*, const v1::ListDaemonsRequest*,
                           v1::ListDaemonsResponse*) override;
  grpc::Status RegisterFamily(grpc::ServerContext*, const v1::RegisterFamilyRequest*,
                              v1::FamilyInfo*) override;
  grpc::Status ListFamilies(grpc::ServerContext*, const v1::ListFamiliesRequest*,
                            v1::ListFamiliesResponse*) override;
  grpc::Status GetFamily(grpc::ServerContext*, const v1::GetFamilyRequest*, v1::FamilyInfo*) override;

  /// GetBest on the request's bytes (a tuned.v1.GetBestRequest; the answer
  /// is a tuned.v1.BestKernel): the held answer to the same bytes while what
  /// it was built from holds (BestAnswers), else Best's, serialized and held
  /// unless it queued a job. INVALID_ARGUMENT for bytes that are no GetBestRequest;
  /// Best's errors otherwise. Served through BestPollers.
  grpc::Status AnswerBest(const grpc::ServerContextBase& ctx, const grpc::ByteBuffer& request,
                          grpc::ByteBuffer* response);

 private:
  /// The API edge of a request's problem: its canonical form
  /// (ResolveProblem), key, shape and family in the key's variant
  /// (FamilyOf), family, variant and shape checked. Resolved here once; the
  /// job runner goes on with it.
  absl::StatusOr<ResolvedProblem> Validate(const v1::Problem& problem) const;
  /// Compiles a kernel spec family's first config (and its reference
  /// kernel) in a compiler process of its own: INVALID_ARGUMENT with
  /// NVRTC's log where it does not compile.
  absl::Status CompileCheck(const Family& family) const;
  /// Where the serving rule serves a kernel spec's baseline: its default
  /// config's kernel, measured in `tuned_problem`'s jobs, replaces the best.
  void ServeDefaultConfig(const Family& family, const v1::Problem& tuned_problem, v1::BestView view,
                          v1::BestKernel* best) const;
  /// The quota of the caller of a call that changes state: UNAUTHENTICATED
  /// for an anonymous TCP caller, UNAVAILABLE while draining.
  absl::StatusOr<ClientQuota> Writer(const grpc::ServerContextBase& ctx) const;
  /// GetBest's answer in `best`, and in `served` the store's row it serves.
  grpc::Status Best(const grpc::ServerContextBase& ctx, const v1::GetBestRequest& req,
                    v1::BestKernel* best, std::shared_ptr<const BestRow>* served);
  /// Fills `best` (problem and tuned shape set) from a baseline-only row: no
  /// config of `tuned_problem` passed verification, its baseline is served.
  grpc::Status BaselineOnly(const BestRow& found, const v1::Problem& tuned_problem,
                            const Family& family, v1::BestKernel* best) const;

  Store* store_;
  JobRunner* runner_;
  int64_t device_id_;
  ServiceOptions options_;
  std::atomic<bool> draining_{false};
  /// Admits one registration of `client` (RegisterFamily): RESOURCE_EXHAUSTED
  /// past its hourly quota, UNAVAILABLE while kMaxRegistrationCompiles compile
  /// already (each says so: no registration waits behind another's compile).
  /// OK: the caller calls EndRegistration when its compile is over.
  absl::Status BeginRegistration(const std::string& client);
  void EndRegistration();

  /// Registrations compiling at once, each in a compiler process of its own.
  static constexpr int kMaxRegistrationCompiles = 4;
  absl::Mutex registrations_mu_;
  int registrations_compiling_ ABSL_GUARDED_BY(registrations_mu_) = 0;
  /// Each client's registrations of the last hour, oldest first.
  std::map<std::string, std::deque<absl::Time>> registered_ ABSL_GUARDED_BY(registrations_mu_);
  BestAnswers answers_;
};

}  // namespace tuned
