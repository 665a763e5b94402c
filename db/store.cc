// SQLite store: see store.h and schema.sql. Every sqlite call is checked and
// its error carries sqlite3_errmsg; values are always bound, never formatted
// into SQL. All methods hold mu_ for their whole duration.
#include "db/store.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <system_error>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/embedded.h"
#include "server/status.h"

namespace tuned {
namespace {

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The connection's last error as a status: busy/locked are UNAVAILABLE
/// (retryable), constraint violations FAILED_PRECONDITION, the rest INTERNAL.
absl::Status SqlError(sqlite3* db, absl::string_view what) {
  std::string msg = absl::StrCat("sqlite: ", what, ": ", sqlite3_errmsg(db));
  switch (sqlite3_errcode(db)) {
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
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return SqlError(db, absl::string_view(sql).substr(0, 60));
  }
  return absl::OkStatus();
}

/// Bytes to bind as a BLOB rather than TEXT.
struct Blob {
  std::string_view bytes;
};

/// A prepared statement. Errors from prepare and bind are kept and returned
/// by the next Step().
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db), sql_(sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) status_ = Error();
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  /// Binds the arguments to ?1, ?2, ... in order.
  template <typename... Args>
  Stmt& Bind(const Args&... args) {
    int i = 0;
    (BindOne(++i, args), ...);
    return *this;
  }

  /// True if a row is available, false when done.
  absl::StatusOr<bool> Step() {
    if (!status_.ok()) return status_;
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return status_ = Error();
  }
  /// Runs a statement that returns no rows.
  absl::Status Run() { return Step().status(); }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);  // also right for TEXT, NULs kept
    int n = sqlite3_column_bytes(stmt_, col);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
  }

 private:
  absl::Status Error() const { return SqlError(db_, absl::string_view(sql_).substr(0, 60)); }
  template <typename T>
  void BindOne(int i, const T& v) {
    if (!status_.ok()) return;
    int rc;
    if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
      rc = v.has_value() ? sqlite3_bind_int64(stmt_, i, *v) : sqlite3_bind_null(stmt_, i);
    } else if constexpr (std::is_integral_v<T>) {
      rc = sqlite3_bind_int64(stmt_, i, static_cast<sqlite3_int64>(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      rc = sqlite3_bind_double(stmt_, i, v);
    } else if constexpr (std::is_same_v<T, Blob>) {
      rc = sqlite3_bind_blob64(stmt_, i, v.bytes.data(), v.bytes.size(), SQLITE_TRANSIENT);
    } else {
      // std::string, std::string_view, absl::string_view (distinct where absl
      // is built without std::string_view) or a C string.
      std::string_view s;
      if constexpr (std::is_array_v<T> || std::is_pointer_v<T>) {
        s = v;
      } else {
        s = std::string_view(v.data(), v.size());
      }
      rc = sqlite3_bind_text64(stmt_, i, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    }
    if (rc != SQLITE_OK) status_ = Error();
  }

  sqlite3* db_;
  const char* sql_;
  sqlite3_stmt* stmt_ = nullptr;
  absl::Status status_;
};

/// BEGIN IMMEDIATE ... COMMIT; rolls back if destroyed before Commit().
class Txn {
 public:
  explicit Txn(sqlite3* db) : db_(db) {}
  ~Txn() {
    // Unchecked on purpose: nothing to report it to, and sqlite may already
    // have rolled back on its own after the error that got us here.
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  absl::Status Begin() {
    TUNED_RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE"));
    open_ = true;
    return absl::OkStatus();
  }
  absl::Status Commit() {
    TUNED_RETURN_IF_ERROR(Exec(db_, "COMMIT"));
    open_ = false;
    return absl::OkStatus();
  }

 private:
  sqlite3* db_;
  bool open_ = false;
};

absl::StatusOr<int> UserVersion(sqlite3* db) {
  Stmt q(db, "PRAGMA user_version");
  absl::StatusOr<bool> row = q.Step();
  if (!row.ok()) return row.status();
  return *row ? static_cast<int>(q.Int(0)) : 0;
}

/// Checks the schema version and applies schema.sql to a fresh database.
absl::Status ApplySchema(sqlite3* db) {
  absl::StatusOr<int> version = UserVersion(db);
  if (!version.ok()) return version.status();
  auto too_new = [](int v) {
    return absl::FailedPreconditionError(absl::StrCat("database schema version ", v,
                                                      " is newer than this build's ",
                                                      Store::kSchemaVersion, "; upgrade tuned"));
  };
  if (*version > Store::kSchemaVersion) return too_new(*version);
  if (*version == Store::kSchemaVersion) return absl::OkStatus();

  Txn txn(db);
  TUNED_RETURN_IF_ERROR(txn.Begin());
  version = UserVersion(db);  // another process may have created it meanwhile
  if (!version.ok()) return version.status();
  if (*version > Store::kSchemaVersion) return too_new(*version);
  if (*version == 0) {
    TUNED_RETURN_IF_ERROR(Exec(db, embedded::kSchemaSql));
  } else {
    // Migrations, one version at a time: migrations[v] alters v's tables
    // towards v + 1 (db/migrations/<v + 1>.sql).
    static const std::map<int, const char*> migrations = {{1, embedded::kMigration2Sql}};
    for (int v = *version; v < Store::kSchemaVersion; ++v) {
      auto it = migrations.find(v);
      if (it == migrations.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("no migration from database schema version ", v));
      }
      TUNED_RETURN_IF_ERROR(Exec(db, it->second));
    }
    // New tables and indexes; the CREATEs leave existing ones as they are.
    TUNED_RETURN_IF_ERROR(Exec(db, embedded::kSchemaSql));
  }
  version = UserVersion(db);
  if (!version.ok()) return version.status();
  if (*version != Store::kSchemaVersion) {
    return absl::InternalError(absl::StrCat("schema.sql sets user_version ", *version,
                                            ", expected ", Store::kSchemaVersion));
  }
  return txn.Commit();
}

std::string ShapeText(const v1::Problem& p) { return absl::StrJoin(p.shape(), "x"); }

/// "sgemm f32 1024x1024x1024", for messages.
std::string ProblemLabel(const v1::Problem& p) {
  return absl::StrCat(
      absl::AsciiStrToLower(absl::StripPrefix(v1::Family_Name(p.family()), "FAMILY_")), " ",
      absl::AsciiStrToLower(absl::StripPrefix(v1::DType_Name(p.dtype()), "DTYPE_")), " ",
      ShapeText(p));
}

absl::Status ParseProblem(const std::string& family, const std::string& dtype,
                          const std::string& shape, v1::Problem* p) {
  v1::Family f;
  v1::DType d;
  if (!v1::Family_Parse(family, &f) || !v1::DType_Parse(dtype, &d)) {
    return absl::DataLossError(
        absl::StrCat("stored problem has unknown family '", family, "' or dtype '", dtype, "'"));
  }
  p->set_family(f);
  p->set_dtype(d);
  for (absl::string_view dim : absl::StrSplit(shape, 'x', absl::SkipEmpty())) {
    int64_t n;
    if (!absl::SimpleAtoi(dim, &n)) return absl::DataLossError(absl::StrCat("bad shape ", shape));
    p->add_shape(n);
  }
  return absl::OkStatus();
}

/// "BK=8,BM=128,BN=64": params in key order.
std::string ParamsText(const v1::KernelConfig& c) {
  std::map<std::string, int64_t> sorted(c.params().begin(), c.params().end());
  return absl::StrJoin(sorted, ",", absl::PairFormatter("="));
}

absl::Status ParseParams(absl::string_view text, v1::KernelConfig* c) {
  for (absl::string_view kv : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    int64_t v;
    if (p.first.empty() || !absl::SimpleAtoi(p.second, &v)) {
      return absl::DataLossError(absl::StrCat("bad params '", text, "'"));
    }
    (*c->mutable_params())[std::string(p.first)] = v;
  }
  return absl::OkStatus();
}

constexpr char kOk[] = "MEASUREMENT_OK";

// Columns of a measurement, read by ReadMeasurement in this order.
#define TUNED_MEASUREMENT_COLS                                                               \
  "m.config, m.params, m.status, m.median_ms, m.metric, m.metric_unit, m.error, m.message, " \
  "m.job_id, m.repetitions, m.registers, m.created_unix"
constexpr int kMeasurementCols = 12;

absl::Status ReadMeasurement(const Stmt& q, v1::Measurement* m) {
  m->mutable_config()->set_name(q.Text(0));
  TUNED_RETURN_IF_ERROR(ParseParams(q.Text(1), m->mutable_config()));
  v1::MeasurementStatus status;
  if (!v1::MeasurementStatus_Parse(q.Text(2), &status)) {
    return absl::DataLossError(absl::StrCat("unknown measurement status '", q.Text(2), "'"));
  }
  m->set_status(status);
  m->set_median_ms(q.Double(3));
  m->set_metric(q.Double(4));
  m->set_metric_unit(q.Text(5));
  m->set_error(q.Double(6));
  m->set_message(q.Text(7));
  m->set_job_id(q.Int(8));
  m->set_repetitions(static_cast<int32_t>(q.Int(9)));
  m->set_registers(static_cast<int32_t>(q.Int(10)));
  m->set_created_unix(q.Int(11));
  return absl::OkStatus();
}

/// The job row with its counts and best measurement; caller holds the lock.
absl::StatusOr<v1::Job> LoadJob(sqlite3* db, int64_t id) {
  Stmt q(db,
         "SELECT family, dtype, shape, state, total, pruned, error, baseline_ms, "
         "baseline_metric, baseline_name, created_unix, started_unix, finished_unix, "
         "compile_seconds, measure_seconds, wait_seconds, worker_restarts, cached, client "
         "FROM jobs WHERE id = ?1");
  q.Bind(id);
  absl::StatusOr<bool> row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  v1::Job job;
  job.set_id(id);
  TUNED_RETURN_IF_ERROR(ParseProblem(q.Text(0), q.Text(1), q.Text(2), job.mutable_problem()));
  v1::JobState state;
  if (!v1::JobState_Parse(q.Text(3), &state)) {
    return absl::DataLossError(absl::StrCat("job ", id, " has unknown state '", q.Text(3), "'"));
  }
  job.set_state(state);
  job.set_total(static_cast<int32_t>(q.Int(4)));
  job.set_pruned(static_cast<int32_t>(q.Int(5)));
  job.set_error(q.Text(6));
  job.set_baseline_ms(q.Double(7));
  job.set_baseline_metric(q.Double(8));
  job.set_baseline_name(q.Text(9));
  job.set_created_unix(q.Int(10));
  job.set_started_unix(q.Int(11));
  job.set_finished_unix(q.Int(12));
  job.set_compile_seconds(q.Double(13));
  job.set_measure_seconds(q.Double(14));
  job.set_wait_seconds(q.Double(15));
  job.set_worker_restarts(static_cast<int32_t>(q.Int(16)));
  job.set_cached(static_cast<int32_t>(q.Int(17)));
  job.set_client(q.Text(18));

  Stmt counts(db,
              "SELECT COALESCE(SUM(status IN ('MEASUREMENT_OK', 'MEASUREMENT_COMPILED')), 0), "
              "COUNT(*) FROM measurements WHERE job_id = ?1");
  counts.Bind(id);
  row = counts.Step();
  if (!row.ok()) return row.status();
  job.set_done(static_cast<int32_t>(counts.Int(0)));
  job.set_failed(static_cast<int32_t>(counts.Int(1) - counts.Int(0)));

  Stmt best(db, "SELECT " TUNED_MEASUREMENT_COLS
                " FROM measurements m "
                "WHERE m.job_id = ?1 AND m.status = ?2 ORDER BY m.median_ms, m.id LIMIT 1");
  best.Bind(id, kOk);
  row = best.Step();
  if (!row.ok()) return row.status();
  if (*row) TUNED_RETURN_IF_ERROR(ReadMeasurement(best, job.mutable_best()));
  return job;
}

/// FNV-1a over each field and its length, to find identical stored rows;
/// stable across builds, unlike std::hash.
int64_t Digest(std::initializer_list<std::string_view> fields) {
  uint64_t h = 1469598103934665603ull;
  for (std::string_view s : fields) {
    uint64_t n = s.size();
    for (int i = 0; i < 8; ++i) h = (h ^ ((n >> (8 * i)) & 0xff)) * 1099511628211ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

int64_t Digest(const KernelBinary& b) { return Digest({b.source, b.entry, b.cubin, b.ptx, b.log}); }

int64_t Digest(const CompileKey& k) {
  return Digest({k.source, k.name_expression, k.options, k.arch, k.nvrtc_version});
}

/// Id of an identical stored binary, or of a new row; caller holds a transaction.
absl::StatusOr<int64_t> InsertBinary(sqlite3* db, const KernelBinary& b) {
  const int64_t digest = Digest(b);
  Stmt find(db,
            "SELECT id FROM binaries WHERE digest = ?1 AND source = ?2 AND entry = ?3 "
            "AND cubin = ?4 AND ptx = ?5 AND log = ?6 LIMIT 1");
  find.Bind(digest, b.source, b.entry, Blob{b.cubin}, b.ptx, b.log);
  absl::StatusOr<bool> row = find.Step();
  if (!row.ok()) return row.status();
  if (*row) return find.Int(0);
  Stmt insert(db,
              "INSERT INTO binaries (digest, source, entry, cubin, ptx, log) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  insert.Bind(digest, b.source, b.entry, Blob{b.cubin}, b.ptx, b.log);
  TUNED_RETURN_IF_ERROR(insert.Run());
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db));
}

}  // namespace

Store::Store(sqlite3* db) : db_(db) {}

Store::~Store() { sqlite3_close_v2(db_); }

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
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
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  std::unique_ptr<Store> store(new Store(db));  // closes db on every return below
  if (rc != SQLITE_OK) {
    return absl::UnavailableError(
        absl::StrCat("cannot open database ", path, ": ",
                     db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  }
  absl::Status s = Exec(db, "PRAGMA busy_timeout = 5000");
  if (s.ok()) s = UserVersion(db).status();  // fails early on a file that is no database
  if (s.ok()) s = Exec(db, "PRAGMA journal_mode = WAL");
  if (s.ok()) s = Exec(db, "PRAGMA foreign_keys = ON");
  if (s.ok()) s = ApplySchema(db);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("database ", path, ": ", s.message()));
  }
  return store;
}

absl::StatusOr<int64_t> Store::UpsertDevice(const v1::Device& d) {
  absl::MutexLock lock(&mu_);
  Stmt insert(db_,
              "INSERT OR IGNORE INTO devices (name, cc_major, cc_minor, driver_version, "
              "nvrtc_version) VALUES (?1, ?2, ?3, ?4, ?5)");
  insert.Bind(d.name(), d.cc_major(), d.cc_minor(), d.driver_version(), d.nvrtc_version());
  TUNED_RETURN_IF_ERROR(insert.Run());
  Stmt find(db_,
            "SELECT id FROM devices WHERE name = ?1 AND cc_major = ?2 AND cc_minor = ?3 "
            "AND driver_version = ?4 AND nvrtc_version = ?5");
  find.Bind(d.name(), d.cc_major(), d.cc_minor(), d.driver_version(), d.nvrtc_version());
  absl::StatusOr<bool> row = find.Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::InternalError("device row vanished after insert");
  return find.Int(0);
}

absl::StatusOr<int64_t> Store::CreateJob(int64_t device_id, const v1::Problem& problem,
                                         int32_t total, int32_t pruned, const ClientQuota& quota) {
  absl::MutexLock lock(&mu_);  // the check and the insert see no other writer of this store
  if (quota.max_jobs > 0 || quota.max_configs > 0) {
    Stmt load(db_,
              "SELECT COUNT(*), COALESCE(SUM(total - (SELECT COUNT(*) FROM measurements m "
              "WHERE m.job_id = jobs.id)), 0) FROM jobs "
              "WHERE client = ?1 AND state IN ('JOB_QUEUED', 'JOB_RUNNING')");
    load.Bind(quota.client);
    absl::StatusOr<bool> row = load.Step();
    if (!row.ok()) return row.status();
    const int64_t jobs = load.Int(0), configs = load.Int(1);
    if (quota.max_jobs > 0 && jobs + 1 > quota.max_jobs) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "client '", quota.client, "' has ", jobs, " queued or running jobs; the limit is ",
          quota.max_jobs, " (wait for one to finish, or cancel one)"));
    }
    if (quota.max_configs > 0 && configs + total > quota.max_configs) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "client '", quota.client, "' has ", configs, " configs queued; this job adds ", total,
          " and the limit is ", quota.max_configs));
    }
  }
  Stmt insert(db_,
              "INSERT INTO jobs (device_id, family, dtype, shape, state, total, pruned, "
              "created_unix, client) VALUES (?1, ?2, ?3, ?4, 'JOB_QUEUED', ?5, ?6, ?7, ?8)");
  insert.Bind(device_id, v1::Family_Name(problem.family()), v1::DType_Name(problem.dtype()),
              ShapeText(problem), total, pruned, NowUnix(), quota.client);
  TUNED_RETURN_IF_ERROR(insert.Run());
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

absl::StatusOr<int64_t> Store::CountJobs(int64_t device_id, v1::JobState state) {
  absl::MutexLock lock(&mu_);
  Stmt q(db_, "SELECT COUNT(*) FROM jobs WHERE device_id = ?1 AND state = ?2");
  q.Bind(device_id, v1::JobState_Name(state));
  absl::StatusOr<bool> row = q.Step();
  if (!row.ok()) return row.status();
  return q.Int(0);
}

absl::StatusOr<v1::Job> Store::GetJob(int64_t id) {
  absl::MutexLock lock(&mu_);
  return LoadJob(db_, id);
}

absl::StatusOr<std::vector<v1::Job>> Store::ListJobs(int limit) {
  absl::MutexLock lock(&mu_);
  Stmt q(db_, "SELECT id FROM jobs ORDER BY id DESC LIMIT ?1");
  q.Bind(limit <= 0 ? 50 : limit);
  std::vector<int64_t> ids;
  for (;;) {
    absl::StatusOr<bool> row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    ids.push_back(q.Int(0));
  }
  std::vector<v1::Job> jobs;
  for (int64_t id : ids) {
    absl::StatusOr<v1::Job> job = LoadJob(db_, id);
    if (!job.ok()) return job.status();
    jobs.push_back(*std::move(job));
  }
  return jobs;
}

absl::Status Store::SetJobState(int64_t id, v1::JobState state, std::string_view error) {
  if (state == v1::JOB_STATE_UNSPECIFIED || !v1::JobState_IsValid(state)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid job state ", state));
  }
  absl::MutexLock lock(&mu_);
  // started_unix: set on entering RUNNING, cleared on going back to QUEUED.
  // finished_unix: set on entering an end state, cleared on leaving one.
  Stmt update(db_,
              "UPDATE jobs SET state = ?1, error = ?2, "
              "started_unix = CASE WHEN ?1 = 'JOB_RUNNING' AND state <> 'JOB_RUNNING' THEN ?3 "
              "  WHEN ?1 = 'JOB_QUEUED' THEN NULL ELSE started_unix END, "
              "finished_unix = CASE WHEN ?1 IN ('JOB_QUEUED', 'JOB_RUNNING') THEN NULL "
              "  WHEN state IN ('JOB_QUEUED', 'JOB_RUNNING') THEN ?3 ELSE finished_unix END "
              "WHERE id = ?4");
  update.Bind(v1::JobState_Name(state), error, NowUnix(), id);
  TUNED_RETURN_IF_ERROR(update.Run());
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  return absl::OkStatus();
}

absl::Status Store::SetJobBaseline(int64_t id, double ms, double metric, std::string_view name) {
  InvalidateBest();  // a best carries its job's baseline
  absl::MutexLock lock(&mu_);
  Stmt update(db_,
              "UPDATE jobs SET baseline_ms = ?1, baseline_metric = ?2, baseline_name = ?3 "
              "WHERE id = ?4");
  update.Bind(ms, metric, name, id);
  TUNED_RETURN_IF_ERROR(update.Run());
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<int64_t>> Store::NextQueuedJob(int64_t device_id) {
  absl::MutexLock lock(&mu_);
  Stmt q(db_,
         "SELECT id FROM jobs WHERE device_id = ?1 AND state = 'JOB_QUEUED' ORDER BY id LIMIT 1");
  q.Bind(device_id);
  absl::StatusOr<bool> row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<int64_t>();
  return std::optional<int64_t>(q.Int(0));
}

absl::StatusOr<std::vector<int64_t>> Store::RequeueRunningJobs() {
  absl::MutexLock lock(&mu_);
  Txn txn(db_);
  TUNED_RETURN_IF_ERROR(txn.Begin());
  Stmt q(db_, "SELECT id FROM jobs WHERE state = 'JOB_RUNNING' ORDER BY id");
  std::vector<int64_t> ids;
  for (;;) {
    absl::StatusOr<bool> row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    ids.push_back(q.Int(0));
  }
  Stmt update(db_,
              "UPDATE jobs SET state = 'JOB_QUEUED', started_unix = NULL "
              "WHERE state = 'JOB_RUNNING'");
  TUNED_RETURN_IF_ERROR(update.Run());
  TUNED_RETURN_IF_ERROR(txn.Commit());
  return ids;
}

absl::Status Store::AddMeasurement(int64_t job_id, const v1::Measurement& m,
                                   const KernelBinary* binary) {
  // Only an OK measurement can change a best; invalidate after it is stored.
  absl::Status s = InsertMeasurement(job_id, m, binary);
  if (m.status() == v1::MEASUREMENT_OK) InvalidateBest();
  return s;
}

absl::Status Store::InsertMeasurement(int64_t job_id, const v1::Measurement& m,
                                      const KernelBinary* binary) {
  if (m.config().name().empty()) {
    return absl::InvalidArgumentError("measurement has no config name");
  }
  absl::MutexLock lock(&mu_);
  Txn txn(db_);
  TUNED_RETURN_IF_ERROR(txn.Begin());
  Stmt exists(db_,
              "SELECT (SELECT COUNT(*) FROM jobs WHERE id = ?1), "
              "(SELECT COUNT(*) FROM measurements WHERE job_id = ?1 AND config = ?2)");
  exists.Bind(job_id, m.config().name());
  absl::StatusOr<bool> row = exists.Step();
  if (!row.ok()) return row.status();
  if (exists.Int(0) == 0) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  if (exists.Int(1) != 0) return txn.Commit();  // already measured: nothing changes

  std::optional<int64_t> binary_id;
  if (binary != nullptr) {
    absl::StatusOr<int64_t> id = InsertBinary(db_, *binary);
    if (!id.ok()) return id.status();
    binary_id = *id;
  }
  Stmt insert(db_,
              "INSERT OR IGNORE INTO measurements (job_id, device_id, family, dtype, shape, "
              "config, params, status, median_ms, metric, metric_unit, error, message, "
              "repetitions, registers, binary_id, created_unix) "
              "SELECT id, device_id, family, dtype, shape, "
              "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 FROM jobs WHERE id = ?1");
  insert.Bind(job_id, m.config().name(), ParamsText(m.config()),
              v1::MeasurementStatus_Name(m.status()), m.median_ms(), m.metric(), m.metric_unit(),
              m.error(), m.message(), m.repetitions(), m.registers(), binary_id, NowUnix());
  TUNED_RETURN_IF_ERROR(insert.Run());
  return txn.Commit();
}

absl::StatusOr<std::set<std::string>> Store::MeasuredConfigs(int64_t job_id) {
  absl::MutexLock lock(&mu_);
  Stmt q(db_, "SELECT config FROM measurements WHERE job_id = ?1");
  q.Bind(job_id);
  std::set<std::string> names;
  for (;;) {
    absl::StatusOr<bool> row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    names.insert(q.Text(0));
  }
  return names;
}

absl::StatusOr<std::vector<v1::Measurement>> Store::ListMeasurements(int64_t device_id,
                                                                     const v1::Problem& problem,
                                                                     int top) {
  absl::MutexLock lock(&mu_);
  // OK by time, then compile-only results, then failures; ties by insertion.
  Stmt q(db_, "SELECT " TUNED_MEASUREMENT_COLS
              " FROM measurements m "
              "WHERE m.device_id = ?1 AND m.family = ?2 AND m.dtype = ?3 AND m.shape = ?4 "
              "ORDER BY CASE m.status WHEN 'MEASUREMENT_OK' THEN 0 "
              "  WHEN 'MEASUREMENT_COMPILED' THEN 1 ELSE 2 END, m.median_ms, m.id "
              "LIMIT ?5");
  q.Bind(device_id, v1::Family_Name(problem.family()), v1::DType_Name(problem.dtype()),
         ShapeText(problem), top <= 0 ? -1 : top);
  std::vector<v1::Measurement> out;
  for (;;) {
    absl::StatusOr<bool> row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    TUNED_RETURN_IF_ERROR(ReadMeasurement(q, &out.emplace_back()));
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const BestRow>> Store::Best(int64_t device_id,
                                                           const v1::Problem& problem) {
  const std::string key = absl::StrCat(device_id, " ", ProblemLabel(problem));
  uint64_t generation;
  {
    absl::MutexLock lock(&cache_mu_);
    if (auto it = best_cache_.find(key); it != best_cache_.end()) return it->second;
    generation = best_generation_;
  }
  auto best = QueryBest(device_id, problem);
  if (best.ok()) {
    absl::MutexLock lock(&cache_mu_);
    // Not if a write changed some best meanwhile: this row may be stale.
    if (generation == best_generation_) best_cache_[key] = *best;
  }
  return best;
}

void Store::InvalidateBest() {
  absl::MutexLock lock(&cache_mu_);
  best_cache_.clear();
  ++best_generation_;
}

absl::StatusOr<std::shared_ptr<const BestRow>> Store::QueryBest(int64_t device_id,
                                                                const v1::Problem& problem) {
  absl::MutexLock lock(&mu_);
  Stmt q(db_, "SELECT " TUNED_MEASUREMENT_COLS
              ", b.id, b.source, b.entry, b.cubin, b.ptx, "
              "b.log, j.baseline_ms, j.baseline_name FROM measurements m "
              "JOIN jobs j ON j.id = m.job_id LEFT JOIN binaries b ON b.id = m.binary_id "
              "WHERE m.device_id = ?1 AND m.family = ?2 AND m.dtype = ?3 AND m.shape = ?4 "
              "AND m.status = ?5 ORDER BY m.median_ms, m.id LIMIT 1");
  q.Bind(device_id, v1::Family_Name(problem.family()), v1::DType_Name(problem.dtype()),
         ShapeText(problem), kOk);
  absl::StatusOr<bool> row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) {
    return absl::NotFoundError(
        absl::StrCat("no tuned kernel for ", ProblemLabel(problem), " on this device"));
  }
  BestRow best;
  TUNED_RETURN_IF_ERROR(ReadMeasurement(q, &best.measurement));
  constexpr int b = kMeasurementCols;
  if (!q.IsNull(b)) {
    best.binary = KernelBinary{.source = q.Text(b + 1),
                               .entry = q.Text(b + 2),
                               .cubin = q.Text(b + 3),
                               .ptx = q.Text(b + 4),
                               .log = q.Text(b + 5)};
  }
  best.baseline_ms = q.Double(b + 6);
  best.baseline_name = q.Text(b + 7);
  return std::make_shared<const BestRow>(std::move(best));
}

absl::StatusOr<std::vector<std::vector<int64_t>>> Store::TunedShapes(int64_t device_id,
                                                                     v1::Family family,
                                                                     v1::DType dtype) {
  absl::MutexLock lock(&mu_);
  Stmt q(db_, "SELECT DISTINCT shape FROM measurements "
              "WHERE device_id = ?1 AND family = ?2 AND dtype = ?3 AND status = ?4 ORDER BY shape");
  q.Bind(device_id, v1::Family_Name(family), v1::DType_Name(dtype), kOk);
  std::vector<std::vector<int64_t>> out;
  for (;;) {
    absl::StatusOr<bool> row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    std::vector<int64_t>& shape = out.emplace_back();
    const std::string text = q.Text(0);
    for (absl::string_view d : absl::StrSplit(text, 'x')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(d, &v)) return absl::DataLossError(absl::StrCat("bad shape ", text));
      shape.push_back(v);
    }
  }
  return out;
}

}  // namespace tuned

namespace tuned {

absl::StatusOr<std::optional<CompiledRow>> Store::LookupCompiled(const CompileKey& k) {
  absl::MutexLock lock(&mu_);
  Stmt q(db_,
         "SELECT c.ok, c.message, c.registers, c.local_bytes, c.compile_ms, "
         "b.source, b.entry, b.cubin, b.ptx, b.log "
         "FROM compiled c LEFT JOIN binaries b ON b.id = c.binary_id "
         "WHERE c.digest = ?1 AND c.source = ?2 AND c.name_expression = ?3 AND c.options = ?4 "
         "AND c.arch = ?5 AND c.nvrtc_version = ?6 LIMIT 1");
  q.Bind(Digest(k), k.source, k.name_expression, k.options, k.arch, k.nvrtc_version);
  absl::StatusOr<bool> row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<CompiledRow>();
  CompiledRow r;
  r.ok = q.Int(0) != 0;
  r.message = q.Text(1);
  r.registers = static_cast<int>(q.Int(2));
  r.local_bytes = static_cast<int>(q.Int(3));
  r.compile_ms = q.Double(4);
  r.binary = {q.Text(5), q.Text(6), q.Text(7), q.Text(8), q.Text(9)};
  return std::optional<CompiledRow>(std::move(r));
}

absl::Status Store::AddCompiled(const CompileKey& k, const CompiledRow& r) {
  absl::MutexLock lock(&mu_);
  Txn txn(db_);
  TUNED_RETURN_IF_ERROR(txn.Begin());
  const int64_t digest = Digest(k);
  Stmt find(db_,
            "SELECT id FROM compiled WHERE digest = ?1 AND source = ?2 AND name_expression = ?3 "
            "AND options = ?4 AND arch = ?5 AND nvrtc_version = ?6 LIMIT 1");
  find.Bind(digest, k.source, k.name_expression, k.options, k.arch, k.nvrtc_version);
  absl::StatusOr<bool> row = find.Step();
  if (!row.ok()) return row.status();
  if (*row) return absl::OkStatus();  // cached already (idempotent)
  std::optional<int64_t> binary_id;
  if (r.ok) {
    auto id = InsertBinary(db_, r.binary);
    if (!id.ok()) return id.status();
    binary_id = *id;
  }
  Stmt insert(db_,
              "INSERT INTO compiled (digest, source, name_expression, options, arch, "
              "nvrtc_version, ok, message, binary_id, registers, local_bytes, compile_ms, "
              "created_unix) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
  insert.Bind(digest, k.source, k.name_expression, k.options, k.arch, k.nvrtc_version,
              int64_t{r.ok}, r.message, binary_id, r.registers, r.local_bytes, r.compile_ms,
              NowUnix());
  TUNED_RETURN_IF_ERROR(insert.Run());
  return txn.Commit();
}

absl::StatusOr<int> Store::AddCrash(int64_t device_id, v1::Family family, std::string_view config,
                                    std::string_view what) {
  absl::MutexLock lock(&mu_);
  Txn txn(db_);
  TUNED_RETURN_IF_ERROR(txn.Begin());
  Stmt upsert(db_,
              "INSERT INTO crashes (device_id, family, config, count, last) "
              "VALUES (?1, ?2, ?3, 1, ?4) ON CONFLICT (device_id, family, config) "
              "DO UPDATE SET count = count + 1, last = ?4");
  upsert.Bind(device_id, v1::Family_Name(family), config, what);
  TUNED_RETURN_IF_ERROR(upsert.Run());
  TUNED_RETURN_IF_ERROR(txn.Commit());
  return CrashCountLocked(device_id, family, config);
}

absl::StatusOr<int> Store::CrashCount(int64_t device_id, v1::Family family,
                                      std::string_view config) {
  absl::MutexLock lock(&mu_);
  return CrashCountLocked(device_id, family, config);
}

absl::StatusOr<int> Store::CrashCountLocked(int64_t device_id, v1::Family family,
                                            std::string_view config) {
  Stmt q(db_, "SELECT count FROM crashes WHERE device_id = ?1 AND family = ?2 AND config = ?3");
  q.Bind(device_id, v1::Family_Name(family), config);
  absl::StatusOr<bool> row = q.Step();
  if (!row.ok()) return row.status();
  return *row ? static_cast<int>(q.Int(0)) : 0;
}

absl::Status Store::AddJobTime(int64_t id, const JobTime& t) {
  absl::MutexLock lock(&mu_);
  Stmt update(db_,
              "UPDATE jobs SET compile_seconds = compile_seconds + ?2, "
              "measure_seconds = measure_seconds + ?3, wait_seconds = wait_seconds + ?4, "
              "worker_restarts = worker_restarts + ?5, cached = cached + ?6 WHERE id = ?1");
  update.Bind(id, t.compile_seconds, t.measure_seconds, t.wait_seconds, t.worker_restarts,
              t.cached);
  return update.Run();
}

absl::Status Store::AddJobConfigs(int64_t id, int32_t configs) {
  absl::MutexLock lock(&mu_);
  Stmt update(db_, "UPDATE jobs SET total = total + ?2 WHERE id = ?1");
  update.Bind(id, configs);
  return update.Run();
}

}  // namespace tuned

namespace tuned {

absl::Status Store::SetRetimed(int64_t job_id, std::string_view config, double median_ms,
                               double metric, std::string_view note) {
  {
    absl::MutexLock lock(&mu_);
    Stmt update(db_,
                "UPDATE measurements SET median_ms = ?3, metric = ?4, message = ?5 "
                "WHERE job_id = ?1 AND config = ?2 AND status = 'MEASUREMENT_OK'");
    update.Bind(job_id, config, median_ms, metric, note);
    TUNED_RETURN_IF_ERROR(update.Run());
    if (sqlite3_changes(db_) == 0) {
      return absl::NotFoundError(
          absl::StrCat("job ", job_id, " has no OK measurement of ", std::string(config)));
    }
  }
  InvalidateBest();
  return absl::OkStatus();
}

}  // namespace tuned
