// The next event of a completion queue for a poller thread that polls on
// without sleeping for a while after each call, so that a client's next
// call finds it awake: GetBest's pollers (server/best_pollers.h) and
// bench/grpc_floor, the transport's floor measured the same way.
#pragma once

#include <chrono>

#include "grpc/support/time.h"
#include "grpcpp/completion_queue.h"

namespace tuned {

/// Polls `queue` without sleeping (AsyncNext with a deadline already past)
/// until `spin_until`, then waits (Next). Returns true with the event's
/// `tag` and `ok`, or false once the queue is shut down and drained.
inline bool NextEvent(grpc::CompletionQueue* queue,
                      std::chrono::steady_clock::time_point spin_until, void** tag, bool* ok) {
  while (std::chrono::steady_clock::now() < spin_until) {
    switch (queue->AsyncNext(tag, ok, gpr_time_0(GPR_CLOCK_MONOTONIC))) {
      case grpc::CompletionQueue::GOT_EVENT:
        return true;
      case grpc::CompletionQueue::SHUTDOWN:
        return false;
      case grpc::CompletionQueue::TIMEOUT:
        break;
    }
  }
  return queue->Next(tag, ok);
}

}  // namespace tuned
