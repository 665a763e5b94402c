// The log format of the daemon and its worker: one JSON object per line on
// stderr, one line per event, e.g.
//   {"ts":"2026-11-22T10:00:00.123Z","level":"info","proc":"tuned","pid":42,"msg":"job 3 queued: ..."}
// ts is UTC (RFC 3339, milliseconds); msg is JSON-escaped, so a message with
// newlines (an NVRTC log) stays on its line. journald, `kubectl logs` and jq
// read it as is.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace tuned {

/// Log levels accepted by --log-level, least to most severe.
inline constexpr std::string_view kLogLevels[] = {"trace", "debug", "info", "warn",
                                                   "error", "critical", "off"};

/// Makes the default spdlog logger write JSON lines to stderr at `level`;
/// `proc` names the process ("tuned", "worker"). INVALID_ARGUMENT for a level
/// not in kLogLevels (nothing changes then).
absl::Status SetUpLogging(std::string_view proc, std::string_view level);

}  // namespace tuned
