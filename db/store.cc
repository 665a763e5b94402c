// The store: see store.h. All SQL is written once, in the dialect of
// db/database.h, and runs on both backends; values are always bound, never
// formatted into SQL. All methods hold mu_ for their whole duration.
#include "db/store.h"

#include <chrono>
#include <initializer_list>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/status.h"

namespace tuned {
namespace {

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// "No limit" for LIMIT ?n (PostgreSQL takes no negative limit).
constexpr int64_t kNoLimit = int64_t{1} << 62;

/// A C++ argument as a statement Value.
Value V(double d) { return d; }
Value V(const Blob& b) { return b; }
Value V(std::string_view s) { return s; }
Value V(const std::string& s) { return std::string_view(s); }
Value V(const char* s) { return std::string_view(s); }
Value V(bool b) { return int64_t{b}; }
template <typename T>
  requires std::is_integral_v<T>
Value V(T x) {
  return static_cast<int64_t>(x);
}
Value V(const std::optional<int64_t>& x) { return x ? Value(*x) : Value(nullptr); }
Value V(const Value& v) { return v; }

std::string ShapeText(const v1::Problem& p) { return absl::StrJoin(p.shape(), "x"); }

/// The math column's text: the proto name, e.g. "MATH_TF32" (a number this
/// build does not know as its digits, which match no stored row).
std::string MathText(const v1::Problem& p) {
  const std::string name = v1::Math_Name(p.math());
  return name.empty() ? std::to_string(static_cast<int>(p.math())) : name;
}

/// "sgemm f32 1024x1024x1024", for messages and the cache of bests; a math
/// mode other than the default follows, e.g. "sgemm f32 1024x1024x1024 tf32".
std::string ProblemLabel(const v1::Problem& p) {
  std::string label = absl::StrCat(
      absl::AsciiStrToLower(absl::StripPrefix(v1::Family_Name(p.family()), "FAMILY_")), " ",
      absl::AsciiStrToLower(absl::StripPrefix(v1::DType_Name(p.dtype()), "DTYPE_")), " ",
      ShapeText(p));
  if (p.math() != v1::MATH_IEEE_FP32) {
    absl::StrAppend(&label, " ", absl::AsciiStrToLower(absl::StripPrefix(MathText(p), "MATH_")));
  }
  return label;
}

absl::Status ParseProblem(const std::string& family, const std::string& dtype,
                          const std::string& shape, const std::string& math, v1::Problem* p) {
  v1::Family f;
  v1::DType d;
  v1::Math m;
  if (!v1::Family_Parse(family, &f) || !v1::DType_Parse(dtype, &d) || !v1::Math_Parse(math, &m)) {
    return absl::DataLossError(absl::StrCat("stored problem has unknown family '", family,
                                            "', dtype '", dtype, "' or math '", math, "'"));
  }
  p->set_family(f);
  p->set_dtype(d);
  p->set_math(m);
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


constexpr char kOk[] = "MEASUREMENT_OK";

// Columns of a measurement, read by ReadMeasurement in this order; the
// query joins `daemons d` (LEFT JOIN daemons d ON d.id = m.daemon_id).
#define TUNED_MEASUREMENT_COLS                                                               \
  "m.config, m.params, m.status, m.median_ms, m.metric, m.metric_unit, m.error, m.message, " \
  "m.job_id, m.repetitions, m.registers, m.created_unix, COALESCE(d.host, ''), "             \
  "COALESCE(d.gpu, 0), m.sm_clock_mhz, m.clock_low"
constexpr int kMeasurementCols = 16;

absl::Status ReadMeasurement(const Rows& q, size_t r, v1::Measurement* m) {
  m->mutable_config()->set_name(q.Text(r, 0));
  TUNED_RETURN_IF_ERROR(ParseParams(q.Text(r, 1), m->mutable_config()));
  v1::MeasurementStatus status;
  if (!v1::MeasurementStatus_Parse(q.Text(r, 2), &status)) {
    return absl::DataLossError(absl::StrCat("unknown measurement status '", q.Text(r, 2), "'"));
  }
  m->set_status(status);
  m->set_median_ms(q.Double(r, 3));
  m->set_metric(q.Double(r, 4));
  m->set_metric_unit(q.Text(r, 5));
  m->set_error(q.Double(r, 6));
  m->set_message(q.Text(r, 7));
  m->set_job_id(q.Int(r, 8));
  m->set_repetitions(static_cast<int32_t>(q.Int(r, 9)));
  m->set_registers(static_cast<int32_t>(q.Int(r, 10)));
  m->set_created_unix(q.Int(r, 11));
  m->set_host(q.Text(r, 12));
  m->set_gpu(static_cast<int32_t>(q.Int(r, 13)));
  m->set_sm_clock_mhz(static_cast<int32_t>(q.Int(r, 14)));
  m->set_clock_low(q.Int(r, 15) != 0);
  return absl::OkStatus();
}

}  // namespace

template <typename... Args>
absl::StatusOr<Rows> Store::Query(std::string_view sql, const Args&... args) {
  return db_->Query(sql, std::vector<Value>{V(args)...});
}

absl::Status Store::InTxn(bool serialize, const std::function<absl::Status()>& body) {
  TUNED_RETURN_IF_ERROR(db_->Begin(serialize));
  absl::Status s = body();
  if (s.ok()) s = db_->Commit();
  if (!s.ok()) db_->Rollback();
  return s;
}

Store::Store(std::unique_ptr<Database> db) : db_(std::move(db)) {}

Store::~Store() = default;

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& url) {
  auto db = Database::Open(url);
  if (!db.ok()) return db.status();
  return std::make_unique<Store>(*std::move(db));
}

absl::StatusOr<int64_t> Store::UpsertDevice(const v1::Device& d) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<int64_t> id;
  TUNED_RETURN_IF_ERROR(InTxn(false, [&]() -> absl::Status {
    // A kind stored before the SM count was part of it (schema 2) is this one.
    if (d.sm_count() != 0) {
      auto adopt = Query(
          "UPDATE devices SET sm_count = ?6 WHERE name = ?1 AND cc_major = ?2 AND "
          "cc_minor = ?3 AND driver_version = ?4 AND nvrtc_version = ?5 AND "
          "sm_count = 0",
          d.name(), d.cc_major(), d.cc_minor(), d.driver_version(), d.nvrtc_version(),
          d.sm_count());
      if (!adopt.ok()) return adopt.status();
    }
    auto insert = Query(
        "INSERT INTO devices (name, cc_major, cc_minor, driver_version, nvrtc_version, "
        "sm_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
        d.name(), d.cc_major(), d.cc_minor(), d.driver_version(), d.nvrtc_version(), d.sm_count());
    if (!insert.ok()) return insert.status();
    auto find = Query("SELECT id FROM devices WHERE name = ?1 AND cc_major = ?2 AND cc_minor = ?3 "
                      "AND driver_version = ?4 AND nvrtc_version = ?5 AND sm_count = ?6",
                      d.name(), d.cc_major(), d.cc_minor(), d.driver_version(), d.nvrtc_version(),
                      d.sm_count());
    if (!find.ok()) return find.status();
    if (find->empty()) return absl::InternalError("device row vanished after insert");
    id = find->Int(0, 0);
    return absl::OkStatus();
  }));
  return id;
}

// ---- the fleet ----

absl::StatusOr<int64_t> Store::RegisterDaemon(int64_t device_id, const DaemonIdentity& who) {
  absl::MutexLock lock(&mu_);
  int64_t id = 0;
  TUNED_RETURN_IF_ERROR(InTxn(false, [&]() -> absl::Status {
    auto row = Query(
        "INSERT INTO daemons (host, gpu, gpu_uuid, device_id, pid, started_unix, "
        "heartbeat, lease_seconds, job_id, stopped) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, {now}, ?7, 0, 0) "
        "ON CONFLICT (host, gpu, gpu_uuid) DO UPDATE SET device_id = excluded.device_id, "
        "pid = excluded.pid, started_unix = excluded.started_unix, "
        "heartbeat = excluded.heartbeat, lease_seconds = excluded.lease_seconds, "
        "job_id = 0, stopped = 0 RETURNING id",
        who.host, who.gpu, who.gpu_uuid, device_id, who.pid, NowUnix(), who.lease_seconds);
    if (!row.ok()) return row.status();
    if (row->empty()) return absl::InternalError("daemon row vanished after insert");
    id = row->Int(0, 0);
    // Its earlier run's claims: that run is gone.
    return Query("UPDATE work_items SET daemon_id = NULL, lease_until = NULL "
                 "WHERE daemon_id = ?1 AND done = 0",
                 id)
        .status();
  }));
  return id;
}

absl::StatusOr<HeartbeatResult> Store::Heartbeat(int64_t daemon_id, int64_t job_id) {
  absl::MutexLock lock(&mu_);
  HeartbeatResult out;
  TUNED_RETURN_IF_ERROR(InTxn(false, [&]() -> absl::Status {
    auto me = Query("UPDATE daemons SET heartbeat = {now}, job_id = ?2 WHERE id = ?1", daemon_id,
                    job_id);
    if (!me.ok()) return me.status();
    if (me->affected() == 0) return absl::NotFoundError(absl::StrCat("daemon ", daemon_id, " not found"));
    auto leases = Query("UPDATE work_items SET lease_until = {now} + "
                        "(SELECT lease_seconds FROM daemons WHERE id = ?1) "
                        "WHERE daemon_id = ?1 AND done = 0",
                        daemon_id);
    if (!leases.ok()) return leases.status();
    out.held = leases->affected();
    if (job_id > 0) {
      auto state = Query("SELECT state FROM jobs WHERE id = ?1", job_id);
      if (!state.ok()) return state.status();
      out.job_active = !state->empty() && (state->Text(0, 0) == "JOB_QUEUED" ||
                                           state->Text(0, 0) == "JOB_RUNNING");
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::Status Store::ReleaseClaims(int64_t daemon_id, bool stopped) {
  absl::MutexLock lock(&mu_);
  return InTxn(false, [&]() -> absl::Status {
    auto released = Query("UPDATE work_items SET daemon_id = NULL, lease_until = NULL "
                          "WHERE daemon_id = ?1 AND done = 0",
                          daemon_id);
    if (!released.ok()) return released.status();
    return Query("UPDATE daemons SET job_id = 0, stopped = ?2 WHERE id = ?1", daemon_id, stopped)
        .status();
  });
}

absl::StatusOr<std::vector<v1::Daemon>> Store::ListDaemons(bool all) {
  absl::MutexLock lock(&mu_);
  auto q = Query(
      "SELECT d.id, d.host, d.gpu, d.gpu_uuid, {now} - d.heartbeat, d.lease_seconds, "
      "d.job_id, d.started_unix, d.stopped, d.pid, v.name, v.cc_major, v.cc_minor, "
      "v.sm_count, v.driver_version, v.nvrtc_version, "
      "(SELECT COUNT(*) FROM work_items w WHERE w.daemon_id = d.id AND w.done = 0) "
      "FROM daemons d JOIN devices v ON v.id = d.device_id ORDER BY d.host, d.gpu, d.id");
  if (!q.ok()) return q.status();
  std::vector<v1::Daemon> out;
  for (size_t r = 0; r < q->size(); ++r) {
    v1::Daemon d;
    d.set_id(q->Int(r, 0));
    d.set_host(q->Text(r, 1));
    d.set_gpu(static_cast<int32_t>(q->Int(r, 2)));
    d.set_gpu_uuid(q->Text(r, 3));
    d.set_heartbeat_age_seconds(std::max(0.0, q->Double(r, 4)));
    d.set_lease_seconds(q->Double(r, 5));
    d.set_job_id(q->Int(r, 6));
    d.set_started_unix(q->Int(r, 7));
    d.set_live(q->Int(r, 8) == 0 && q->Double(r, 4) < q->Double(r, 5));
    d.set_pid(q->Int(r, 9));
    v1::Device* kind = d.mutable_kind();
    kind->set_name(q->Text(r, 10));
    kind->set_cc_major(static_cast<int32_t>(q->Int(r, 11)));
    kind->set_cc_minor(static_cast<int32_t>(q->Int(r, 12)));
    kind->set_sm_count(static_cast<int32_t>(q->Int(r, 13)));
    kind->set_driver_version(static_cast<int32_t>(q->Int(r, 14)));
    kind->set_nvrtc_version(q->Text(r, 15));
    d.set_claimed(q->Int(r, 16));
    if (all || d.live()) out.push_back(std::move(d));
  }
  return out;
}

absl::StatusOr<std::optional<Claim>> Store::ClaimWork(int64_t daemon_id, int64_t device_id,
                                                      int64_t prefer_job, int n) {
  absl::MutexLock lock(&mu_);
  std::optional<Claim> claim;
  // Another daemon may take the chosen job's last items between the two
  // statements: then the next job is tried.
  bool none = false;  // no job of the kind has a claimable item
  for (int attempt = 0; attempt < 3 && !claim && !none; ++attempt) {
    TUNED_RETURN_IF_ERROR(InTxn(false, [&]() -> absl::Status {
      auto job = Query("SELECT w.job_id FROM work_items w JOIN jobs j ON j.id = w.job_id "
                       "WHERE j.device_id = ?1 AND j.state IN ('JOB_QUEUED', 'JOB_RUNNING') "
                       "AND w.done = 0 AND (w.daemon_id IS NULL OR w.daemon_id = ?3 OR "
                       "w.lease_until < {now}) "
                       "ORDER BY CASE WHEN w.job_id = ?2 THEN 0 ELSE 1 END, w.job_id LIMIT 1",
                       device_id, prefer_job, daemon_id);
      if (!job.ok()) return job.status();
      if (job->empty()) {
        none = true;
        return absl::OkStatus();
      }
      const int64_t job_id = job->Int(0, 0);
      auto items = Query(
          "SELECT config, params, round, CASE WHEN daemon_id IS NULL OR daemon_id = ?3 "
          "THEN 0 ELSE 1 END FROM work_items WHERE job_id = ?1 AND done = 0 "
          "AND (daemon_id IS NULL OR daemon_id = ?3 OR lease_until < {now}) "
          "ORDER BY seq LIMIT ?2 {skip_locked}",
          job_id, n, daemon_id);
      if (!items.ok()) return items.status();
      if (items->empty()) return absl::OkStatus();
      Claim c;
      c.job_id = job_id;
      std::string sql = "UPDATE work_items SET daemon_id = ?1, lease_until = {now} + "
                        "(SELECT lease_seconds FROM daemons WHERE id = ?1) "
                        "WHERE job_id = ?2 AND config IN (";
      std::vector<Value> args = {daemon_id, job_id};
      for (size_t r = 0; r < items->size(); ++r) {
        WorkItem& item = c.items.emplace_back();
        item.config.set_name(items->Text(r, 0));
        TUNED_RETURN_IF_ERROR(ParseParams(items->Text(r, 1), &item.config));
        item.round = static_cast<int>(items->Int(r, 2));
        item.retime = item.config.name().empty();
        c.taken_over += static_cast<int>(items->Int(r, 3));
        absl::StrAppend(&sql, r == 0 ? "" : ", ", "?", args.size() + 1);
        args.push_back(std::string_view(item.config.name()));
      }
      sql += ")";
      auto update = db_->Query(sql, args);
      if (!update.ok()) return update.status();
      auto running = Query("UPDATE jobs SET state = 'JOB_RUNNING', started_unix = ?2 "
                           "WHERE id = ?1 AND state = 'JOB_QUEUED'",
                           job_id, NowUnix());
      if (!running.ok()) return running.status();
      auto me = Query("UPDATE daemons SET job_id = ?2 WHERE id = ?1", daemon_id, job_id);
      if (!me.ok()) return me.status();
      claim = std::move(c);
      return absl::OkStatus();
    }));
  }
  return claim;
}

absl::StatusOr<std::vector<v1::Job>> Store::IdleJobs(int64_t device_id) {
  absl::MutexLock lock(&mu_);
  auto q = Query("SELECT j.id FROM jobs j WHERE j.device_id = ?1 "
                 "AND j.state IN ('JOB_QUEUED', 'JOB_RUNNING') AND NOT EXISTS "
                 "(SELECT 1 FROM work_items w WHERE w.job_id = j.id AND w.done = 0) ORDER BY j.id",
                 device_id);
  if (!q.ok()) return q.status();
  std::vector<v1::Job> jobs;
  for (size_t r = 0; r < q->size(); ++r) {
    auto job = LoadJob(q->Int(r, 0));
    if (!job.ok()) return job.status();
    jobs.push_back(*std::move(job));
  }
  return jobs;
}

absl::StatusOr<bool> Store::AddRound(int64_t job_id, int from_round,
                                     const std::vector<v1::KernelConfig>& configs, bool retime) {
  absl::MutexLock lock(&mu_);
  bool added = false;
  TUNED_RETURN_IF_ERROR(InTxn(true, [&]() -> absl::Status {
    auto job = Query(
        "SELECT round, (SELECT COUNT(*) FROM work_items w WHERE w.job_id = ?1 AND "
        "w.done = 0), (SELECT COALESCE(MAX(seq), 0) FROM work_items w WHERE w.job_id = ?1) "
        "FROM jobs WHERE id = ?1 AND state IN ('JOB_QUEUED', 'JOB_RUNNING')",
        job_id);
    if (!job.ok()) return job.status();
    if (job->empty() || job->Int(0, 0) != from_round || job->Int(0, 1) != 0) {
      return absl::OkStatus();  // ended, or another daemon moved it on
    }
    int64_t seq = job->Int(0, 2);
    const int round = from_round + 1;
    for (const v1::KernelConfig& c : configs) {
      auto insert = Query(
          "INSERT INTO work_items (job_id, config, params, round, seq, done) "
          "VALUES (?1, ?2, ?3, ?4, ?5, CASE WHEN EXISTS (SELECT 1 FROM measurements "
          "m WHERE m.job_id = ?1 AND m.config = ?2) THEN 1 ELSE 0 END) "
          "ON CONFLICT DO NOTHING",
          job_id, c.name(), ParamsText(c), round, ++seq);
      if (!insert.ok()) return insert.status();
    }
    if (retime) {
      auto insert = Query("INSERT INTO work_items (job_id, config, params, round, seq, done) "
                          "VALUES (?1, '', '', ?2, ?3, 0) ON CONFLICT DO NOTHING",
                          job_id, round, ++seq);
      if (!insert.ok()) return insert.status();
    }
    auto update = Query("UPDATE jobs SET round = ?2, total = (SELECT COUNT(*) FROM work_items w "
                        "WHERE w.job_id = ?1 AND w.config <> '') WHERE id = ?1",
                        job_id, round);
    if (!update.ok()) return update.status();
    added = true;
    return absl::OkStatus();
  }));
  return added;
}

absl::StatusOr<int64_t> Store::SkipRemaining(int64_t job_id) {
  absl::MutexLock lock(&mu_);
  auto q = Query("UPDATE work_items SET done = 1 WHERE job_id = ?1 AND done = 0 AND config <> ''",
                 job_id);
  if (!q.ok()) return q.status();
  return q->affected();
}

absl::StatusOr<bool> Store::FinishJob(int64_t id, v1::JobState state, std::string_view error) {
  if (state != v1::JOB_DONE && state != v1::JOB_FAILED && state != v1::JOB_CANCELLED) {
    return absl::InvalidArgumentError(absl::StrCat("job state ", state, " is no end"));
  }
  absl::MutexLock lock(&mu_);
  bool changed = false;
  TUNED_RETURN_IF_ERROR(InTxn(false, [&]() -> absl::Status {
    const int64_t now = NowUnix();
    auto update = Query("UPDATE jobs SET state = ?2, error = ?3, finished_unix = ?4, "
                        "started_unix = COALESCE(started_unix, ?4) "
                        "WHERE id = ?1 AND state IN ('JOB_QUEUED', 'JOB_RUNNING')",
                        id, v1::JobState_Name(state), error, now);
    if (!update.ok()) return update.status();
    changed = update->affected() > 0;
    return Query("UPDATE work_items SET done = 1 WHERE job_id = ?1 AND done = 0", id).status();
  }));
  return changed;
}

// ---- jobs ----

absl::StatusOr<v1::Job> Store::LoadJob(int64_t id) {
  auto q = Query(
      "SELECT family, dtype, shape, state, total, pruned, error, baseline_ms, "
      "baseline_metric, baseline_name, created_unix, started_unix, finished_unix, "
      "compile_seconds, measure_seconds, wait_seconds, worker_restarts, cached, client, "
      "round, strategy, budget_seconds, budget_configs, math, baseline_error, error_bound "
      "FROM jobs WHERE id = ?1",
      id);
  if (!q.ok()) return q.status();
  if (q->empty()) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  v1::Job job;
  job.set_id(id);
  TUNED_RETURN_IF_ERROR(
      ParseProblem(q->Text(0, 0), q->Text(0, 1), q->Text(0, 2), q->Text(0, 23), job.mutable_problem()));
  v1::JobState state;
  if (!v1::JobState_Parse(q->Text(0, 3), &state)) {
    return absl::DataLossError(absl::StrCat("job ", id, " has unknown state '", q->Text(0, 3), "'"));
  }
  job.set_state(state);
  job.set_total(static_cast<int32_t>(q->Int(0, 4)));
  job.set_pruned(static_cast<int32_t>(q->Int(0, 5)));
  job.set_error(q->Text(0, 6));
  job.set_baseline_ms(q->Double(0, 7));
  job.set_baseline_metric(q->Double(0, 8));
  job.set_baseline_name(q->Text(0, 9));
  job.set_created_unix(q->Int(0, 10));
  job.set_started_unix(q->Int(0, 11));
  job.set_finished_unix(q->Int(0, 12));
  job.set_compile_seconds(q->Double(0, 13));
  job.set_measure_seconds(q->Double(0, 14));
  job.set_wait_seconds(q->Double(0, 15));
  job.set_worker_restarts(static_cast<int32_t>(q->Int(0, 16)));
  job.set_cached(static_cast<int32_t>(q->Int(0, 17)));
  job.set_client(q->Text(0, 18));
  job.set_round(static_cast<int32_t>(q->Int(0, 19)));
  job.set_strategy(q->Text(0, 20));
  job.set_budget_seconds(q->Double(0, 21));
  job.set_budget_configs(q->Int(0, 22));
  job.set_baseline_error(q->Double(0, 24));
  job.set_error_bound(q->Double(0, 25));

  auto counts = Query("SELECT COALESCE(SUM(CASE WHEN status IN ('MEASUREMENT_OK', "
                      "'MEASUREMENT_COMPILED') THEN 1 ELSE 0 END), 0), COUNT(*) "
                      "FROM measurements WHERE job_id = ?1",
                      id);
  if (!counts.ok()) return counts.status();
  job.set_done(static_cast<int32_t>(counts->Int(0, 0)));
  job.set_failed(static_cast<int32_t>(counts->Int(0, 1) - counts->Int(0, 0)));

  auto best = Query("SELECT " TUNED_MEASUREMENT_COLS
                    " FROM measurements m LEFT JOIN daemons d ON d.id = m.daemon_id "
                    "WHERE m.job_id = ?1 AND m.status = ?2 ORDER BY m.median_ms, m.id LIMIT 1",
                    id, kOk);
  if (!best.ok()) return best.status();
  if (!best->empty()) TUNED_RETURN_IF_ERROR(ReadMeasurement(*best, 0, job.mutable_best()));

  auto shares = Query("SELECT d.host, d.gpu, COUNT(*) FROM measurements m "
                      "JOIN daemons d ON d.id = m.daemon_id WHERE m.job_id = ?1 "
                      "GROUP BY d.host, d.gpu ORDER BY COUNT(*) DESC, d.host, d.gpu",
                      id);
  if (!shares.ok()) return shares.status();
  for (size_t r = 0; r < shares->size(); ++r) {
    v1::JobDaemon* d = job.add_daemons();
    d->set_host(shares->Text(r, 0));
    d->set_gpu(static_cast<int32_t>(shares->Int(r, 1)));
    d->set_measured(static_cast<int32_t>(shares->Int(r, 2)));
  }
  return job;
}

absl::StatusOr<int64_t> Store::CreateJob(int64_t device_id, const v1::Problem& problem,
                                         int32_t total, int32_t pruned, const ClientQuota& quota,
                                         const JobSearch& search) {
  absl::MutexLock lock(&mu_);
  int64_t id = 0;
  // Serialized: the check and the insert see no other writer, on any host.
  TUNED_RETURN_IF_ERROR(InTxn(true, [&]() -> absl::Status {
    if (quota.max_jobs > 0 || quota.max_configs > 0) {
      auto load = Query(
          "SELECT COUNT(*), COALESCE(SUM(total - (SELECT COUNT(*) FROM measurements m "
          "WHERE m.job_id = jobs.id)), 0) FROM jobs "
          "WHERE client = ?1 AND state IN ('JOB_QUEUED', 'JOB_RUNNING')",
          quota.client);
      if (!load.ok()) return load.status();
      const int64_t jobs = load->Int(0, 0), configs = load->Int(0, 1);
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
    auto insert = Query(
        "INSERT INTO jobs (device_id, family, dtype, shape, state, total, pruned, "
        "created_unix, client, strategy, budget_seconds, budget_configs, math) "
        "VALUES (?1, ?2, ?3, ?4, 'JOB_QUEUED', ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) "
        "RETURNING id",
        device_id, v1::Family_Name(problem.family()), v1::DType_Name(problem.dtype()),
        ShapeText(problem), total, pruned, NowUnix(), quota.client, search.strategy,
        search.budget_seconds, search.budget_configs, MathText(problem));
    if (!insert.ok()) return insert.status();
    if (insert->empty()) return absl::InternalError("job insert returned no id");
    id = insert->Int(0, 0);
    return absl::OkStatus();
  }));
  return id;
}

absl::StatusOr<int64_t> Store::CountJobs(int64_t device_id, v1::JobState state) {
  absl::MutexLock lock(&mu_);
  auto q = Query("SELECT COUNT(*) FROM jobs WHERE device_id = ?1 AND state = ?2", device_id,
                 v1::JobState_Name(state));
  if (!q.ok()) return q.status();
  return q->Int(0, 0);
}

absl::StatusOr<v1::Job> Store::GetJob(int64_t id) {
  absl::MutexLock lock(&mu_);
  return LoadJob(id);
}

absl::StatusOr<std::vector<v1::Job>> Store::ListJobs(int limit) {
  absl::MutexLock lock(&mu_);
  auto q = Query("SELECT id FROM jobs ORDER BY id DESC LIMIT ?1", limit <= 0 ? 50 : limit);
  if (!q.ok()) return q.status();
  std::vector<v1::Job> jobs;
  for (size_t r = 0; r < q->size(); ++r) {
    absl::StatusOr<v1::Job> job = LoadJob(q->Int(r, 0));
    if (!job.ok()) return job.status();
    jobs.push_back(*std::move(job));
  }
  return jobs;
}

absl::Status Store::SetJobBaseline(int64_t id, double ms, double metric, std::string_view name) {
  absl::Status s;
  {
    absl::MutexLock lock(&mu_);
    s = InTxn(false, [&]() -> absl::Status {
      auto update = Query(
          "UPDATE jobs SET baseline_ms = ?1, baseline_metric = ?2, baseline_name = ?3 "
          "WHERE id = ?4",
          ms, metric, name, id);
      if (!update.ok()) return update.status();
      if (update->affected() == 0)
        return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
      return Query("{bump}").status();  // a best carries its job's baseline
    });
  }
  InvalidateBest();
  return s;
}

absl::Status Store::SetJobErrorBound(int64_t id, double baseline_error, double error_bound) {
  absl::MutexLock lock(&mu_);
  auto update = Query("UPDATE jobs SET baseline_error = ?1, error_bound = ?2 WHERE id = ?3",
                      baseline_error, error_bound, id);
  if (!update.ok()) return update.status();
  if (update->affected() == 0) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  return absl::OkStatus();
}

absl::StatusOr<bool> Store::AddMeasurement(int64_t job_id, const v1::Measurement& m,
                                   const KernelBinary* binary, int64_t daemon_id,
                                   double baseline_ms) {
  if (m.config().name().empty()) {
    return absl::InvalidArgumentError("measurement has no config name");
  }
  const bool ok = m.status() == v1::MEASUREMENT_OK;
  bool inserted = false;
  absl::Status s;
  {
    absl::MutexLock lock(&mu_);
    s = InTxn(false, [&]() -> absl::Status {
      auto exists = Query("SELECT (SELECT COUNT(*) FROM jobs WHERE id = ?1), "
                          "(SELECT COUNT(*) FROM measurements WHERE job_id = ?1 AND config = ?2)",
                          job_id, m.config().name());
      if (!exists.ok()) return exists.status();
      if (exists->Int(0, 0) == 0) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
      if (exists->Int(0, 1) == 0) {  // else measured already (by this or another daemon)
        std::optional<int64_t> binary_id;
        if (binary != nullptr) {
          auto id = InsertBinary(*binary);
          if (!id.ok()) return id.status();
          binary_id = *id;
        }
        auto insert = Query(
            "INSERT INTO measurements (job_id, device_id, family, dtype, shape, config, params, "
            "status, median_ms, metric, metric_unit, error, message, repetitions, registers, "
            "binary_id, created_unix, daemon_id, baseline_ms, sm_clock_mhz, clock_low, math) "
            "SELECT id, device_id, family, dtype, shape, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
            "?12, ?13, ?14, ?15, ?16, ?17, math FROM jobs WHERE id = ?1 ON CONFLICT DO NOTHING",
            job_id, m.config().name(), ParamsText(m.config()), v1::MeasurementStatus_Name(m.status()),
            m.median_ms(), m.metric(), m.metric_unit(), m.error(), m.message(), m.repetitions(),
            m.registers(), binary_id,
            NowUnix(), daemon_id > 0 ? std::optional<int64_t>(daemon_id) : std::nullopt,
            baseline_ms > 0 ? Value(baseline_ms) : Value(nullptr), m.sm_clock_mhz(), m.clock_low());
        if (!insert.ok()) return insert.status();
        inserted = insert->affected() > 0;
        if (ok) TUNED_RETURN_IF_ERROR(Query("{bump}").status());
      }
      return Query("UPDATE work_items SET done = 1 WHERE job_id = ?1 AND config = ?2", job_id,
                   m.config().name())
          .status();
    });
  }
  // Only an OK measurement can change a best; invalidate after it is stored.
  if (ok) InvalidateBest();
  if (!s.ok()) return s;
  return inserted;
}

absl::StatusOr<std::set<std::string>> Store::MeasuredConfigs(int64_t job_id) {
  absl::MutexLock lock(&mu_);
  auto q = Query("SELECT config FROM measurements WHERE job_id = ?1", job_id);
  if (!q.ok()) return q.status();
  std::set<std::string> names;
  for (size_t r = 0; r < q->size(); ++r) names.insert(q->Text(r, 0));
  return names;
}

absl::StatusOr<std::vector<v1::Measurement>> Store::ListMeasurements(int64_t device_id,
                                                                     const v1::Problem& problem,
                                                                     int top) {
  absl::MutexLock lock(&mu_);
  // OK by time, then compile-only results, then failures; ties by insertion.
  auto q = Query("SELECT " TUNED_MEASUREMENT_COLS
                 " FROM measurements m LEFT JOIN daemons d ON d.id = m.daemon_id "
                 "WHERE m.device_id = ?1 AND m.family = ?2 AND m.dtype = ?3 AND m.shape = ?4 "
                 "AND m.math = ?6 "
                 "ORDER BY CASE m.status WHEN 'MEASUREMENT_OK' THEN 0 "
                 "  WHEN 'MEASUREMENT_COMPILED' THEN 1 ELSE 2 END, m.median_ms, m.id "
                 "LIMIT ?5",
                 device_id, v1::Family_Name(problem.family()), v1::DType_Name(problem.dtype()),
                 ShapeText(problem), top <= 0 ? kNoLimit : top, MathText(problem));
  if (!q.ok()) return q.status();
  std::vector<v1::Measurement> out;
  for (size_t r = 0; r < q->size(); ++r) {
    TUNED_RETURN_IF_ERROR(ReadMeasurement(*q, r, &out.emplace_back()));
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
  absl::MutexLock lock(&cache_mu_);
  if (best.ok()) {
    // Not if a write changed some best meanwhile: this row may be stale.
    if (generation == best_generation_) best_cache_[key] = *best;
  } else if (best.status().code() == absl::StatusCode::kUnavailable) {
    if (auto it = stale_best_.find(key); it != stale_best_.end()) return it->second;
  }
  return best;
}

void Store::InvalidateBest() {
  absl::MutexLock lock(&cache_mu_);
  for (auto& [key, row] : best_cache_) stale_best_[key] = std::move(row);
  best_cache_.clear();
  ++best_generation_;
}

absl::Status Store::Refresh() {
  int64_t now = 0;
  {
    absl::MutexLock lock(&mu_);
    auto q = Query("{generation}");
    if (!q.ok()) return q.status();
    if (q->empty()) return absl::DataLossError("the change counter has no row");
    now = q->Int(0, 0);
  }
  bool changed;
  {
    absl::MutexLock lock(&cache_mu_);
    changed = db_generation_ != now;
    db_generation_ = now;
  }
  if (changed) InvalidateBest();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const BestRow>> Store::QueryBest(int64_t device_id,
                                                                const v1::Problem& problem) {
  absl::MutexLock lock(&mu_);
  auto q =
      Query("SELECT " TUNED_MEASUREMENT_COLS
            ", b.id, b.source, b.entry, b.cubin, b.ptx, b.log, "
            "COALESCE(m.baseline_ms, j.baseline_ms), j.baseline_name, m.speedup, m.speedup_ci_low, "
            "m.speedup_ci_high, m.speedup_pairs, m.speedup_note, j.baseline_error "
            "FROM measurements m "
            "JOIN jobs j ON j.id = m.job_id LEFT JOIN binaries b ON b.id = m.binary_id "
            "LEFT JOIN daemons d ON d.id = m.daemon_id "
            "WHERE m.device_id = ?1 AND m.family = ?2 AND m.dtype = ?3 AND m.shape = ?4 "
            "AND m.status = ?5 AND m.math = ?6 ORDER BY m.median_ms, m.id LIMIT 1",
            device_id, v1::Family_Name(problem.family()), v1::DType_Name(problem.dtype()),
            ShapeText(problem), kOk, MathText(problem));
  if (!q.ok()) return q.status();
  if (q->empty()) {
    // No kernel passed verification: a sweep that ended DONE with its
    // baseline timed serves the baseline (server/jobs.cc, Finish). A
    // compile-only job times none; a running or failed one is no answer.
    auto base = Query("SELECT id, baseline_ms, baseline_name, baseline_error FROM jobs "
                      "WHERE device_id = ?1 AND state = ?2 AND family = ?3 AND dtype = ?4 "
                      "AND shape = ?5 AND math = ?6 AND baseline_ms > 0 ORDER BY id DESC LIMIT 1",
                      device_id, v1::JobState_Name(v1::JOB_DONE), v1::Family_Name(problem.family()),
                      v1::DType_Name(problem.dtype()), ShapeText(problem), MathText(problem));
    if (!base.ok()) return base.status();
    if (base->empty()) {
      return absl::NotFoundError(
          absl::StrCat("no tuned kernel for ", ProblemLabel(problem), " on this device"));
    }
    BestRow only;
    only.baseline_only = true;
    only.baseline_job = base->Int(0, 0);
    only.baseline_ms = base->Double(0, 1);
    only.baseline_name = base->Text(0, 2);
    only.baseline_error = base->Double(0, 3);
    return std::make_shared<const BestRow>(std::move(only));
  }
  BestRow best;
  TUNED_RETURN_IF_ERROR(ReadMeasurement(*q, 0, &best.measurement));
  constexpr int b = kMeasurementCols;
  if (!q->IsNull(0, b)) {
    best.binary = KernelBinary{.source = q->Text(0, b + 1),
                               .entry = q->Text(0, b + 2),
                               .cubin = q->Text(0, b + 3),
                               .ptx = q->Text(0, b + 4),
                               .log = q->Text(0, b + 5)};
  }
  best.baseline_ms = q->Double(0, b + 6);
  best.baseline_name = q->Text(0, b + 7);
  if (!q->IsNull(0, b + 8)) {
    best.speedup.speedup = q->Double(0, b + 8);
    best.speedup.ci_low = q->Double(0, b + 9);
    best.speedup.ci_high = q->Double(0, b + 10);
    best.speedup.pairs = static_cast<int>(q->Int(0, b + 11));
  }
  best.speedup.note = q->Text(0, b + 12);
  best.baseline_error = q->Double(0, b + 13);
  best.speedup.sm_clock_mhz = best.measurement.sm_clock_mhz();
  best.speedup.clock_low = best.measurement.clock_low();
  return std::make_shared<const BestRow>(std::move(best));
}

absl::StatusOr<std::vector<std::vector<int64_t>>> Store::TunedShapes(int64_t device_id,
                                                                     v1::Family family,
                                                                     v1::DType dtype,
                                                                     v1::Math math) {
  absl::MutexLock lock(&mu_);
  v1::Problem like;
  like.set_math(math);
  auto q = Query("SELECT DISTINCT shape FROM measurements WHERE device_id = ?1 AND family = ?2 "
                 "AND dtype = ?3 AND status = ?4 AND math = ?5 ORDER BY shape",
                 device_id, v1::Family_Name(family), v1::DType_Name(dtype), kOk, MathText(like));
  if (!q.ok()) return q.status();
  std::vector<std::vector<int64_t>> out;
  for (size_t r = 0; r < q->size(); ++r) {
    std::vector<int64_t>& shape = out.emplace_back();
    const std::string& text = q->Text(r, 0);
    for (absl::string_view d : absl::StrSplit(text, 'x')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(d, &v)) return absl::DataLossError(absl::StrCat("bad shape ", text));
      shape.push_back(v);
    }
  }
  return out;
}

absl::StatusOr<int64_t> Store::InsertBinary(const KernelBinary& b) {
  const int64_t digest = Digest(b);
  auto find = Query("SELECT id FROM binaries WHERE digest = ?1 AND source = ?2 AND entry = ?3 "
                    "AND cubin = ?4 AND ptx = ?5 AND log = ?6 LIMIT 1",
                    digest, b.source, b.entry, Blob{b.cubin}, b.ptx, b.log);
  if (!find.ok()) return find.status();
  if (!find->empty()) return find->Int(0, 0);
  auto insert = Query("INSERT INTO binaries (digest, source, entry, cubin, ptx, log) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                      digest, b.source, b.entry, Blob{b.cubin}, b.ptx, b.log);
  if (!insert.ok()) return insert.status();
  if (insert->empty()) return absl::InternalError("binary insert returned no id");
  return insert->Int(0, 0);
}

absl::StatusOr<std::optional<CompiledRow>> Store::LookupCompiled(const CompileKey& k) {
  absl::MutexLock lock(&mu_);
  auto q = Query(
      "SELECT c.ok, c.message, c.registers, c.local_bytes, c.compile_ms, "
      "b.source, b.entry, b.cubin, b.ptx, b.log "
      "FROM compiled c LEFT JOIN binaries b ON b.id = c.binary_id "
      "WHERE c.digest = ?1 AND c.source = ?2 AND c.name_expression = ?3 AND c.options = ?4 "
      "AND c.arch = ?5 AND c.nvrtc_version = ?6 LIMIT 1",
      Digest(k), k.source, k.name_expression, k.options, k.arch, k.nvrtc_version);
  if (!q.ok()) return q.status();
  if (q->empty()) return std::optional<CompiledRow>();
  CompiledRow r;
  r.ok = q->Int(0, 0) != 0;
  r.message = q->Text(0, 1);
  r.registers = static_cast<int>(q->Int(0, 2));
  r.local_bytes = static_cast<int>(q->Int(0, 3));
  r.compile_ms = q->Double(0, 4);
  r.binary = {q->Text(0, 5), q->Text(0, 6), q->Text(0, 7), q->Text(0, 8), q->Text(0, 9)};
  return std::optional<CompiledRow>(std::move(r));
}

absl::StatusOr<bool> Store::HasCompiled(const CompileKey& k) {
  absl::MutexLock lock(&mu_);
  auto q = Query(
      "SELECT 1 FROM compiled WHERE digest = ?1 AND source = ?2 AND name_expression = ?3 "
      "AND options = ?4 AND arch = ?5 AND nvrtc_version = ?6 LIMIT 1",
      Digest(k), k.source, k.name_expression, k.options, k.arch, k.nvrtc_version);
  if (!q.ok()) return q.status();
  return !q->empty();
}

absl::Status Store::AddCompiled(const CompileKey& k, const CompiledRow& r) {
  absl::MutexLock lock(&mu_);
  return InTxn(false, [&]() -> absl::Status {
    const int64_t digest = Digest(k);
    auto find = Query("SELECT id FROM compiled WHERE digest = ?1 AND source = ?2 AND "
                      "name_expression = ?3 AND options = ?4 AND arch = ?5 AND nvrtc_version = ?6 "
                      "LIMIT 1",
                      digest, k.source, k.name_expression, k.options, k.arch, k.nvrtc_version);
    if (!find.ok()) return find.status();
    if (!find->empty()) return absl::OkStatus();  // cached already (idempotent)
    std::optional<int64_t> binary_id;
    if (r.ok) {
      auto id = InsertBinary(r.binary);
      if (!id.ok()) return id.status();
      binary_id = *id;
    }
    return Query("INSERT INTO compiled (digest, source, name_expression, options, arch, "
                 "nvrtc_version, ok, message, binary_id, registers, local_bytes, compile_ms, "
                 "created_unix) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                 digest, k.source, k.name_expression, k.options, k.arch, k.nvrtc_version, r.ok,
                 r.message, binary_id, r.registers, r.local_bytes, r.compile_ms, NowUnix())
        .status();
  });
}

absl::StatusOr<int> Store::AddCrash(int64_t device_id, v1::Family family, std::string_view config,
                                    std::string_view what) {
  absl::MutexLock lock(&mu_);
  TUNED_RETURN_IF_ERROR(InTxn(false, [&]() -> absl::Status {
    return Query("INSERT INTO crashes (device_id, family, config, count, last) "
                 "VALUES (?1, ?2, ?3, 1, ?4) ON CONFLICT (device_id, family, config) "
                 "DO UPDATE SET count = crashes.count + 1, last = excluded.last",
                 device_id, v1::Family_Name(family), config, what)
        .status();
  }));
  return CrashCountLocked(device_id, family, config);
}

absl::StatusOr<int> Store::CrashCount(int64_t device_id, v1::Family family,
                                      std::string_view config) {
  absl::MutexLock lock(&mu_);
  return CrashCountLocked(device_id, family, config);
}

absl::StatusOr<int> Store::CrashCountLocked(int64_t device_id, v1::Family family,
                                            std::string_view config) {
  auto q = Query("SELECT count FROM crashes WHERE device_id = ?1 AND family = ?2 AND config = ?3",
                 device_id, v1::Family_Name(family), config);
  if (!q.ok()) return q.status();
  return q->empty() ? 0 : static_cast<int>(q->Int(0, 0));
}

absl::Status Store::AddJobTime(int64_t id, const JobTime& t) {
  absl::MutexLock lock(&mu_);
  return Query(
             "UPDATE jobs SET compile_seconds = compile_seconds + ?2, "
             "measure_seconds = measure_seconds + ?3, wait_seconds = wait_seconds + ?4, "
             "worker_restarts = worker_restarts + ?5, cached = cached + ?6 WHERE id = ?1",
             id, t.compile_seconds, t.measure_seconds, t.wait_seconds, t.worker_restarts, t.cached)
      .status();
}

absl::Status Store::UpdateFinalist(int64_t job_id, std::string_view config,
                                   const std::function<absl::StatusOr<Rows>()>& update) {
  absl::Status s;
  {
    absl::MutexLock lock(&mu_);
    s = InTxn(false, [&]() -> absl::Status {
      auto updated = update();
      if (!updated.ok()) return updated.status();
      if (updated->affected() == 0) {
        return absl::NotFoundError(
            absl::StrCat("job ", job_id, " has no OK measurement of ", std::string(config)));
      }
      return Query("{bump}").status();
    });
  }
  InvalidateBest();
  return s;
}

namespace {
/// The UPDATE of a finalist's judging columns (?1 job, ?2 config, then ?3..?9).
constexpr std::string_view kSetSpeedupSql =
    "UPDATE measurements SET speedup = ?3, speedup_ci_low = ?4, speedup_ci_high = ?5, "
    "speedup_pairs = ?6, speedup_note = ?7, sm_clock_mhz = ?8, clock_low = ?9 "
    "WHERE job_id = ?1 AND config = ?2 AND status = 'MEASUREMENT_OK'";
}  // namespace

absl::Status Store::SetSpeedup(int64_t job_id, std::string_view config, const StoredSpeedup& sp) {
  const bool computed = sp.pairs > 0;
  return UpdateFinalist(job_id, config, [&] {
    return Query(kSetSpeedupSql, job_id, config, computed ? Value(sp.speedup) : Value(nullptr),
                 computed ? Value(sp.ci_low) : Value(nullptr),
                 computed ? Value(sp.ci_high) : Value(nullptr), sp.pairs, sp.note, sp.sm_clock_mhz,
                 sp.clock_low);
  });
}

absl::Status Store::SetJudged(int64_t job_id, std::string_view config, const Retimed& r,
                              const StoredSpeedup& sp) {
  const bool computed = sp.pairs > 0;
  return UpdateFinalist(job_id, config, [&]() -> absl::StatusOr<Rows> {
    auto timed = Query("UPDATE measurements SET median_ms = ?3, metric = ?4, message = ?5, "
                       "baseline_ms = COALESCE(?6, baseline_ms) "
                       "WHERE job_id = ?1 AND config = ?2 AND status = 'MEASUREMENT_OK'",
                       job_id, config, r.median_ms, r.metric, r.note,
                       r.baseline_ms > 0 ? Value(r.baseline_ms) : Value(nullptr));
    if (!timed.ok() || timed->affected() == 0) return timed;
    return Query(kSetSpeedupSql, job_id, config, computed ? Value(sp.speedup) : Value(nullptr),
                 computed ? Value(sp.ci_low) : Value(nullptr),
                 computed ? Value(sp.ci_high) : Value(nullptr), sp.pairs, sp.note, sp.sm_clock_mhz,
                 sp.clock_low);
  });
}

absl::StatusOr<KernelBinary> Store::MeasurementBinary(int64_t job_id, std::string_view config) {
  absl::MutexLock lock(&mu_);
  auto q = Query("SELECT b.source, b.entry, b.cubin, b.ptx, b.log FROM measurements m "
                 "JOIN binaries b ON b.id = m.binary_id WHERE m.job_id = ?1 AND m.config = ?2",
                 job_id, config);
  if (!q.ok()) return q.status();
  if (q->empty()) {
    return absl::NotFoundError(
        absl::StrCat("job ", job_id, " has no stored binary of ", std::string(config)));
  }
  return KernelBinary{q->Text(0, 0), q->Text(0, 1), q->Text(0, 2), q->Text(0, 3), q->Text(0, 4)};
}

}  // namespace tuned
