#include "server/common/ipc.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/problem_key.h"
#include "core/status.h"

namespace tuned {
namespace {

absl::Status WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return absl::UnavailableError(absl::StrCat("pipe write: ", std::strerror(errno)));
    data += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status ReadAll(int fd, char* data, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, data, n);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return absl::UnavailableError("pipe closed: the peer exited");
    if (r < 0) return absl::UnavailableError(absl::StrCat("pipe read: ", std::strerror(errno)));
    data += r;
    n -= static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& msg) {
  std::string body;
  if (!msg.SerializeToString(&body)) return absl::InternalError("cannot serialize message");
  if (body.size() > kMaxPipeMessageBytes) {
    return absl::ResourceExhaustedError(absl::StrCat("message of ", body.size(), " bytes"));
  }
  const uint32_t n = static_cast<uint32_t>(body.size());
  const char header[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                          static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
  TUNED_RETURN_IF_ERROR(WriteAll(fd, header, 4));
  return WriteAll(fd, body.data(), body.size());
}

absl::Status ReadMessage(int fd, google::protobuf::MessageLite* msg) {
  unsigned char header[4];
  TUNED_RETURN_IF_ERROR(ReadAll(fd, reinterpret_cast<char*>(header), 4));
  const uint32_t n = header[0] | (header[1] << 8) | (header[2] << 16) |
                     (static_cast<uint32_t>(header[3]) << 24);
  if (n > kMaxPipeMessageBytes) return absl::DataLossError(absl::StrCat("frame of ", n, " bytes"));
  std::string body(n, '\0');
  TUNED_RETURN_IF_ERROR(ReadAll(fd, body.data(), n));
  if (!msg->ParseFromString(body)) return absl::DataLossError("cannot parse message");
  return absl::OkStatus();
}

absl::StatusOr<v1::Problem> PreparedProblem(const v1::worker::Prepare& prepare) {
  if (prepare.key().empty()) return prepare.problem();
  auto key = ParseKey(prepare.key());
  if (!key.ok()) return key.status();
  auto problem = ToProblem(*key);
  if (!problem.ok()) return problem.status();
  problem->mutable_shape()->Assign(prepare.shape().begin(), prepare.shape().end());
  return problem;
}

}  // namespace tuned
