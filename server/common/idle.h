// Idle CPU priority for the daemon's background work (a cost model's fit,
// the compile-ahead's compiler): it runs only on cores that no thread of
// normal priority wants, so serving keeps its latency while the daemon
// works (Linux SCHED_IDLE, sched(7)).
#pragma once

#include <thread>
#include <utility>

#include "absl/status/status.h"

namespace tuned {

/// Puts the calling thread under SCHED_IDLE; threads it starts later inherit
/// it. Cannot be undone without CAP_SYS_NICE. INTERNAL when the call fails.
/// Does nothing after SetIdlePriority(false).
absl::Status EnterIdlePriority();

/// Whether EnterIdlePriority lowers a thread's priority in this process: on
/// unless the daemon's --work-priority is normal. Set once, before the
/// threads that call it start.
void SetIdlePriority(bool on);

/// Runs `f` on a thread of its own at idle priority (at normal priority
/// where the system refuses it) and returns its result; the caller waits.
template <typename F>
auto AtIdlePriority(F&& f) {
  decltype(f()) out;
  std::thread t([&] {
    (void)EnterIdlePriority();
    out = f();
  });
  t.join();
  return out;
}

}  // namespace tuned
