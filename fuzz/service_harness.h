// A compile-only daemon's service in this process, for the fuzz targets that
// send it requests (rpc_fuzz.cc, import_kernel_fuzz.cc): the tuned.v1.Tuner
// service over a SQLite store in a temporary folder, served on an in-process
// gRPC channel (no socket), with a real `tuned-worker --compile-only` for its
// device and a job runner that is never started (a sweep is queued, never
// compiled). Built once per process; each input starts from the same store:
// where a call changed the database, the store is put back as it was.
#pragma once

#include <memory>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tuned/v1/tuner.grpc.pb.h"

namespace tuned::fuzz {

class ServiceHarness {
 public:
  /// The harness of this process, built at the first call: a store seeded
  /// with imported kernels of sgemm and transpose and a registered kernel
  /// spec (matmul_tiled) with one kernel, so that reads find something.
  /// The worker: $TUNED_WORKER_PATH, else tuned-worker next to this
  /// executable, else the build's. Aborts if it cannot be built.
  static ServiceHarness& Get();

  /// A stub of the service (calls time out after 10 s).
  v1::Tuner::Stub& stub() { return *stub_; }
  /// A stub of the daemon's health service (server/health.h) on the same
  /// server, its statuses set as the daemon sets them while serving.
  grpc::health::v1::Health::Stub& health() { return *health_; }
  /// A client context with the call's deadline.
  static std::unique_ptr<grpc::ClientContext> Context();
  /// Puts the store back as it was seeded if a call changed it.
  void ResetIfChanged();
  /// Writes the seed corpora of rpc and import_kernel into dir/rpc and
  /// dir/import_kernel: requests of every method, and kernel files as
  /// `tunectl export` writes them, made from what the seeded store serves.
  void WriteSeeds(const std::string& dir);

 private:
  ServiceHarness() = default;
  struct State;
  void Build();
  void Open();
  void Close();
  std::string FileStamp() const;

  std::string dir_;
  std::string db_, template_;
  std::string stamp_;
  std::unique_ptr<State> state_;
  std::unique_ptr<v1::Tuner::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

/// In LLVMFuzzerInitialize: with TUNED_FUZZ_WRITE_SEEDS=DIR set, writes the
/// seeds (ServiceHarness::WriteSeeds) and exits.
void MaybeWriteSeeds();

}  // namespace tuned::fuzz
