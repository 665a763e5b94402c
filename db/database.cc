#include "db/database.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/problem_key.h"
#include "core/status.h"

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

namespace {

/// The problem (no shape) of a family column as schema 10 held it: a
/// built-in family's enum name, or "<name>@<spec hash>".
absl::Status ReadOldFamily(const std::string& family, v1::Problem* p) {
  const size_t at = family.find('@');
  if (at != std::string::npos && at > 0 && at + 1 < family.size()) {
    p->set_family_name(family.substr(0, at));
    p->set_spec_hash(family.substr(at + 1));
    return absl::OkStatus();
  }
  v1::Family f;
  if (at != std::string::npos || !v1::Family_Parse(family, &f)) {
    return absl::DataLossError(absl::StrCat("stored problem has unknown family '", family, "'"));
  }
  p->set_family(f);
  return absl::OkStatus();
}

}  // namespace

absl::Status KeyMigratedProblems(Database& db) {
  auto rows = db.Query("SELECT id, key FROM problems WHERE key LIKE '% %'", {});
  if (!rows.ok()) return rows.status();
  for (size_t r = 0; r < rows->size(); ++r) {
    const std::string& old = rows->Text(r, 1);
    const std::vector<std::string> cols = absl::StrSplit(old, ' ');
    v1::Problem p;
    v1::DType dtype;
    v1::Math math;
    v1::Layout layout;
    v1::Epilogue epilogue;
    if (cols.size() != 5 || !ReadOldFamily(cols[0], &p).ok() || !v1::DType_Parse(cols[1], &dtype) ||
        !v1::Math_Parse(cols[2], &math) || !v1::Layout_Parse(cols[3], &layout) ||
        !v1::Epilogue_Parse(cols[4], &epilogue)) {
      return absl::DataLossError(absl::StrCat(
          "a stored problem's family, dtype, math, layout or epilogue is unknown to this build: '", old, "'"));
    }
    p.set_dtype(dtype);
    p.set_math(math);
    p.set_layout(layout);
    p.set_epilogue(epilogue);
    const std::string key = FormatKey(KeyOf(p));
    TUNED_RETURN_IF_ERROR(
        db.Query("UPDATE problems SET key = ?1 WHERE id = ?2", {std::string_view(key), rows->Int(r, 0)}).status());
  }
  // An SQLite database older than crashes gets it from schema.sql, after the migrations.
  auto has_crashes = db.Query(db.backend() == "sqlite"
                                  ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'crashes'"
                                  : "SELECT CASE WHEN to_regclass('crashes') IS NULL THEN 0 ELSE 1 END",
                              {});
  if (!has_crashes.ok()) return has_crashes.status();
  if (has_crashes->Int(0, 0) == 0) return absl::OkStatus();
  auto families = db.Query("SELECT DISTINCT family FROM crashes", {});
  if (!families.ok()) return families.status();
  for (size_t r = 0; r < families->size(); ++r) {
    const std::string& old = families->Text(r, 0);
    v1::Problem p;
    TUNED_RETURN_IF_ERROR(ReadOldFamily(old, &p));
    const std::string family = FormatFamily(KeyOf(p));
    if (family == old) continue;
    TUNED_RETURN_IF_ERROR(
        db.Query("UPDATE crashes SET family = ?1 WHERE family = ?2", {std::string_view(family), std::string_view(old)})
            .status());
  }
  return absl::OkStatus();
}

}  // namespace tuned
