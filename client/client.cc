#include "tuned/client.h"

#include <chrono>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "server/paths.h"

namespace tuned {
namespace {

constexpr auto kCallTimeout = std::chrono::seconds(30);

std::unique_ptr<grpc::ClientContext> Context(bool deadline = true) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (deadline) ctx->set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  return ctx;
}

}  // namespace

std::string DefaultServerAddress(int gpu) {
  if (const char* env = std::getenv("TUNED_SERVER"); env != nullptr && *env != '\0') return env;
  return "unix:" + DefaultSocketPath(gpu);
}

v1::Problem SgemmProblem(int64_t m, int64_t n, int64_t k) {
  v1::Problem p;
  p.set_family(v1::FAMILY_SGEMM);
  p.set_dtype(v1::DTYPE_F32);
  p.add_shape(m);
  p.add_shape(n);
  p.add_shape(k);
  return p;
}

Client::Client(const std::string& address)
    : address_(address),
      stub_(v1::Tuner::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

absl::Status Client::Convert(const grpc::Status& s) const {
  if (s.ok()) return absl::OkStatus();
  std::string msg = s.error_message();
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    msg = absl::StrCat("cannot reach tuned at ", address_, " (is the daemon running?): ", msg);
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), msg);
}

absl::StatusOr<v1::Job> Client::SubmitSweep(const v1::Problem& problem) {
  v1::SubmitSweepRequest req;
  *req.mutable_problem() = problem;
  v1::Job job;
  if (auto s = Convert(stub_->SubmitSweep(Context().get(), req, &job)); !s.ok()) return s;
  return job;
}

absl::StatusOr<v1::Job> Client::GetJob(int64_t id) {
  v1::GetJobRequest req;
  req.set_id(id);
  v1::Job job;
  if (auto s = Convert(stub_->GetJob(Context().get(), req, &job)); !s.ok()) return s;
  return job;
}

absl::StatusOr<v1::Job> Client::WatchJob(int64_t id,
                                         const std::function<void(const v1::Job&)>& on_update) {
  v1::GetJobRequest req;
  req.set_id(id);
  auto ctx = Context(/*deadline=*/false);
  auto reader = stub_->WatchJob(ctx.get(), req);
  v1::JobEvent event;
  v1::Job last;
  while (reader->Read(&event)) {
    last = event.job();
    on_update(last);
  }
  if (auto s = Convert(reader->Finish()); !s.ok()) return s;
  return last;
}

absl::StatusOr<v1::Job> Client::CancelJob(int64_t id) {
  v1::CancelJobRequest req;
  req.set_id(id);
  v1::Job job;
  if (auto s = Convert(stub_->CancelJob(Context().get(), req, &job)); !s.ok()) return s;
  return job;
}

absl::StatusOr<std::vector<v1::Job>> Client::ListJobs(int limit) {
  v1::ListJobsRequest req;
  req.set_limit(limit);
  v1::ListJobsResponse resp;
  if (auto s = Convert(stub_->ListJobs(Context().get(), req, &resp)); !s.ok()) return s;
  return std::vector<v1::Job>(resp.jobs().begin(), resp.jobs().end());
}

absl::StatusOr<v1::BestKernel> Client::GetBest(const v1::Problem& problem, bool tune_if_missing) {
  v1::GetBestRequest req;
  *req.mutable_problem() = problem;
  req.set_tune_if_missing(tune_if_missing);
  v1::BestKernel best;
  if (auto s = Convert(stub_->GetBest(Context().get(), req, &best)); !s.ok()) return s;
  return best;
}

absl::StatusOr<std::vector<v1::Measurement>> Client::ListMeasurements(const v1::Problem& problem,
                                                                      int top) {
  v1::ListMeasurementsRequest req;
  *req.mutable_problem() = problem;
  req.set_top(top);
  v1::ListMeasurementsResponse resp;
  if (auto s = Convert(stub_->ListMeasurements(Context().get(), req, &resp)); !s.ok()) return s;
  return std::vector<v1::Measurement>(resp.measurements().begin(), resp.measurements().end());
}

absl::StatusOr<v1::Device> Client::DescribeDevice() {
  v1::Device device;
  if (auto s = Convert(stub_->DescribeDevice(Context().get(), {}, &device)); !s.ok()) return s;
  return device;
}

}  // namespace tuned
