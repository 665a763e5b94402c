// GetBest, the look-up a client makes before it launches a kernel, served
// by gRPC's asynchronous API: a completion queue per poller thread, each
// with calls requested ahead, and each call answered (TunerService::
// AnswerBest) on the thread that took it from its queue, with no hand-off
// to a pool. Under gRPC's poll engine (server/main.cc) one client's look-up
// then costs the daemon one context switch, none while a thread polls on
// (bench/RESULTS.md load-async).
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/completion_queue.h"
#include "grpcpp/server_builder.h"

namespace tuned {

class TunerService;

class BestPollers {
 public:
  /// Calls requested ahead on each queue: a call that arrives while its
  /// connection's queue has none requested takes one of another queue's.
  static constexpr int kRequestedAhead = 32;

  /// Adds `threads` (at least 1) completion queues to `builder`, for
  /// `service`'s GetBest; before builder.BuildAndStart(). `service` must
  /// be registered with `builder` and outlive this object.
  /// After each call a thread polls its queue without sleeping for
  /// `spin_us` µs before it blocks: a client's next call, arriving within
  /// that time, finds the thread awake (0: block at once). The threads run
  /// on the CPUs of `cpus`, a CPU list (server/common/cpus.h; empty: where
  /// the starting thread may).
  BestPollers(grpc::ServerBuilder& builder, TunerService* service, int threads, int spin_us = 0,
              std::string cpus = "");
  /// Requests the first calls and starts the threads: once, after the
  /// server is built and started.
  void Start();
  /// Shuts the queues down, drains them and joins the threads. Only after
  /// the server's Shutdown has returned (gRPC's rule for its queues);
  /// idempotent, and the destructor calls it.
  void Stop();
  ~BestPollers() { Stop(); }

  BestPollers(const BestPollers&) = delete;
  BestPollers& operator=(const BestPollers&) = delete;

 private:
  struct Call;
  void Request(grpc::ServerCompletionQueue* queue);
  void Poll(grpc::ServerCompletionQueue* queue);

  TunerService* service_;
  int spin_us_;
  std::string cpus_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
};

}  // namespace tuned
