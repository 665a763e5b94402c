// tuned: the autotuning daemon. Wiring only; settings in server/options.h.
//
// Exposure: a Unix socket (mode 0660: the owner and its group) always; TCP
// only with --listen, and then only TLS with tokens (server/auth.h). Both
// serve tuned.v1.Tuner, grpc.health.v1.Health (SERVING while the database is
// open and the GPU worker answers, NOT_SERVING once draining) and server
// reflection. Under systemd (Type=notify) it says READY=1 once serving and
// STOPPING=1 when it starts draining.
#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "db/store.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "server/auth.h"
#include "server/best_pollers.h"
#include "server/health.h"
#include "server/common/cpus.h"
#include "server/common/idle.h"
#include "server/jobs/jobs.h"
#include "server/common/log.h"
#include "server/metrics.h"
#include "server/options.h"
#include "server/service.h"
#include "server/worker_client.h"
#include "spdlog/spdlog.h"

namespace {

// "host:0" with the port actually bound.
std::string WithPort(const std::string& address, int port) {
  return address.substr(0, address.rfind(':')) + ":" + std::to_string(port);
}

}  // namespace

int main(int argc, char** argv) {
  // Debian builds Abseil with its deadlock detection on: every absl::Mutex
  // acquisition (gRPC's own locks included) then updates one global lock
  // graph under one global lock, which serializes concurrent calls.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // gRPC's poll engine, unless GRPC_POLL_STRATEGY names another: under
  // epoll1 (Debian's gRPC 1.51's default: one designated poller thread a
  // process, its role passed on as it wakes) one look-up at a time cost the
  // daemon 4.5-4.9 context switches and 80-88 µs of CPU, against 1.0 and
  // 34-40 µs under poll, at an equal rate at 64 clients
  // (bench/RESULTS.md load-async). Read at gRPC's start.
  setenv("GRPC_POLL_STRATEGY", "poll", /*overwrite=*/0);
  tuned::DaemonOptions o;
  if (int rc = tuned::ParseDaemonOptions(argc, argv, &o); rc >= 0) return rc;
  if (auto s = tuned::SetUpLogging("tuned", o.log_level); !s.ok()) {
    fprintf(stderr, "tuned: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (o.fault_test_family) tuned::EnableFaultTestFamily();
  // GetBest's threads on CPUs of their own, the rest on the others
  // (server/common/cpus.h): bound here, before any thread or child process
  // starts, everything but the look-up threads inherits the work CPUs.
  const int lookup_threads =
      o.lookup_threads > 0 ? o.lookup_threads
                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency() / 4));
  auto cpus = tuned::SplitCpus(o.serving_cpus, lookup_threads);
  if (!cpus.ok()) {
    spdlog::critical("{}", std::string(cpus.status().message()));
    return 1;
  }
  if (auto s = tuned::PinCallingThread(cpus->work); !s.ok()) {
    spdlog::critical("{}", std::string(s.message()));
    return 1;
  }
  if (!cpus->serving.empty()) {
    spdlog::info("GetBest threads on CPUs {}, the daemon's other work on CPUs {}", cpus->serving,
                 cpus->work);
  }
  // No write to a closed socket or pipe may kill the daemon (WorkerClient
  // ignores SIGPIPE too, for the processes that embed it without this main).
  signal(SIGPIPE, SIG_IGN);
  // SIGINT/SIGTERM are taken by the supervising thread, blocked everywhere else.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  tuned::Metrics metrics;
  if (!o.metrics_listen.empty()) {
    if (auto s = metrics.Listen(o.metrics_listen); !s.ok()) {
      spdlog::critical("{}", std::string(s.message()));
      return 1;
    }
    spdlog::info("metrics on http://{}/metrics", WithPort(o.metrics_listen, metrics.port()));
  }
  std::shared_ptr<const tuned::TokenTable> tokens;
  std::shared_ptr<grpc::ServerCredentials> tls;
  if (!o.listen.empty()) {
    auto table = tuned::TokenTable::Load(o.token_file);
    if (!table.ok()) {
      spdlog::critical("{}", std::string(table.status().message()));
      return 1;
    }
    tokens = std::make_shared<const tuned::TokenTable>(*std::move(table));
    auto creds = tuned::TlsServerCredentials({o.tls_cert, o.tls_key, o.tls_client_ca}, tokens,
                                             o.allow_anonymous_reads);
    if (!creds.ok()) {
      spdlog::critical("{}", std::string(creds.status().message()));
      return 1;
    }
    tls = *creds;
  }

  // Every worker process gets the log level, the compile limits and the sandbox's setting.
  std::vector<std::string> common_args = {"--log-level", o.log_level, "--compile-memory-mib",
                                          std::to_string(o.compile_memory_mib),
                                          "--compile-cpu-seconds", absl::StrCat(o.compile_cpu_seconds)};
  if (o.no_sandbox) common_args.push_back("--no-sandbox");
  std::vector<std::string> worker_args = {"--gpu", std::to_string(o.gpu)};
  worker_args.insert(worker_args.end(), common_args.begin(), common_args.end());
  if (o.compile_only) worker_args.push_back("--compile-only");
  if (o.device_memory_mib > 0) {
    worker_args.insert(worker_args.end(), {"--device-memory-mib", std::to_string(o.device_memory_mib)});
  }
  auto worker = tuned::WorkerClient::Start(o.worker_path, worker_args);
  if (!worker.ok()) {
    spdlog::critical("{}", worker.status().ToString());
    return 1;
  }
  // NVRTC runs in a second worker process, so a hung or crashing compile is
  // killed without touching the GPU worker, and compiles overlap measuring.
  const tuned::v1::Device& gpu_device = (*worker)->device();
  std::vector<std::string> compiler_args = {
      "--compile-only", "--arch", std::to_string(gpu_device.cc_major() * 10 + gpu_device.cc_minor())};
  compiler_args.insert(compiler_args.end(), common_args.begin(), common_args.end());
  // A job's compiles at idle CPU priority (SCHED_IDLE), as the compile-
  // ahead's: NVRTC's threads take the cores that serving leaves, and a
  // look-up thread that wakes takes its core back at once. A niced compiler
  // thread is not always preempted so: the scheduler lets it run out its
  // slice unless the woken thread is far enough behind it (CFS's wakeup
  // granularity, a few ms on many cores), which a look-up thread that slept
  // briefly is not.
  // --work-priority normal leaves every compile and fit at normal priority.
  const bool idle = o.work_priority == "idle";
  tuned::SetIdlePriority(idle);
  std::vector<std::string> job_compiler_args = compiler_args;
  if (idle) job_compiler_args.push_back("--idle");
  auto compiler = tuned::WorkerClient::Start(o.worker_path, job_compiler_args, "compiler");
  if (!compiler.ok()) {
    spdlog::critical("compiler: {}", compiler.status().ToString());
    return 1;
  }
  // The compile-ahead's own compiler, at idle CPU priority too: it never
  // holds up a job (the runner's loop does not wait on it, and it pauses
  // while a job compiles) and yields the cores to serving.
  std::unique_ptr<tuned::WorkerClient> ahead_compiler;
  if (o.jobs.compile_ahead) {
    std::vector<std::string> ahead_args = compiler_args;
    if (idle) ahead_args.push_back("--idle");
    auto started = tuned::WorkerClient::Start(o.worker_path, ahead_args, "ahead compiler");
    if (!started.ok()) {
      spdlog::critical("ahead compiler: {}", started.status().ToString());
      return 1;
    }
    ahead_compiler = *std::move(started);
  }
  (*worker)->set_on_restart([&metrics] { metrics.WorkerRestarted(); });
  auto store = tuned::Store::Open(o.db);
  if (!store.ok()) {
    spdlog::critical("{}", store.status().ToString());
    return 1;
  }
  auto device_id = (*store)->UpsertDevice((*worker)->device());
  if (!device_id.ok()) {
    spdlog::critical("database {}: {}", (*store)->name(), device_id.status().ToString());
    return 1;
  }
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  metrics.SetQueueDepth([s = store->get(), id = *device_id](tuned::v1::JobState state) {
    auto n = s->CountJobs(id, state);
    return n.ok() ? *n : int64_t{0};
  });
  // The prior: what to compile and measure first while this database knows
  // little (prior/README.md). One of another architecture is not used.
  std::optional<tuned::search::Prior> prior;
  if (o.use_prior) {
    auto loaded = o.prior_path.empty() ? tuned::search::Prior::Shipped()
                                       : tuned::search::Prior::Load(o.prior_path);
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().ToString());
      return 1;
    }
    prior = *std::move(loaded);
    const tuned::search::PriorMatch match = prior->Match(gpu_device);
    spdlog::info("prior {}: measured on {} (sm_{}{}): {}{}", prior->origin(), prior->device().name(),
                 prior->device().cc_major(), prior->device().cc_minor(),
                 tuned::search::PriorMatchName(match),
                 prior->skipped() > 0 ? fmt::format("; {} rows of configs the families no longer "
                                                    "accept skipped", prior->skipped())
                                      : "");
    if (match != tuned::search::PriorMatch::kNone) o.jobs.prior = &*prior;
  }
  tuned::JobRunner runner(store->get(), worker->get(), compiler->get(), *device_id,
                          {.host = host,
                           .gpu = o.gpu,
                           .gpu_uuid = (*worker)->device().uuid(),
                           .pid = getpid(),
                           .lease_seconds = o.jobs.lease_seconds},
                          o.jobs, &metrics, ahead_compiler.get());
  if (auto s = runner.Start(); !s.ok()) {
    spdlog::critical("job queue: {}", s.ToString());
    return 1;
  }
  tuned::TunerService service(
      store->get(), &runner, *device_id,
      {.tokens = tokens.get(),
       .metrics = &metrics,
       .max_jobs_per_client = o.max_jobs_per_client,
       .max_configs_per_client = o.max_configs_per_client,
       .max_registrations_per_client = o.max_registrations_per_client,
       .allow_user_kernels = o.allow_user_kernels,
       .worker_path = o.worker_path,
       .compiler_args = compiler_args,
       .compile_timeout = o.jobs.compile_timeout,
       .prior = prior ? &*prior : nullptr});

  // The socket's directory: 0750 if we make it (the group may reach the
  // socket); an existing one (e.g. /run/tuned-autotune from systemd) is left as it is.
  std::error_code ec;
  const auto socket_dir = std::filesystem::path(o.socket).parent_path();
  if (std::filesystem::create_directories(socket_dir, ec)) chmod(socket_dir.c_str(), 0750);
  std::filesystem::remove(o.socket, ec);  // a stale socket of an earlier run
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  tuned::HealthService health;  // not gRPC's own: server/health.h says why
  grpc::ServerBuilder builder;
  // Bounds on every RPC: requests over 64 MiB (an imported kernel's cubin and
  // PTX fit) are refused with RESOURCE_EXHAUSTED, and at most 256 threads
  // serve calls; each handler reads the store only, never waits on the GPU.
  builder.SetMaxReceiveMessageSize(64 << 20);
  grpc::ResourceQuota quota("tuned");
  quota.SetMaxThreads(256);
  builder.SetResourceQuota(quota);
  builder.AddListeningPort("unix:" + o.socket, grpc::InsecureServerCredentials());
  int tcp_port = 0;
  if (tls) builder.AddListeningPort(o.listen, tls, &tcp_port);
  builder.RegisterService(&service);
  builder.RegisterService(&health);
  builder.experimental().SetInterceptorCreators(tuned::ServerInterceptors());
  // GetBest, the many clients' look-up, on its own poller threads; the
  // other methods on the sync server's threads (gRPC's default: one queue).
  // A quarter of the cores by default: on 16 cores 4 threads served 64
  // clients over 16 connections at 129,000-131,000/s with p99 0.84-0.87 ms,
  // against 106,000-116,000 with 2 threads and 118,000-127,000 with 8, the
  // clients taking the other cores (bench/RESULTS.md load-async).
  tuned::BestPollers best_pollers(builder, &service, lookup_threads, o.lookup_spin_us,
                                 cpus->serving);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || (tls && tcp_port == 0)) {
    spdlog::critical("cannot listen on unix:{}{}", o.socket, o.listen.empty() ? "" : " or " + o.listen);
    return 1;
  }
  best_pollers.Start();
  if (chmod(o.socket.c_str(), 0660) != 0) {
    spdlog::critical("cannot chmod 0660 {}: {}", o.socket, std::strerror(errno));
    return 1;
  }
  spdlog::info("serving on unix:{} (mode 0660); database {}", o.socket, (*store)->name());
  if (tls) {
    spdlog::info("listening tcp {} (TLS{}; {} token clients; anonymous reads {})",
                 WithPort(o.listen, tcp_port), o.tls_client_ca.empty() ? "" : ", client certificates",
                 tokens->size(), o.allow_anonymous_reads ? "allowed" : "refused");
  }
  // Kubernetes' gRPC probes speak plaintext: a second server with only the health service.
  std::unique_ptr<grpc::Server> health_server;
  tuned::HealthService probe_health;
  if (!o.health_listen.empty()) {
    grpc::ServerBuilder hb;
    int port = 0;
    hb.AddListeningPort(o.health_listen, grpc::InsecureServerCredentials(), &port);
    hb.RegisterService(&probe_health);
    health_server = hb.BuildAndStart();
    if (!health_server || port == 0) {
      spdlog::critical("cannot listen on {}", o.health_listen);
      return 1;
    }
    spdlog::info("health on {} (plaintext, grpc.health.v1 only)", WithPort(o.health_listen, port));
  }

  auto set_health = [&](bool serving) {
    for (tuned::HealthService* h : {&health, &probe_health}) {
      h->SetServingStatus("", serving);
      h->SetServingStatus(tuned::v1::Tuner::service_full_name(), serving);
    }
  };
  bool serving = (*worker)->ready();  // the database is open: Store::Open succeeded
  set_health(serving);
  sd_notify(0, "READY=1\nSTATUS=serving");

  std::thread supervisor([&] {
    int sig = 0;
    const timespec tick{1, 0};
    while (true) {  // the health status follows the worker until a stop signal
      sig = sigtimedwait(&stop_signals, nullptr, &tick);
      if (sig > 0) break;
      if (const bool ready = (*worker)->ready(); ready != serving) {
        serving = ready;
        set_health(serving);
        spdlog::warn("health: {}", serving ? "SERVING (GPU worker back)" : "NOT_SERVING (GPU worker down)");
      }
    }
    const auto drain_end = std::chrono::system_clock::now() +
                           std::chrono::milliseconds(static_cast<int64_t>(o.drain_seconds * 1000));
    spdlog::info("signal {}: draining for {} s, then stopping", sig, o.drain_seconds);
    sd_notify(0, "STOPPING=1\nSTATUS=draining");
    service.Drain();
    set_health(false);
    runner.Stop();
    std::this_thread::sleep_until(drain_end);
    health.Shutdown();  // its watchers' calls end, so the servers' Shutdown waits for none
    probe_health.Shutdown();
    if (health_server) health_server->Shutdown(std::chrono::system_clock::now());
    // In-flight calls get a second (a client that keeps its channel open holds
    // Shutdown to its deadline): the daemon stops within 2 s of the signal.
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  });
  server->Wait();
  supervisor.join();
  best_pollers.Stop();
  std::filesystem::remove(o.socket, ec);
  spdlog::info("stopped");
  return 0;
}
