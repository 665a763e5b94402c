// A TunerService over a real gRPC channel (a Unix socket), on a SQLite store,
// with the real worker binary in compile-only mode (TUNED_WORKER_PATH) and a
// running job runner: no GPU needed. The fixture of the service's tests and
// of the clients' commands that talk to it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "db/store.h"
#include "grpcpp/grpcpp.h"
#include "server/best_pollers.h"
#include "server/jobs/jobs.h"
#include "server/service.h"
#include "server/worker_client.h"
#include "tuned/client.h"

namespace tuned {

/// A measurement of SGEMM's last valid config on `device` at 0.05 ms (a
/// 1024^3 GEMM's GFLOPS), as a GPU sweep would leave it.
inline v1::Measurement SgemmMeasurement(const v1::Device& device) {
  const Family& f = GemmFamily();
  const Config config = f.ValidSpace(device, nullptr).back();
  v1::Measurement m;
  m.mutable_config()->set_name(f.ConfigName(config));
  for (const auto& [k, v] : config) (*m.mutable_config()->mutable_params())[k] = v;
  m.set_status(v1::MEASUREMENT_OK);
  m.set_median_ms(0.05);
  m.set_metric(2.0 * (1 << 30) / (0.05 * 1e6));
  m.set_metric_unit("GFLOPS");
  return m;
}

/// A stand-in binary stored with a seeded measurement.
inline const KernelBinary kBinary{"source", "_Z5entry", std::string("\x7f" "ELF\0cubin", 10), "ptx", ""};

class ServiceFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string suite = ::testing::UnitTest::GetInstance()->current_test_suite()->name();
    dir_ = std::filesystem::temp_directory_path() / (suite + "_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    auto worker = WorkerClient::Start(TUNED_WORKER_PATH,
                                      {"--gpu", "0", "--compile-only", "--device-memory-mib", "1024"});
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = *std::move(worker);
    auto compiler = WorkerClient::Start(TUNED_WORKER_PATH, {"--compile-only", "--arch", "90"}, "compiler");
    ASSERT_TRUE(compiler.ok()) << compiler.status();
    compiler_ = *std::move(compiler);
    auto store = Store::Open((dir_ / "t.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto device_id = store_->UpsertDevice(worker_->device());
    ASSERT_TRUE(device_id.ok());
    runner_ = std::make_unique<JobRunner>(store_.get(), worker_.get(), compiler_.get(), *device_id,
                                          DaemonIdentity{.host = "test", .gpu = 0, .gpu_uuid = "test"});
    ASSERT_TRUE(runner_->Start().ok());
    service_ = std::make_unique<TunerService>(store_.get(), runner_.get(), *device_id);
    const std::string address = "unix:" + (dir_ / "t.sock").string();
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials());
    builder.RegisterService(service_.get());
    builder.experimental().SetInterceptorCreators(ServerInterceptors());
    best_pollers_ = std::make_unique<BestPollers>(builder, service_.get(), 2);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    best_pollers_->Start();
    client_ = std::make_unique<Client>(address);
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
    if (best_pollers_) best_pollers_->Stop();
    runner_.reset();
    worker_.reset();
    compiler_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  std::unique_ptr<WorkerClient> worker_;
  std::unique_ptr<WorkerClient> compiler_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobRunner> runner_;
  std::unique_ptr<TunerService> service_;
  std::unique_ptr<BestPollers> best_pollers_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

}  // namespace tuned
