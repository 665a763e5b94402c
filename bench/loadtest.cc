// loadtest: concurrent `best` look-ups against a running daemon, from a
// separate process: C clients, each with its own gRPC connection, call
// GetBest back to back (closed loop, callback API) for D seconds (or until R
// requests each); the latencies of all calls give QPS and p50/p99/max in ms.
// Bounded in count and time so it can run anywhere.
// Usage: loadtest --server ADDR [--clients 64] [--seconds 10] [--max-requests 100000]
//                 [--view basic|full] [--family sgemm] SHAPE...
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "CLI/CLI.hpp"
#include "grpcpp/grpcpp.h"
#include "server/families/family.h"
#include "tuned/v1/tuner.grpc.pb.h"

int main(int argc, char** argv) {
  CLI::App app{"loadtest: concurrent GetBest calls, QPS and latency percentiles"};
  std::string server, family_name = "sgemm";
  int clients = 64;
  double seconds = 10;
  int64_t max_requests = 100000;
  std::vector<int64_t> shape;
  std::string view = "basic", method = "best";
  app.add_option("--method", method,
                 "best (GetBest) or device (DescribeDevice: the transport's floor, no store)")
      ->check(CLI::IsMember({"best", "device"}));
  app.add_option("--view", view, "basic (config, times, geometry) or full (with source, cubin, PTX)")
      ->check(CLI::IsMember({"basic", "full"}));
  app.add_option("--server", server, "daemon address, e.g. unix:/run/tuned/gpu0.sock")->required();
  app.add_option("--clients", clients, "concurrent clients, one connection each")
      ->check(CLI::Range(1, 1024));
  app.add_option("--seconds", seconds, "how long to run")->check(CLI::Range(0.1, 600.0));
  app.add_option("--max-requests", max_requests, "requests per client at most")
      ->check(CLI::PositiveNumber);
  app.add_option("--family", family_name, "kernel family of the looked-up problem");
  app.add_option("shape", shape, "the problem's shape, e.g. 1024 1024 1024")->required();
  CLI11_PARSE(app, argc, argv);
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

  using Clock = std::chrono::steady_clock;
  // Each client is a closed loop on its own connection: the next call starts
  // in the completion callback of the last one (gRPC's callback API), so no
  // thread per client competes with the daemon for the cores.
  struct Loop {
    std::unique_ptr<tuned::v1::Tuner::Stub> stub;
    std::unique_ptr<grpc::ClientContext> ctx;
    tuned::v1::BestKernel reply;
    tuned::v1::Device device;
    std::vector<double> latencies;
    Clock::time_point t0;
    int64_t sent = 0;
  };
  std::vector<Loop> loops(clients);
  std::atomic<int64_t> errors{0};
  std::atomic<int> first_error_code{0};
  std::mutex mu;
  std::condition_variable cv;
  int running = clients;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(seconds));
  std::function<void(Loop&)> next = [&](Loop& loop) {
    if (loop.sent >= max_requests || Clock::now() >= end) {
      std::lock_guard<std::mutex> lock(mu);
      if (--running == 0) cv.notify_all();
      return;
    }
    ++loop.sent;
    loop.ctx = std::make_unique<grpc::ClientContext>();
    loop.ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    loop.t0 = Clock::now();
    auto done = [&loop, &next, &errors, &first_error_code](grpc::Status s) {
      const auto t1 = Clock::now();
      if (s.ok()) {
        loop.latencies.push_back(std::chrono::duration<double, std::milli>(t1 - loop.t0).count());
      } else {
        ++errors;
        int zero = 0;
        first_error_code.compare_exchange_strong(zero, static_cast<int>(s.error_code()));
      }
      next(loop);
    };
    if (method == "best") {
      loop.stub->async()->GetBest(loop.ctx.get(), &request, &loop.reply, done);
    } else {
      static const tuned::v1::DescribeDeviceRequest kDescribe;
      loop.stub->async()->DescribeDevice(loop.ctx.get(), &kDescribe, &loop.device, done);
    }
  };
  for (auto& loop : loops) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    loop.stub = tuned::v1::Tuner::NewStub(
        grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
    loop.latencies.reserve(16384);
  }
  for (auto& loop : loops) next(loop);
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return running == 0; });
  }
  std::vector<std::vector<double>> latencies;
  for (auto& loop : loops) latencies.push_back(std::move(loop.latencies));
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&all](double p) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
  };
  std::printf("method=%s view=%s clients=%d seconds=%.1f requests=%zu errors=%lld qps=%.0f p50_ms=%.3f "
              "p99_ms=%.3f max_ms=%.3f\n",
              method.c_str(), view.c_str(), clients, wall, all.size(), static_cast<long long>(errors.load()),
              all.size() / wall, pct(0.50), pct(0.99), all.empty() ? 0.0 : all.back());
  if (errors > 0) std::fprintf(stderr, "first error: gRPC code %d\n", first_error_code.load());
  return all.empty() ? 1 : 0;
}
