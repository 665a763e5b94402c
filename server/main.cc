// tuned: the autotuning daemon. Flags and wiring only.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "CLI/CLI.hpp"
#include "db/store.h"
#include "grpcpp/grpcpp.h"
#include "server/jobs.h"
#include "server/paths.h"
#include "server/service.h"
#include "server/worker_client.h"
#include "spdlog/spdlog.h"

namespace {

// Path of tuned-worker: next to this executable.
std::string DefaultWorkerPath() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path(".") : self.parent_path()) / "tuned-worker";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tuned: autotuning daemon for CUDA kernels (one per GPU)"};
  int gpu = 0;
  std::string db, socket, listen, worker_path = DefaultWorkerPath(), log_level = "info";
  bool compile_only = false;
  int64_t device_memory_mib = 0;
  app.add_option("--gpu", gpu, "CUDA device ordinal this daemon owns")->check(CLI::NonNegativeNumber);
  app.add_option("--db", db, "SQLite database (default: $XDG_STATE_HOME/tuned/gpu<N>.db)");
  app.add_option("--socket", socket, "Unix socket (default: $XDG_RUNTIME_DIR/tuned/gpu<N>.sock)");
  app.add_option("--listen", listen, "also serve TCP on HOST:PORT, e.g. 0.0.0.0:50051");
  app.add_option("--worker", worker_path, "path of the tuned-worker executable");
  app.add_flag("--compile-only", compile_only,
               "no GPU: compile every candidate for sm_90 but run none (tests, CI)");
  app.add_option("--device-memory-mib", device_memory_mib,
                 "with --compile-only: memory of the simulated device (tests)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  tuned::JobRunnerOptions jobs;
  double run_timeout_floor_s = absl::ToDoubleSeconds(jobs.run_timeout_floor);
  double compile_timeout_s = absl::ToDoubleSeconds(jobs.compile_timeout);
  bool fault_test_family = false;
  app.add_option("--run-timeout-floor", run_timeout_floor_s,
                 "seconds: a candidate's verify+time call is killed after max(this, "
                 "--run-timeout-multiple x best time so far)")
      ->check(CLI::PositiveNumber);
  app.add_option("--run-timeout-multiple", jobs.run_timeout_multiple,
                 "see --run-timeout-floor")->check(CLI::PositiveNumber);
  app.add_option("--compile-timeout", compile_timeout_s,
                 "seconds: a compile batch, then each kernel alone, is killed after this")
      ->check(CLI::PositiveNumber);
  app.add_option("--compile-batch", jobs.compile_batch, "kernels per compile batch")
      ->check(CLI::PositiveNumber);
  app.add_option("--quarantine-after", jobs.quarantine_after,
                 "GPU worker crashes after which a config is never run again")
      ->check(CLI::PositiveNumber);
  app.add_flag("--enable-fault-test-family", fault_test_family,
               "serve the test-only fault_test family (tests of fault isolation)");
  CLI11_PARSE(app, argc, argv);
  jobs.run_timeout_floor = absl::Seconds(run_timeout_floor_s);
  jobs.compile_timeout = absl::Seconds(compile_timeout_s);
  if (fault_test_family) tuned::EnableFaultTestFamily();
  if (db.empty()) db = tuned::DefaultDbPath(gpu);
  if (socket.empty()) socket = tuned::DefaultSocketPath(gpu);

  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e tuned[%P] %l: %v");
  signal(SIGPIPE, SIG_IGN);  // a dead worker must not kill the daemon
  // SIGINT/SIGTERM are taken by a waiting thread, blocked everywhere else.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::vector<std::string> worker_args = {"--gpu", std::to_string(gpu)};
  if (compile_only) worker_args.push_back("--compile-only");
  if (device_memory_mib > 0) {
    worker_args.insert(worker_args.end(), {"--device-memory-mib", std::to_string(device_memory_mib)});
  }
  auto worker = tuned::WorkerClient::Start(worker_path, worker_args);
  if (!worker.ok()) {
    spdlog::critical("{}", worker.status().ToString());
    return 1;
  }
  // NVRTC runs in a second worker process, so a hung or crashing compile is
  // killed without touching the GPU worker, and compiles overlap measuring.
  const tuned::v1::Device& gpu_device = (*worker)->device();
  auto compiler = tuned::WorkerClient::Start(
      worker_path, {"--compile-only", "--arch",
                    std::to_string(gpu_device.cc_major() * 10 + gpu_device.cc_minor())});
  if (!compiler.ok()) {
    spdlog::critical("compiler: {}", compiler.status().ToString());
    return 1;
  }
  auto store = tuned::Store::Open(db);
  if (!store.ok()) {
    spdlog::critical("{}", store.status().ToString());
    return 1;
  }
  auto device_id = (*store)->UpsertDevice((*worker)->device());
  if (!device_id.ok()) {
    spdlog::critical("database {}: {}", db, device_id.status().ToString());
    return 1;
  }
  tuned::JobRunner runner(store->get(), worker->get(), compiler->get(), *device_id, jobs);
  if (auto s = runner.Start(); !s.ok()) {
    spdlog::critical("job queue: {}", s.ToString());
    return 1;
  }
  tuned::TunerService service(store->get(), &runner, *device_id);

  std::error_code ec;
  const auto socket_dir = std::filesystem::path(socket).parent_path();
  std::filesystem::create_directories(socket_dir, ec);
  chmod(socket_dir.c_str(), 0700);
  std::filesystem::remove(socket, ec);  // a stale socket of an earlier run
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  if (!listen.empty()) builder.AddListeningPort(listen, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    spdlog::critical("cannot listen on unix:{}{}", socket, listen.empty() ? "" : " or " + listen);
    return 1;
  }
  spdlog::info("serving on unix:{}{}; database {}", socket, listen.empty() ? "" : ", " + listen, db);

  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    spdlog::info("signal {}: stopping", sig);
    runner.Stop();
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  });
  server->Wait();
  stopper.join();
  std::filesystem::remove(socket, ec);
  spdlog::info("stopped");
  return 0;
}
