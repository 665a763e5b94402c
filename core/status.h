// The one status macro of the project (Triton's RETURN_IF_ERROR pattern).
#pragma once

#include "absl/status/status.h"

/// Returns the status of `expr` from the enclosing function unless it is OK.
#define TUNED_RETURN_IF_ERROR(expr)                    \
  do {                                                 \
    if (absl::Status s_ = (expr); !s_.ok()) return s_; \
  } while (0)
