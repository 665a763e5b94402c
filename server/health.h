// grpc.health.v1.Health (grpc/health/v1/health.proto) served on the sync
// server's threads. gRPC's own health check service
// (grpc::EnableDefaultHealthCheckService) is written with the callback API.
// Under the poll engine that server/main.cc picks, a server with any
// callback method runs gRPC's "nexting" threads, which woke on the
// connections' events. Under look-up load they took 24% of the daemon's CPU.
// On a 2-core machine, 16 clients ran 72,800-76,200 look-ups/s with p99
// 3.5-3.7 ms with gRPC's service, and 88,400-92,600/s with p99 0.24-0.34 ms
// with this one. One blocking client's p50 went from 0.070 to 0.041 ms
// (bench/RESULTS.md health-threads).
#pragma once

#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace tuned {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  /// Sets the status of `service`: a full service name, or "" for the
  /// server as a whole. Watchers of it are sent the new status.
  void SetServingStatus(const std::string& service, bool serving);
  /// Ends every Watch and makes later ones end at once: before the server's
  /// Shutdown, which waits for the calls in flight.
  void Shutdown();

  /// The status of request.service: SERVING or NOT_SERVING; NOT_FOUND for a
  /// service never set (the health protocol's rule).
  grpc::Status Check(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  /// The status of request.service now (SERVICE_UNKNOWN for one never set),
  /// then each change, until the client cancels or Shutdown. Its wait for a
  /// change wakes each second to see a cancelled call.
  grpc::Status Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

 private:
  /// The status of `service` as the protocol sends it.
  grpc::health::v1::HealthCheckResponse::ServingStatus StatusOf(const std::string& service) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, bool> serving_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tuned
