#include "db/database.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tuned {

int64_t Rows::Int(size_t row, int col) const {
  const auto& c = cells_[row][col];
  int64_t v = 0;
  if (!c || !absl::SimpleAtoi(*c, &v)) {
    double d = 0;  // an integer computed as a real (e.g. SUM over REALs)
    return c && absl::SimpleAtod(*c, &d) ? static_cast<int64_t>(d) : 0;
  }
  return v;
}

double Rows::Double(size_t row, int col) const {
  const auto& c = cells_[row][col];
  double v = 0;
  return c && absl::SimpleAtod(*c, &v) ? v : 0;
}

const std::string& Rows::Text(size_t row, int col) const {
  static const std::string kEmpty;
  const auto& c = cells_[row][col];
  return c ? *c : kEmpty;
}

std::string RewriteSql(std::string_view sql, bool dollar,
                       const std::vector<std::pair<std::string_view, std::string_view>>& tokens) {
  std::string out;
  out.reserve(sql.size() + 32);
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '?' && dollar && i + 1 < sql.size() && absl::ascii_isdigit(sql[i + 1])) {
      out += '$';
      continue;
    }
    if (c == '{') {
      const size_t end = sql.find('}', i);
      if (end != std::string_view::npos) {
        const std::string_view name = sql.substr(i + 1, end - i - 1);
        bool found = false;
        for (const auto& [token, text] : tokens) {
          if (token == name) {
            out += text;
            found = true;
            break;
          }
        }
        if (found) {
          i = end;
          continue;
        }
      }
    }
    out += c;
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& url) {
  if (absl::StartsWith(url, "postgresql://") || absl::StartsWith(url, "postgres://")) {
    return OpenPostgres(url);
  }
  if (absl::StartsWith(url, "sqlite://")) {
    // sqlite:///abs/path (three slashes) or sqlite://rel/path.
    return OpenSqlite(url.substr(std::string_view("sqlite://").size()));
  }
  if (const size_t colon = url.find("://"); colon != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown database URL scheme '", url.substr(0, colon),
                     "' (a path, sqlite:///path or postgresql://user@host:port/dbname)"));
  }
  return OpenSqlite(url);
}

}  // namespace tuned
