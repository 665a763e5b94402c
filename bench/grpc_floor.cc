// grpc_floor: the transport's floor under a look-up. A server of nothing but
// grpc.health.v1.Health/Check (answer SERVING, no store, no service of its
// own), on the same design as the daemon's GetBest (server/best_pollers.h):
// gRPC's asynchronous API, T threads each polling a completion queue of its
// own, each polling on without sleeping for S µs after a call, under gRPC's
// poll engine (as server/main.cc sets it) unless GRPC_POLL_STRATEGY names
// another. bench/loadtest --method health against it and against the daemon
// tells how much of a look-up's latency is the transport and the two
// processes' wake-ups on a machine, and how much the daemon's own.
// Usage: grpc_floor --socket PATH [--threads 4] [--spin-us 100] [--seconds 60]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/spin_poll.h"

namespace {

using Health = grpc::health::v1::Health;

// One Check call: requested, then answered; its tag is itself.
struct Call {
  grpc::ServerContext ctx;
  grpc::health::v1::HealthCheckRequest request;
  grpc::ServerAsyncResponseWriter<grpc::health::v1::HealthCheckResponse> responder{&ctx};
  bool answered = false;
};

void Request(Health::AsyncService* service, grpc::ServerCompletionQueue* queue) {
  auto* call = new Call;
  service->RequestCheck(&call->ctx, &call->request, &call->responder, queue, queue, call);
}

void Poll(Health::AsyncService* service, grpc::ServerCompletionQueue* queue, int spin_us) {
  void* tag = nullptr;
  bool ok = false;
  std::chrono::steady_clock::time_point spin_until;  // past: wait for the first call
  while (tuned::NextEvent(queue, spin_until, &tag, &ok)) {
    spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
    auto* call = static_cast<Call*>(tag);
    if (call->answered || !ok) {
      delete call;
      continue;
    }
    Request(service, queue);
    grpc::health::v1::HealthCheckResponse reply;
    reply.set_status(grpc::health::v1::HealthCheckResponse::SERVING);
    call->answered = true;
    call->responder.Finish(reply, grpc::Status::OK, call);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"grpc_floor: a server of grpc.health.v1 Check alone, the transport's floor"};
  std::string socket;
  int threads = 4, spin_us = 100;
  double seconds = 60;
  app.add_option("--socket", socket, "Unix socket path to listen on")->required();
  app.add_option("--threads", threads, "poller threads, each with its queue")->check(CLI::Range(1, 64));
  app.add_option("--spin-us", spin_us, "µs a thread polls on without sleeping after a call")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--seconds", seconds, "how long to serve")->check(CLI::Range(0.1, 3600.0));
  CLI11_PARSE(app, argc, argv);
  setenv("GRPC_POLL_STRATEGY", "poll", /*overwrite=*/0);

  Health::AsyncService service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues;
  for (int i = 0; i < threads; ++i) queues.push_back(builder.AddCompletionQueue());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::fprintf(stderr, "grpc_floor: cannot listen on unix:%s\n", socket.c_str());
    return 1;
  }
  std::vector<std::thread> pollers;
  for (auto& queue : queues) {
    for (int i = 0; i < 4; ++i) Request(&service, queue.get());
    pollers.emplace_back(Poll, &service, queue.get(), spin_us);
  }
  std::printf("grpc_floor: serving unix:%s, %d threads, %d µs of polling on\n", socket.c_str(),
              threads, spin_us);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  server->Shutdown();
  for (auto& queue : queues) queue->Shutdown();
  for (auto& poller : pollers) poller.join();
  return 0;
}
