#include "server/common/idle.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace tuned {

absl::Status EnterIdlePriority() {
  const sched_param param{.sched_priority = 0};
  if (const int err = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param); err != 0) {
    return absl::InternalError(absl::StrCat("SCHED_IDLE: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace tuned
