// loadtest: concurrent `best` look-ups against a running daemon, from a
// separate process: C clients, each with its own gRPC connection, call
// GetBest back to back for D seconds (or until R requests each) and the
// latencies of all calls give QPS and p50/p99/max in ms, and its own CPU
// time (user + system, µs) and context switches per call. Bounded in count
// and time so it can run anywhere.
//   --api sync: one thread per client, blocking calls (a client program's way);
//   --api callback: gRPC's callback API, each client's next call started from
//     the last one's completion on gRPC's own threads, so C clients need not
//     be C threads competing with the daemon for the cores.
//   --api async: gRPC's asynchronous API, T threads (--threads) each polling
//     a completion queue of its own for its share of the clients (client c
//     on thread c % T); each client's next call starts where its last one
//     completes, on the thread that took the completion, as gRPC's own
//     benchmark clients do. --spin: the threads poll without sleeping
//     (AsyncNext with a deadline already past), as the busy-polling clients
//     of gRPC's latency benchmarks do, so that no wake-up is in a call's time.
// Usage: loadtest --server ADDR [--clients 64] [--connections C] [--seconds 10]
//                 [--max-requests 100000] [--api sync|callback|async] [--threads T] [--spin]
//                 [--view basic|full] [--family sgemm] [--channel-arg KEY=INT]... SHAPE...
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "families/family.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "server/spin_poll.h"
#include "tuned/v1/tuner.grpc.pb.h"

int main(int argc, char** argv) {
  CLI::App app{"loadtest: concurrent GetBest calls, QPS and latency percentiles"};
  std::string server, family_name = "sgemm";
  int clients = 64, connections = 0;
  double seconds = 10;
  int64_t max_requests = 100000;
  std::vector<int64_t> shape;
  std::string view = "basic", method = "best", api = "sync";
  app.add_option("--method", method,
                 "best (GetBest), device (DescribeDevice: no store, on the daemon's sync threads) or "
                 "health (grpc.health.v1 Check: no store; against bench/grpc_floor, the transport "
                 "alone)")
      ->check(CLI::IsMember({"best", "device", "health"}));
  int threads = 4;
  app.add_option("--api", api,
                 "sync (a thread per client), callback (gRPC's callback API) or async (gRPC's "
                 "asynchronous API on --threads threads)")
      ->check(CLI::IsMember({"sync", "callback", "async"}));
  app.add_option("--threads", threads, "with --api async: threads, each polling a completion queue")
      ->check(CLI::Range(1, 256));
  bool spin = false;
  app.add_flag("--spin", spin, "with --api async: the threads poll without sleeping");
  app.add_option("--view", view, "basic (config, times, geometry) or full (with source, cubin, PTX)")
      ->check(CLI::IsMember({"basic", "full"}));
  app.add_option("--server", server, "daemon address, e.g. unix:/run/tuned/gpu0.sock")->required();
  app.add_option("--clients", clients, "concurrent clients")->check(CLI::Range(1, 1024));
  app.add_option("--connections", connections,
                 "connections the clients share, round robin (default: one per client)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--seconds", seconds, "how long to run")->check(CLI::Range(0.1, 600.0));
  app.add_option("--max-requests", max_requests, "requests per client at most")
      ->check(CLI::PositiveNumber);
  app.add_option("--family", family_name, "kernel family of the looked-up problem");
  std::vector<std::string> channel_args;
  app.add_option("--channel-arg", channel_args,
                 "an integer gRPC channel argument of every connection, KEY=VALUE (e.g. "
                 "grpc.enable_retries=0); repeatable")
      ->allow_extra_args(false);
  app.add_option("shape", shape, "the problem's shape, e.g. 1024 1024 1024")->required();
  CLI11_PARSE(app, argc, argv);
  // As the daemon: Debian's Abseil checks every lock for deadlocks under one global lock.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const tuned::Family* family = tuned::FindFamily(family_name);
  if (family == nullptr) {
    std::fprintf(stderr, "unknown family %s\n", family_name.c_str());
    return 2;
  }
  tuned::v1::GetBestRequest request;
  request.mutable_problem()->set_family(family->id());
  request.mutable_problem()->set_dtype(tuned::v1::DTYPE_F32);
  for (int64_t d : shape) request.mutable_problem()->add_shape(d);
  request.set_view(view == "full" ? tuned::v1::BEST_VIEW_FULL : tuned::v1::BEST_VIEW_BASIC);

  const tuned::v1::DescribeDeviceRequest describe;
  const grpc::health::v1::HealthCheckRequest health;  // service "": the server as a whole
  using Clock = std::chrono::steady_clock;
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<int64_t> errors{0};
  std::atomic<int> first_error_code{0};
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(seconds));
  // The connections, made up front; client c calls over connection c % connections.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < (connections > 0 ? connections : clients); ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    for (const std::string& kv : channel_args) {
      const size_t eq = kv.find('=');
      int value = 0;
      if (eq == std::string::npos || !absl::SimpleAtoi(kv.substr(eq + 1), &value)) {
        std::fprintf(stderr, "--channel-arg takes KEY=INTEGER, got %s\n", kv.c_str());
        return 2;
      }
      args.SetInt(kv.substr(0, eq), value);
    }
    channels.push_back(grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
  }
  auto channel = [&channels](int c) { return channels[c % channels.size()]; };
  auto record = [&](int c, const grpc::Status& s, Clock::time_point t0) {
    if (!s.ok()) {
      ++errors;
      int zero = 0;
      first_error_code.compare_exchange_strong(zero, static_cast<int>(s.error_code()));
      return;
    }
    latencies[c].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  };
  if (api == "sync") {
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        auto stub = tuned::v1::Tuner::NewStub(channel(c));
        auto health_stub = grpc::health::v1::Health::NewStub(channel(c));
        latencies[c].reserve(16384);
        for (int64_t i = 0; i < max_requests && Clock::now() < end; ++i) {
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
          tuned::v1::BestKernel reply;
          tuned::v1::Device device;
          grpc::health::v1::HealthCheckResponse serving;
          const auto t0 = Clock::now();
          record(c, method == "best"     ? stub->GetBest(&ctx, request, &reply)
                    : method == "health" ? health_stub->Check(&ctx, health, &serving)
                                         : stub->DescribeDevice(&ctx, describe, &device),
                 t0);
        }
      });
    }
    for (auto& t : threads) t.join();
  } else if (api == "async") {
    // One call in flight per client; its tag is itself.
    struct Call {
      int client;
      Clock::time_point t0;
      grpc::ClientContext ctx;
      grpc::Status status;
      tuned::v1::BestKernel reply;
      tuned::v1::Device device;
      grpc::health::v1::HealthCheckResponse serving;
      std::unique_ptr<grpc::ClientAsyncResponseReader<tuned::v1::BestKernel>> best;
      std::unique_ptr<grpc::ClientAsyncResponseReader<tuned::v1::Device>> describe;
      std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::health::v1::HealthCheckResponse>> check;
    };
    std::vector<std::unique_ptr<tuned::v1::Tuner::Stub>> stubs;
    std::vector<std::unique_ptr<grpc::health::v1::Health::Stub>> health_stubs;
    std::vector<int64_t> calls(clients, 0);
    for (int c = 0; c < clients; ++c) {
      stubs.push_back(tuned::v1::Tuner::NewStub(channel(c)));
      health_stubs.push_back(grpc::health::v1::Health::NewStub(channel(c)));
      latencies[c].reserve(16384);
    }
    auto start_call = [&](int c, grpc::CompletionQueue* cq) {
      auto* call = new Call;
      call->client = c;
      call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      ++calls[c];
      call->t0 = Clock::now();
      if (method == "best") {
        call->best = stubs[c]->AsyncGetBest(&call->ctx, request, cq);
        call->best->Finish(&call->reply, &call->status, call);
      } else if (method == "health") {
        call->check = health_stubs[c]->AsyncCheck(&call->ctx, health, cq);
        call->check->Finish(&call->serving, &call->status, call);
      } else {
        call->describe = stubs[c]->AsyncDescribeDevice(&call->ctx, describe, cq);
        call->describe->Finish(&call->device, &call->status, call);
      }
    };
    std::vector<std::thread> pollers;
    for (int t = 0; t < std::min(threads, clients); ++t) {
      pollers.emplace_back([&, t] {
        grpc::CompletionQueue cq;
        int in_flight = 0;
        for (int c = t; c < clients; c += threads) {
          start_call(c, &cq);
          ++in_flight;
        }
        void* tag = nullptr;
        bool ok = false;
        // The next completion: waited for, or with --spin polled for.
        const Clock::time_point spin_until = spin ? Clock::time_point::max() : Clock::time_point();
        auto next = [&cq, spin_until](void** tag, bool* ok) {
          return tuned::NextEvent(&cq, spin_until, tag, ok);
        };
        while (in_flight > 0 && next(&tag, &ok)) {
          std::unique_ptr<Call> call(static_cast<Call*>(tag));
          record(call->client, ok ? call->status : grpc::Status(grpc::StatusCode::UNKNOWN, "not ok"),
                 call->t0);
          if (calls[call->client] < max_requests && Clock::now() < end) {
            start_call(call->client, &cq);
          } else {
            --in_flight;
          }
        }
        cq.Shutdown();
        while (cq.Next(&tag, &ok)) delete static_cast<Call*>(tag);
      });
    }
    for (auto& p : pollers) p.join();
  } else {
    // Each client's calls alternate between two contexts and replies: call
    // i+1 starts in call i's completion, when call i-1's are long done.
    struct Chain {
      std::unique_ptr<tuned::v1::Tuner::Stub> stub;
      std::unique_ptr<grpc::health::v1::Health::Stub> health_stub;
      grpc::ClientContext ctx[2];
      tuned::v1::BestKernel reply[2];
      tuned::v1::Device device[2];
      grpc::health::v1::HealthCheckResponse serving[2];
      int64_t calls = 0;
    };
    std::vector<std::unique_ptr<Chain>> chains(clients);
    std::mutex mu;
    std::condition_variable cv;
    int running = clients;
    std::function<void(int)> next = [&](int c) {
      Chain& ch = *chains[c];
      if (ch.calls >= max_requests || Clock::now() >= end) {
        std::lock_guard<std::mutex> lock(mu);
        if (--running == 0) cv.notify_one();
        return;
      }
      const int slot = static_cast<int>(ch.calls++ % 2);
      ch.ctx[slot].~ClientContext();
      new (&ch.ctx[slot]) grpc::ClientContext();
      ch.ctx[slot].set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      const auto t0 = Clock::now();
      auto done = [&, c, t0](grpc::Status s) {
        record(c, s, t0);
        next(c);
      };
      if (method == "best") {
        ch.stub->async()->GetBest(&ch.ctx[slot], &request, &ch.reply[slot], done);
      } else if (method == "health") {
        ch.health_stub->async()->Check(&ch.ctx[slot], &health, &ch.serving[slot], done);
      } else {
        ch.stub->async()->DescribeDevice(&ch.ctx[slot], &describe, &ch.device[slot], done);
      }
    };
    for (int c = 0; c < clients; ++c) {
      chains[c] = std::make_unique<Chain>();
      chains[c]->stub = tuned::v1::Tuner::NewStub(channel(c));
      chains[c]->health_stub = grpc::health::v1::Health::NewStub(channel(c));
      latencies[c].reserve(16384);
    }
    for (int c = 0; c < clients; ++c) next(c);
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return running == 0; });
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double cpu_s = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
                       (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&all](double p) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
  };
  const std::string api_name =
      api == "async"
          ? api + " threads=" + std::to_string(std::min(threads, clients)) + (spin ? " spin" : "")
          : api;
  std::printf("api=%s method=%s view=%s clients=%d connections=%zu seconds=%.1f requests=%zu errors=%lld "
              "qps=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f client_cpu_us=%.1f client_switches=%.2f\n",
              api_name.c_str(), method.c_str(), view.c_str(), clients, channels.size(), wall, all.size(),
              static_cast<long long>(errors.load()), all.size() / wall, pct(0.50), pct(0.99),
              all.empty() ? 0.0 : all.back(), all.empty() ? 0.0 : cpu_s * 1e6 / all.size(),
              all.empty() ? 0.0 : static_cast<double>(usage.ru_nvcsw + usage.ru_nivcsw) / all.size());
  if (errors > 0) std::fprintf(stderr, "first error: gRPC code %d\n", first_error_code.load());
  return all.empty() ? 1 : 0;
}
