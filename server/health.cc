#include "server/health.h"

#include "absl/time/time.h"
#include "core/text.h"

namespace tuned {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

void HealthService::SetServingStatus(const std::string& service, bool serving) {
  absl::MutexLock lock(&mu_);
  serving_[service] = serving;
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

HealthCheckResponse::ServingStatus HealthService::StatusOf(const std::string& service) const {
  const auto it = serving_.find(service);
  if (it == serving_.end()) return HealthCheckResponse::SERVICE_UNKNOWN;
  return it->second ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

grpc::Status HealthService::Check(grpc::ServerContext*, const HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  absl::MutexLock lock(&mu_);
  const auto status = StatusOf(request->service());
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service: " + Quote(request->service()));
  }
  response->set_status(status);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context, const HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  absl::MutexLock lock(&mu_);
  bool first = true;
  auto sent = HealthCheckResponse::SERVICE_UNKNOWN;
  while (!shutdown_ && !context->IsCancelled()) {
    const auto status = StatusOf(request->service());
    if (first || status != sent) {
      HealthCheckResponse response;
      response.set_status(status);
      mu_.Unlock();  // a slow reader holds no one else up
      const bool written = writer->Write(response);
      mu_.Lock();
      if (!written) break;  // the client is gone
      first = false;
      sent = status;
      continue;
    }
    const auto changed = [this, &request, sent]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return shutdown_ || StatusOf(request->service()) != sent;
    };
    mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Seconds(1));
  }
  return grpc::Status::OK;
}

}  // namespace tuned
