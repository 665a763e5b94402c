// The SQLite backend of Database (db/database.h): one connection to a file
// (WAL, a busy timeout, foreign keys), the schema of db/sqlite/schema.sql
// versioned by PRAGMA user_version and migrated by db/sqlite/migrations/.
// Every sqlite call is checked and its error carries sqlite3_errmsg.
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "db/database.h"
#include "db/store.h"
#include "db/schema.h"
#include "core/status.h"

namespace tuned {
namespace {

/// The connection's last error as a status: busy/locked are UNAVAILABLE
/// (retryable), constraint violations FAILED_PRECONDITION, the rest INTERNAL.
absl::Status SqlError(sqlite3* db, std::string_view what) {
  std::string msg = absl::StrCat("sqlite: ", std::string(what.substr(0, 60)), ": ", sqlite3_errmsg(db));
  switch (sqlite3_errcode(db) & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(msg);
    case SQLITE_CONSTRAINT:
      return absl::FailedPreconditionError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status Exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return SqlError(db, sql);
  return absl::OkStatus();
}

const std::vector<std::pair<std::string_view, std::string_view>> kSqliteTokens = {
    {"now", "((julianday('now') - 2440587.5) * 86400.0)"},
    {"skip_locked", ""},
    {"bump", "UPDATE generation SET value = value + 1 WHERE id = 1"},
    {"generation", "SELECT value FROM generation WHERE id = 1"},
};

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(sqlite3* db, std::string name) : db_(db), name_(std::move(name)) {}
  ~SqliteDatabase() override { sqlite3_close_v2(db_); }

  absl::StatusOr<Rows> Query(std::string_view sql_in, const std::vector<Value>& args) override {
    const std::string sql = RewriteSql(sql_in, /*dollar=*/false, kSqliteTokens);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      return SqlError(db_, sql);
    }
    struct Finalize {
      sqlite3_stmt* s;
      ~Finalize() { sqlite3_finalize(s); }
    } finalize{stmt};
    for (size_t i = 0; i < args.size(); ++i) {
      const int n = static_cast<int>(i) + 1;
      const Value& v = args[i];
      int rc = SQLITE_OK;
      if (std::holds_alternative<std::nullptr_t>(v)) {
        rc = sqlite3_bind_null(stmt, n);
      } else if (const auto* x = std::get_if<int64_t>(&v)) {
        rc = sqlite3_bind_int64(stmt, n, *x);
      } else if (const auto* d = std::get_if<double>(&v)) {
        rc = sqlite3_bind_double(stmt, n, *d);
      } else if (const auto* s = std::get_if<std::string_view>(&v)) {
        rc = sqlite3_bind_text64(stmt, n, s->data() ? s->data() : "", s->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      } else {
        const Blob& b = std::get<Blob>(v);
        rc = sqlite3_bind_blob64(stmt, n, b.bytes.data() ? b.bytes.data() : "", b.bytes.size(), SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) return SqlError(db_, sql);
    }
    Rows rows;
    const int cols = sqlite3_column_count(stmt);
    for (;;) {
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return SqlError(db_, sql);
      auto& row = rows.cells().emplace_back(cols);
      for (int c = 0; c < cols; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_NULL:
            break;
          case SQLITE_INTEGER:
            row[c] = std::to_string(sqlite3_column_int64(stmt, c));
            break;
          case SQLITE_FLOAT: {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.17g", sqlite3_column_double(stmt, c));
            row[c] = buf;
            break;
          }
          default: {  // TEXT or BLOB, NULs kept
            const void* p = sqlite3_column_blob(stmt, c);
            const int n = sqlite3_column_bytes(stmt, c);
            row[c] = p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
          }
        }
      }
    }
    rows.set_affected(sqlite3_changes(db_));
    return rows;
  }

  absl::Status Begin(bool /*serialize: every write transaction is*/) override {
    return Exec(db_, "BEGIN IMMEDIATE");
  }
  absl::Status Commit() override { return Exec(db_, "COMMIT"); }
  void Rollback() override {
    // Unchecked on purpose: sqlite may have rolled back on its own already.
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  std::string_view backend() const override { return "sqlite"; }
  const std::string& name() const override { return name_; }

  /// Checks the schema version and applies schema.sql to a fresh database,
  /// or the migrations and then schema.sql to an older one.
  absl::Status ApplySchema() {
    auto too_new = [](int64_t v) {
      return absl::FailedPreconditionError(absl::StrCat("database schema version ", v,
                                                        " is newer than this build's ",
                                                        Store::kSchemaVersion, "; upgrade tuned"));
    };
    absl::StatusOr<int64_t> version = UserVersion();
    if (!version.ok()) return version.status();
    if (*version > Store::kSchemaVersion) return too_new(*version);
    if (*version == Store::kSchemaVersion) return absl::OkStatus();
    TUNED_RETURN_IF_ERROR(Begin(false));
    absl::Status s = [&]() -> absl::Status {
      version = UserVersion();  // another process may have created it meanwhile
      if (!version.ok()) return version.status();
      if (*version > Store::kSchemaVersion) return too_new(*version);
      if (*version > 0) {
        // migrations[v] alters v's tables towards v + 1 (migrations/<v + 1>.sql).
        static const std::map<int64_t, const char*> migrations = {
            {1, embedded::kSqliteMigration2Sql}, {2, embedded::kSqliteMigration3Sql},
            {3, embedded::kSqliteMigration4Sql}, {4, embedded::kSqliteMigration5Sql},
            {5, embedded::kSqliteMigration6Sql}, {6, embedded::kSqliteMigration7Sql},
            {7, embedded::kSqliteMigration8Sql}, {8, embedded::kSqliteMigration9Sql},
            {9, embedded::kSqliteMigration10Sql}, {10, embedded::kSqliteMigration11Sql}};
        for (int64_t v = *version; v < Store::kSchemaVersion; ++v) {
          auto it = migrations.find(v);
          if (it == migrations.end()) {
            return absl::FailedPreconditionError(
                absl::StrCat("no migration from database schema version ", v));
          }
          TUNED_RETURN_IF_ERROR(Exec(db_, it->second));
          if (v == 10) TUNED_RETURN_IF_ERROR(KeyMigratedProblems(*this));
        }
      }
      // Tables and indexes; the CREATEs leave existing ones as they are.
      TUNED_RETURN_IF_ERROR(Exec(db_, embedded::kSqliteSchemaSql));
      version = UserVersion();
      if (!version.ok()) return version.status();
      if (*version != Store::kSchemaVersion) {
        return absl::InternalError(absl::StrCat("schema.sql sets user_version ", *version,
                                                ", expected ", Store::kSchemaVersion));
      }
      return Commit();
    }();
    if (!s.ok()) Rollback();
    return s;
  }

 private:
  absl::StatusOr<int64_t> UserVersion() {
    auto rows = Query("PRAGMA user_version", {});
    if (!rows.ok()) return rows.status();
    return rows->empty() ? 0 : rows->Int(0, 0);
  }

  sqlite3* db_;
  std::string name_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> OpenSqlite(const std::string& path) {
  if (path != ":memory:" && !path.starts_with("file:")) {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create directory ", parent.string(), ": ", ec.message()));
    }
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                                 nullptr);
  auto database = std::make_unique<SqliteDatabase>(db, path);  // closes db on every return
  if (rc != SQLITE_OK) {
    return absl::UnavailableError(
        absl::StrCat("cannot open database ", path, ": ",
                     db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  }
  absl::Status s = Exec(db, "PRAGMA busy_timeout = 5000");
  if (s.ok()) s = database->Query("PRAGMA user_version", {}).status();  // a file that is no database
  if (s.ok()) s = Exec(db, "PRAGMA journal_mode = WAL");
  if (s.ok()) s = Exec(db, "PRAGMA foreign_keys = ON");
  if (s.ok()) s = database->ApplySchema();
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("database ", path, ": ", s.message()));
  return database;
}

}  // namespace tuned
