#include "server/best_pollers.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "grpcpp/server_context.h"
#include "grpcpp/support/async_unary_call.h"
#include "grpcpp/support/byte_buffer.h"
#include "spdlog/spdlog.h"
#include "server/common/cpus.h"
#include "server/service.h"
#include "server/spin_poll.h"

namespace tuned {

// One GetBest call: requested, then answered; its tag is itself.
struct BestPollers::Call {
  grpc::ServerContext ctx;
  grpc::ByteBuffer request;
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> responder{&ctx};
  bool answered = false;  // Finish started: the next event is its end
};

BestPollers::BestPollers(grpc::ServerBuilder& builder, TunerService* service, int threads,
                         int spin_us, std::string cpus)
    : service_(service), spin_us_(spin_us), cpus_(std::move(cpus)) {
  for (int i = 0; i < std::max(1, threads); ++i) queues_.push_back(builder.AddCompletionQueue());
}

void BestPollers::Start() {
  for (auto& queue : queues_) {
    for (int i = 0; i < kRequestedAhead; ++i) Request(queue.get());
    threads_.emplace_back([this, q = queue.get()] {
      if (auto s = PinCallingThread(cpus_); !s.ok()) {
        spdlog::warn("GetBest thread: {}", std::string(s.message()));
      }
      Poll(q);
    });
  }
}

void BestPollers::Request(grpc::ServerCompletionQueue* queue) {
  auto* call = new Call;
  service_->RequestGetBest(&call->ctx, &call->request, &call->responder, queue, queue, call);
}

void BestPollers::Poll(grpc::ServerCompletionQueue* queue) {
  void* tag = nullptr;
  bool ok = false;
  std::chrono::steady_clock::time_point spin_until;  // past: wait for the first call
  while (NextEvent(queue, spin_until, &tag, &ok)) {
    spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
    auto* call = static_cast<Call*>(tag);
    // A finished call, or a requested one that the server's shutdown ended.
    if (call->answered || !ok) {
      delete call;
      continue;
    }
    Request(queue);  // keeps kRequestedAhead requested on this queue
    grpc::ByteBuffer response;
    const grpc::Status status = service_->AnswerBest(call->ctx, call->request, &response);
    call->answered = true;
    if (status.ok()) {
      call->responder.Finish(response, status, call);
    } else {
      call->responder.FinishWithError(status, call);
    }
  }
}

void BestPollers::Stop() {
  if (queues_.empty()) return;
  for (auto& queue : queues_) queue->Shutdown();
  for (auto& t : threads_) t.join();
  threads_.clear();
  // Never started: the queues hold nothing requested, but must be drained.
  void* tag = nullptr;
  bool ok = false;
  for (auto& queue : queues_) {
    while (queue->Next(&tag, &ok)) delete static_cast<Call*>(tag);
  }
  queues_.clear();
}

}  // namespace tuned
