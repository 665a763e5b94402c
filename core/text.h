// Bounded quotes of user-supplied text in messages: an error names what is
// wrong without echoing megabytes back (a status message travels in gRPC's
// trailing metadata, whose default limit is 8 KiB).
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tuned {

/// `text` in single quotes, cut to its first `max` bytes with "..." and its
/// whole length where longer: 'abc...' (5242880 bytes).
inline std::string Quote(absl::string_view text, size_t max = 64) {
  if (text.size() <= max) return "'" + std::string(text) + "'";
  return "'" + std::string(text.substr(0, max)) + "...' (" + std::to_string(text.size()) + " bytes)";
}

/// `message` within about `max` bytes (default 1 KiB, well under the 8 KiB
/// of metadata): a longer one, which quotes some input whole, keeps its first
/// three quarters and its last quarter (where a message's advice sits), the
/// middle replaced by "[... N bytes ...]".
inline std::string BoundMessage(absl::string_view message, size_t max = 1024) {
  if (message.size() <= max) return std::string(message);
  const size_t head = max * 3 / 4, tail = max / 4;
  return std::string(message.substr(0, head)) + "[... " + std::to_string(message.size() - head - tail) +
         " bytes ...]" + std::string(message.substr(message.size() - tail));
}

}  // namespace tuned
