// The store's connection to its database: one interface, two backends
// (db/sqlite.cc: an embedded SQLite file, the default; db/postgres.cc: a
// PostgreSQL server through libpq, shared by a fleet of daemons). The store
// (db/store.cc) holds all the logic and writes its SQL once, in the subset
// both speak, with these conventions, which each backend rewrites:
//   ?1, ?2, ...        parameters, bound from Values in order
//   {now}              the database's clock: Unix seconds as a REAL/DOUBLE
//                      (the server's clock in PostgreSQL, so that leases
//                      mean the same on every host)
//   {skip_locked}      after a SELECT that claims rows: PostgreSQL's
//                      FOR UPDATE SKIP LOCKED; nothing in SQLite (a write
//                      transaction there holds the whole file)
//   {bump}             a whole statement: adds one to the database's change
//                      counter (a row in SQLite, a sequence in PostgreSQL,
//                      which never waits on another writer)
//   {generation}       a whole statement: reads that counter (one row, one
//                      integer column)
// Booleans are written as integers (CASE WHEN ... THEN 1 ELSE 0 END), new
// ids come from RETURNING id, conflicts are ON CONFLICT DO NOTHING.
// Not thread-safe: the store serializes calls.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tuned {

/// Bytes to bind as a BLOB (SQLite) or BYTEA (PostgreSQL) rather than text.
struct Blob {
  std::string_view bytes;
};

/// A statement parameter: NULL, an integer, a real, text or bytes.
using Value = std::variant<std::nullptr_t, int64_t, double, std::string_view, Blob>;

/// A query's result, read whole. Cells are kept as text (numbers in their
/// shortest exact decimal form, blobs as their raw bytes); NULL is nullopt.
class Rows {
 public:
  size_t size() const { return cells_.size(); }
  bool empty() const { return cells_.empty(); }
  /// Rows changed by an INSERT, UPDATE or DELETE.
  int64_t affected() const { return affected_; }

  bool IsNull(size_t row, int col) const { return !cells_[row][col].has_value(); }
  /// 0 for NULL or a cell that is no integer.
  int64_t Int(size_t row, int col) const;
  /// 0 for NULL or a cell that is no number.
  double Double(size_t row, int col) const;
  /// "" for NULL.
  const std::string& Text(size_t row, int col) const;

  // For the backends.
  std::vector<std::vector<std::optional<std::string>>>& cells() { return cells_; }
  void set_affected(int64_t n) { affected_ = n; }

 private:
  std::vector<std::vector<std::optional<std::string>>> cells_;
  int64_t affected_ = 0;
};

class Database {
 public:
  /// Opens the database named by `url` and brings its schema to this
  /// build's version (each backend has its own schema file and migrations):
  ///   "/path/file.db", "sqlite:///path/file.db", ":memory:"   SQLite
  ///   "postgresql://user:password@host:port/dbname?sslmode=..."  PostgreSQL
  ///   (also "postgres://"; any libpq connection URI)
  /// Errors: INVALID_ARGUMENT for an unknown scheme; UNAVAILABLE if the
  /// server cannot be reached; FAILED_PRECONDITION for a refused login,
  /// a missing database or a schema newer than this build's; each message
  /// says which (the password is never printed).
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& url);
  virtual ~Database() = default;

  /// Runs one statement (conventions above) and returns its rows. Errors:
  /// UNAVAILABLE when the database cannot be reached or is busy (retry;
  /// the next call reconnects), FAILED_PRECONDITION for a violated
  /// constraint, INTERNAL otherwise; messages start with the backend's name.
  virtual absl::StatusOr<Rows> Query(std::string_view sql, const std::vector<Value>& args) = 0;

  /// Transactions. `serialize`: also exclusive against every other
  /// serialized transaction of the database, on every host (SQLite's write
  /// transactions always are; PostgreSQL takes an advisory lock), for a
  /// check followed by a write (quotas, a job's next round).
  virtual absl::Status Begin(bool serialize = false) = 0;
  virtual absl::Status Commit() = 0;
  /// Never fails: a connection that is gone has rolled back already.
  virtual void Rollback() = 0;

  /// "sqlite" or "postgresql".
  virtual std::string_view backend() const = 0;
  /// The URL without its password, for logs and messages.
  virtual const std::string& name() const = 0;
};

/// `sql` with ?N placeholders as `$N` (when `dollar`) and each {token}
/// replaced by its text in `tokens` (pairs of name and text).
std::string RewriteSql(std::string_view sql, bool dollar,
                       const std::vector<std::pair<std::string_view, std::string_view>>& tokens);

}  // namespace tuned

namespace tuned {
/// The backends, for Database::Open: `path` as SQLite takes it, `url` as
/// libpq takes it.
absl::StatusOr<std::unique_ptr<Database>> OpenSqlite(const std::string& path);
absl::StatusOr<std::unique_ptr<Database>> OpenPostgres(const std::string& url);

/// The step of schema 10 -> 11 after migrations/11.sql, on both backends, in
/// its transaction: each `problems` key that the migration wrote as the old
/// columns joined by spaces ("FAMILY_SGEMM DTYPE_BF16_F32 MATH_TF32
/// LAYOUT_NT EPILOGUE_NONE": family as the old FamilyKey, then the proto
/// names of dtype, math, layout and epilogue) becomes the problem's key in
/// canonical form (core/problem_key.h), and crashes' family column takes the
/// key's family text ("FAMILY_SGEMM": "sgemm"; a kernel spec's
/// "name@hash" is that already). DATA_LOSS, naming the row, for a value
/// that this build does not know (the migration then changes nothing).
absl::Status KeyMigratedProblems(Database& db);
}  // namespace tuned
