// The PostgreSQL backend of Database (db/database.h): one libpq connection
// to a server that a fleet of daemons shares, the schema of
// db/postgres/schema.sql (versioned by its schema_version row). Parameters
// go as text (numbers) or binary (bytea), results come back as text. A
// connection found broken is reset once at the start of the next call
// outside a transaction; every libpq call is checked and its error carries
// libpq's message.
#include <libpq-fe.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "db/database.h"
#include "db/store.h"
#include "db/schema.h"
#include "core/status.h"

namespace tuned {
namespace {

/// Advisory lock keys of tuned ("tuned" in ASCII, then a number): the one of
/// serialized transactions, and the one held while a schema is applied.
constexpr int64_t kSerializeLock = 0x74756E6564000001;
constexpr int64_t kSchemaLock = 0x74756E6564000002;
/// Type OIDs (PostgreSQL's catalog/pg_type.h, stable across versions).
constexpr Oid kBoolOid = 16, kByteaOid = 17, kInt8Oid = 20, kFloat8Oid = 701;

const std::vector<std::pair<std::string_view, std::string_view>> kPostgresTokens = {
    {"now", "(EXTRACT(EPOCH FROM clock_timestamp())::double precision)"},
    {"skip_locked", "FOR UPDATE SKIP LOCKED"},
    {"bump", "SELECT nextval('generation')"},
    {"generation", "SELECT last_value FROM generation"},
};

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

/// libpq's message without its trailing newline.
std::string Message(const char* m) {
  std::string_view s = m != nullptr ? m : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  return std::string(s.empty() ? "unknown error" : s);
}

class PostgresDatabase final : public Database {
 public:
  /// Takes `conn` (PQfinish'ed in the destructor, also when it failed).
  PostgresDatabase(PGconn* conn, std::string name) : conn_(conn), name_(std::move(name)) {}
  ~PostgresDatabase() override { PQfinish(conn_); }

  absl::StatusOr<Rows> Query(std::string_view sql_in, const std::vector<Value>& args) override {
    TUNED_RETURN_IF_ERROR(Connected());
    const std::string sql = RewriteSql(sql_in, /*dollar=*/true, kPostgresTokens);
    const size_t n = args.size();
    std::vector<std::string> text(n);  // text params: NUL-terminated copies
    std::vector<const char*> values(n, nullptr);
    std::vector<Oid> types(n, 0);  // 0: the server infers it, as for a literal
    std::vector<int> lengths(n, 0), formats(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const Value& v = args[i];
      if (std::holds_alternative<std::nullptr_t>(v)) continue;
      if (const auto* x = std::get_if<int64_t>(&v)) {
        text[i] = std::to_string(*x);
        types[i] = kInt8Oid;
      } else if (const auto* d = std::get_if<double>(&v)) {
        char buf[32];
        if (std::isnan(*d)) {
          text[i] = "NaN";
        } else if (std::isinf(*d)) {
          text[i] = *d > 0 ? "Infinity" : "-Infinity";
        } else {
          std::snprintf(buf, sizeof buf, "%.17g", *d);
          text[i] = buf;
        }
        types[i] = kFloat8Oid;
      } else if (const auto* s = std::get_if<std::string_view>(&v)) {
        if (s->find('\0') != std::string_view::npos) {
          return absl::InternalError(absl::StrCat("postgresql: ", Short(sql), ": parameter ?",
                                                  i + 1,
                                                  " is text with a NUL byte, which PostgreSQL's "
                                                  "text cannot hold (bind bytes as a Blob)"));
        }
        text[i] = std::string(*s);
      } else {
        const Blob& b = std::get<Blob>(v);
        values[i] = b.bytes.data() != nullptr ? b.bytes.data() : "";  // nullptr would be NULL
        lengths[i] = static_cast<int>(b.bytes.size());
        formats[i] = 1;
        types[i] = kByteaOid;
        continue;
      }
      values[i] = text[i].c_str();
    }
    Result res(PQexecParams(conn_, sql.c_str(), static_cast<int>(n), types.data(), values.data(),
                            lengths.data(), formats.data(), /*resultFormat=*/0),
               PQclear);
    TUNED_RETURN_IF_ERROR(Check(res.get(), sql));
    Rows rows;
    const int nrows = PQntuples(res.get()), ncols = PQnfields(res.get());
    for (int r = 0; r < nrows; ++r) {
      auto& row = rows.cells().emplace_back(ncols);
      for (int c = 0; c < ncols; ++c) {
        if (PQgetisnull(res.get(), r, c)) continue;
        const char* cell = PQgetvalue(res.get(), r, c);
        const Oid type = PQftype(res.get(), c);
        if (type == kByteaOid) {  // "\x..." text form -> the raw bytes
          size_t len = 0;
          unsigned char* bytes =
              PQunescapeBytea(reinterpret_cast<const unsigned char*>(cell), &len);
          if (bytes == nullptr) {
            return absl::ResourceExhaustedError("postgresql: out of memory reading a bytea");
          }
          row[c] = std::string(reinterpret_cast<const char*>(bytes), len);
          PQfreemem(bytes);
        } else if (type == kBoolOid) {  // 't'/'f' -> 1/0, as SQLite's booleans
          row[c] = cell[0] == 't' ? "1" : "0";
        } else {
          row[c] = std::string(cell, PQgetlength(res.get(), r, c));
        }
      }
    }
    int64_t affected = 0;
    if (!absl::SimpleAtoi(PQcmdTuples(res.get()), &affected)) affected = 0;  // "": not a write
    rows.set_affected(affected);
    return rows;
  }

  absl::Status Begin(bool serialize) override {
    TUNED_RETURN_IF_ERROR(Connected());
    TUNED_RETURN_IF_ERROR(Command("BEGIN"));
    in_transaction_ = true;
    if (serialize) {
      absl::Status s = Command(absl::StrCat("SELECT pg_advisory_xact_lock(", kSerializeLock, ")"));
      if (!s.ok()) {
        Rollback();
        return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Commit() override {
    if (broken_) {
      in_transaction_ = false;
      return Unavailable("the connection was lost in the transaction, which is rolled back");
    }
    in_transaction_ = false;  // ended either way
    Result res(PQexec(conn_, "COMMIT"), PQclear);
    TUNED_RETURN_IF_ERROR(Check(res.get(), "COMMIT"));
    // COMMIT of a transaction in which a statement failed rolls back, with no error.
    if (std::string_view(PQcmdStatus(res.get())) == "ROLLBACK") {
      return absl::InternalError(
          "postgresql: COMMIT: the transaction was rolled back (a statement in it had failed)");
    }
    return absl::OkStatus();
  }

  void Rollback() override {
    in_transaction_ = false;
    // Unchecked on purpose: a broken connection has rolled back already (the
    // next call resets it), and a failed ROLLBACK leaves nothing to undo.
    if (!broken_ && PQstatus(conn_) == CONNECTION_OK &&
        PQtransactionStatus(conn_) != PQTRANS_IDLE) {
      PQclear(PQexec(conn_, "ROLLBACK"));
    }
  }

  std::string_view backend() const override { return "postgresql"; }
  const std::string& name() const override { return name_; }

  /// Open()'s failure to connect: FAILED_PRECONDITION for a refused login
  /// or a missing database, UNAVAILABLE otherwise (server unreachable,
  /// starting, full). libpq's connection errors carry no SQLSTATE: its
  /// message is matched.
  absl::Status ConnectError() const {
    const std::string msg = Message(PQerrorMessage(conn_));
    // "password authentication failed", "role \"x\" does not exist", ...
    for (const char* refused :
         {"authentication failed", "no pg_hba.conf entry", "no password supplied", "role \""}) {
      if (absl::StrContains(msg, refused)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "postgresql: login refused for user ", Or(PQuser(conn_)), " at ", name_, ": ", msg));
      }
    }
    if (absl::StrContains(msg, "database \"") && absl::StrContains(msg, "does not exist")) {
      return absl::FailedPreconditionError(absl::StrCat("postgresql: database \"", Or(PQdb(conn_)),
                                                        "\" does not exist at ", name_, ": ", msg));
    }
    return Unavailable(msg);
  }

  /// Brings the database to this build's schema: schema.sql on a fresh
  /// one, migrations/N.sql on an older one (3 -> 4 -> ... -> 11, 11 then
  /// KeyMigratedProblems), each in one transaction, under a session
  /// advisory lock (daemons that start together apply it once). FAILED_PRECONDITION for a schema that is
  /// newer than this build's, or older than 3.
  absl::Status ApplySchema() {
    TUNED_RETURN_IF_ERROR(Command(absl::StrCat("SELECT pg_advisory_lock(", kSchemaLock, ")")));
    absl::Status s = [&]() -> absl::Status {
      auto exists =
          Query("SELECT CASE WHEN to_regclass('schema_version') IS NULL THEN 0 ELSE 1 END", {});
      if (!exists.ok()) return exists.status();
      if (exists->Int(0, 0) == 0) {
        TUNED_RETURN_IF_ERROR(Begin(false));
        absl::Status applied = Command(embedded::kPostgresSchemaSql, "db/postgres/schema.sql");
        if (!applied.ok()) {
          Rollback();
          return applied;
        }
        TUNED_RETURN_IF_ERROR(Commit());
      }
      auto version = Query("SELECT max(version) FROM schema_version", {});
      if (!version.ok()) return version.status();
      int64_t v = version->empty() ? 0 : version->Int(0, 0);
      // db/postgres/migrations/<v + 1>.sql, one step at a time.
      static const std::map<int64_t, std::pair<const char*, const char*>> migrations = {
          {3, {embedded::kPostgresMigration4Sql, "db/postgres/migrations/4.sql"}},
          {4, {embedded::kPostgresMigration5Sql, "db/postgres/migrations/5.sql"}},
          {5, {embedded::kPostgresMigration6Sql, "db/postgres/migrations/6.sql"}},
          {6, {embedded::kPostgresMigration7Sql, "db/postgres/migrations/7.sql"}},
          {7, {embedded::kPostgresMigration8Sql, "db/postgres/migrations/8.sql"}},
          {8, {embedded::kPostgresMigration9Sql, "db/postgres/migrations/9.sql"}},
          {9, {embedded::kPostgresMigration10Sql, "db/postgres/migrations/10.sql"}},
          {10, {embedded::kPostgresMigration11Sql, "db/postgres/migrations/11.sql"}}};
      for (auto it = migrations.find(v); it != migrations.end() && v < Store::kSchemaVersion;
           it = migrations.find(v)) {
        TUNED_RETURN_IF_ERROR(Begin(false));
        absl::Status migrated = Command(it->second.first, it->second.second);
        if (migrated.ok() && v == 10) migrated = KeyMigratedProblems(*this);
        if (!migrated.ok()) {
          Rollback();
          return migrated;
        }
        TUNED_RETURN_IF_ERROR(Commit());
        ++v;
      }
      if (v > Store::kSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("postgresql: ", name_, ": database schema version ", v,
                         " is newer than this build's ", Store::kSchemaVersion, "; upgrade tuned"));
      }
      if (v < Store::kSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("postgresql: ", name_, ": no migration from database schema version ", v));
      }
      return absl::OkStatus();
    }();
    // Also released when the connection closes (a failed Open).
    absl::Status unlocked = Command(absl::StrCat("SELECT pg_advisory_unlock(", kSchemaLock, ")"));
    return s.ok() ? unlocked : s;
  }

 private:
  static const char* Or(const char* s) { return s != nullptr ? s : ""; }
  static std::string Short(std::string_view sql) { return std::string(sql.substr(0, 60)); }

  absl::Status Unavailable(const std::string& msg) const {
    return absl::UnavailableError(
        absl::StrCat("postgresql: database unavailable (", name_, "): ", msg));
  }

  /// OK when the connection is up; outside a transaction a broken one is
  /// reset (once). UNAVAILABLE if it stays down, or broke in a transaction
  /// (which is gone: the caller rolls back, and the next call resets it).
  absl::Status Connected() {
    if (!broken_ && PQstatus(conn_) == CONNECTION_OK) return absl::OkStatus();
    if (in_transaction_) return Unavailable("the connection was lost in a transaction");
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) return Unavailable(Message(PQerrorMessage(conn_)));
    broken_ = false;
    return absl::OkStatus();
  }

  /// A statement's result as a status: connection trouble (libpq's own
  /// errors, which have no SQLSTATE, class 08, shutdowns: the connection is
  /// then marked broken), serialization failures and deadlocks are
  /// UNAVAILABLE (retry), class 23 (constraints) FAILED_PRECONDITION, the
  /// rest INTERNAL.
  absl::Status Check(const PGresult* res, std::string_view what) {
    const ExecStatusType st = PQresultStatus(res);  // PGRES_FATAL_ERROR for nullptr
    if (res != nullptr &&
        (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY)) {
      return absl::OkStatus();
    }
    // The server's message (and its detail: which key), else libpq's.
    const char* primary =
        res != nullptr ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    const char* detail = res != nullptr ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : nullptr;
    const std::string msg =
        primary != nullptr
            ? absl::StrCat(primary, detail != nullptr ? absl::StrCat(" (", detail, ")") : "")
            : Message(res != nullptr ? PQresultErrorMessage(res) : PQerrorMessage(conn_));
    const std::string_view state =
        res != nullptr ? Or(PQresultErrorField(res, PG_DIAG_SQLSTATE)) : "";
    // A dead socket can fail a statement while PQstatus still says OK.
    if (PQstatus(conn_) == CONNECTION_BAD || state.empty() || state.starts_with("08") ||
        state == "57P01" || state == "57P02" || state == "57P03") {
      broken_ = true;
      return Unavailable(msg);
    }
    if (state == "40001" || state == "40P01") return Unavailable(msg);
    std::string text = absl::StrCat("postgresql: ", Short(what), ": ", msg);
    if (state.starts_with("23")) return absl::FailedPreconditionError(text);
    return absl::InternalError(text);
  }

  /// Runs `sql` (one or more statements, no parameters), checked.
  absl::Status Command(const std::string& sql, std::string_view what = "") {
    Result res(PQexec(conn_, sql.c_str()), PQclear);
    return Check(res.get(), what.empty() ? std::string_view(sql) : what);
  }

  PGconn* conn_;
  std::string name_;
  bool in_transaction_ = false;
  bool broken_ = false;  // a statement lost the connection: the next call resets it
};

/// "postgresql://user[:***]@host:port/dbname" from libpq's parse of `url`;
/// an empty part is libpq's default (the connection's, once there is one).
std::string Name(const PQconninfoOption* opts, const PGconn* conn) {
  std::string user, host, port, dbname;
  bool password = false;
  for (const PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    const std::string_view key = o->keyword, val = o->val != nullptr ? o->val : "";
    if (key == "user") user = val;
    if (key == "host") host = val;
    if (key == "port") port = val;
    if (key == "dbname") dbname = val;
    if (key == "password") password = !val.empty();
  }
  auto fill = [](std::string& s, const char* v) {
    if (s.empty() && v != nullptr) s = v;
  };
  fill(user, PQuser(conn));
  fill(host, PQhost(conn));
  fill(port, PQport(conn));
  fill(dbname, PQdb(conn));
  return absl::StrCat("postgresql://", user, password ? ":***" : "", "@", host,
                      port.empty() ? "" : ":", port, "/", dbname);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Database>> OpenPostgres(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (opts == nullptr) {
    // libpq's message may quote the URL, password and all: up to the quote.
    std::string msg = err != nullptr ? Message(err) : "out of memory";
    PQfreemem(err);
    msg = msg.substr(0, msg.find('"'));
    return absl::InvalidArgumentError(absl::StrCat("postgresql: invalid connection URL: ", msg));
  }
  // Defaults that the URL may override (it comes after them): a connect
  // timeout (seconds); TCP keepalives (s) and a send timeout (ms), so that a
  // server host that vanishes fails a call in about 30 s rather than after
  // the kernel's 15 minutes of retries; no NOTICEs (CREATE ... IF NOT
  // EXISTS); our name.
  const char* const keys[] = {
      "connect_timeout",           "keepalives_idle",  "keepalives_interval",
      "keepalives_count",          "tcp_user_timeout", "options",
      "fallback_application_name", "dbname",           nullptr};
  const char* const vals[] = {"10",    "10",        "5",
                              "3",     "30000",     "-c client_min_messages=warning",
                              "tuned", url.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, vals, /*expand_dbname=*/1);
  if (conn == nullptr) {
    PQconninfoFree(opts);
    return absl::ResourceExhaustedError("postgresql: out of memory opening a connection");
  }
  auto db = std::make_unique<PostgresDatabase>(conn, Name(opts, conn));
  PQconninfoFree(opts);
  if (PQstatus(conn) != CONNECTION_OK) return db->ConnectError();
  TUNED_RETURN_IF_ERROR(db->ApplySchema());
  return db;
}

}  // namespace tuned
