#include "server/common/log.h"

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace tuned {
namespace {

// %j: the message as the body of a JSON string (RFC 8259 section 7 escapes).
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr char kHex[] = "0123456789abcdef";
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      const auto u = static_cast<unsigned char>(c);
      switch (c) {
        case '"': dest.append(std::string_view("\\\"")); break;
        case '\\': dest.append(std::string_view("\\\\")); break;
        case '\n': dest.append(std::string_view("\\n")); break;
        case '\r': dest.append(std::string_view("\\r")); break;
        case '\t': dest.append(std::string_view("\\t")); break;
        default:
          if (u < 0x20) {
            const char esc[] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 15]};
            dest.append(esc, esc + sizeof(esc));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

}  // namespace

absl::Status SetUpLogging(std::string_view proc, std::string_view level) {
  if (std::find(std::begin(kLogLevels), std::end(kLogLevels), level) == std::end(kLogLevels)) {
    std::string known;
    for (std::string_view l : kLogLevels) known += (known.empty() ? "" : ", ") + std::string(l);
    return absl::InvalidArgumentError(
        absl::StrCat("unknown log level '", std::string(level), "' (known: ", known, ")"));
  }
  auto logger = spdlog::stderr_logger_mt(std::string(proc));
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<JsonMessageFlag>('j').set_pattern(absl::StrCat(
      R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","proc":")", std::string(proc),
      R"(","pid":%P,"msg":"%j"})"));
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::from_str(std::string(level)));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
  return absl::OkStatus();
}

}  // namespace tuned
