// Framing for the daemon <-> GPU worker pipe: each message is a 4-byte
// little-endian size followed by the serialized protobuf.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "tuned/v1/worker.pb.h"

namespace tuned {

/// Largest message accepted on the pipe (a cubin and its PTX fit easily).
inline constexpr uint32_t kMaxPipeMessageBytes = 256u << 20;

/// Writes one framed message to `fd`. UNAVAILABLE if the peer is gone.
absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& msg);
/// Reads one framed message from `fd`. UNAVAILABLE on end of file (the peer
/// exited), DATA_LOSS on a bad frame.
absl::Status ReadMessage(int fd, google::protobuf::MessageLite* msg);

/// The problem a worker's Prepare names: its key's (Prepare.key: the family
/// and variant) at its shape, or Prepare.problem where it has no key.
/// INVALID_ARGUMENT for a malformed key (core/problem_key.h ParseKey).
absl::StatusOr<v1::Problem> PreparedProblem(const v1::worker::Prepare& prepare);

}  // namespace tuned
