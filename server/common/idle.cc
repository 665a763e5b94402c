#include "server/common/idle.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tuned {
namespace {
std::atomic<bool> idle_priority{true};
}  // namespace

void SetIdlePriority(bool on) { idle_priority = on; }

absl::Status EnterIdlePriority() {
  if (!idle_priority) return absl::OkStatus();
  const sched_param param{.sched_priority = 0};
  if (const int err = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param); err != 0) {
    return absl::InternalError(absl::StrCat("SCHED_IDLE: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace tuned
