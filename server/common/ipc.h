// Framing for the daemon <-> GPU worker pipe: each message is a 4-byte
// little-endian size followed by the serialized protobuf.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "google/protobuf/message_lite.h"

namespace tuned {

/// Largest message accepted on the pipe (a cubin and its PTX fit easily).
inline constexpr uint32_t kMaxPipeMessageBytes = 256u << 20;

/// Writes one framed message to `fd`. UNAVAILABLE if the peer is gone.
absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& msg);
/// Reads one framed message from `fd`. UNAVAILABLE on end of file (the peer
/// exited), DATA_LOSS on a bad frame.
absl::Status ReadMessage(int fd, google::protobuf::MessageLite* msg);

}  // namespace tuned
