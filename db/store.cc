// The store: see store.h. All SQL is written once, in the dialect of
// db/database.h, and runs on both backends; values are always bound, never
// formatted into SQL. All methods hold mu_ for their whole duration.
// This file: the helpers of store_internal.h, transactions, opening, and
// device kinds; the fleet in store_fleet.cc, jobs in store_jobs.cc,
// measurements and bests in store_measurements.cc, the compile cache and
// crashes in store_cache.cc, the kernel sources that binaries and the cache
// share in store_sources.cc, the finalists' judging in store_judging.cc.
#include "db/store.h"

#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "db/store_internal.h"
#include "core/status.h"

namespace tuned {

namespace store_internal {

absl::Status ReadProblem(const std::string& key, const std::string& shape, v1::Problem* p) {
  auto parsed = ParseKey(key);
  absl::StatusOr<v1::Problem> problem = parsed.ok() ? ToProblem(*parsed) : parsed.status();
  if (!problem.ok()) {
    return absl::DataLossError(absl::StrCat("stored problem: ", problem.status().message()));
  }
  *p = *std::move(problem);
  for (absl::string_view dim : absl::StrSplit(shape, 'x', absl::SkipEmpty())) {
    int64_t n;
    if (!absl::SimpleAtoi(dim, &n)) return absl::DataLossError(absl::StrCat("bad shape ", shape));
    p->add_shape(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ProblemId(Database& db, const v1::Problem& p) {
  const std::string key = KeyText(p), shape = ShapeText(p);
  TUNED_RETURN_IF_ERROR(
      QueryOn(db, "INSERT INTO problems (key, shape) VALUES (?1, ?2) ON CONFLICT DO NOTHING", key, shape)
          .status());
  auto q = QueryOn(db, "SELECT id FROM problems WHERE key = ?1 AND shape = ?2", key, shape);
  if (!q.ok()) return q.status();
  if (q->empty()) return absl::InternalError(absl::StrCat("problem ", key, " ", shape, " not stored"));
  return q->Int(0, 0);
}

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

int64_t SourceDigest(std::string_view text) { return Digest({text}); }

int64_t Digest(const CompileKey& k) {
  return Digest({k.source, k.name_expression, k.options, k.arch, k.nvrtc_version});
}

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

}  // namespace store_internal

absl::Status Store::InTxn(bool serialize, const std::function<absl::Status()>& body) {
  TUNED_RETURN_IF_ERROR(db_->Begin(serialize));
  absl::Status s = body();
  if (s.ok()) s = db_->Commit();
  if (!s.ok()) db_->Rollback();
  return s;
}

Store::Store(std::unique_ptr<Database> db, std::unique_ptr<Database> reads)
    : db_(std::move(db)), reads_(std::move(reads)) {}

Store::~Store() = default;

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& url) {
  auto db = Database::Open(url);
  if (!db.ok()) return db.status();
  auto store = std::make_unique<Store>(*std::move(db));
  TUNED_RETURN_IF_ERROR(store->FillSourceDigests());
  // The reads' connection, to the schema just applied: SQLite's WAL lets it
  // read while the first writes, as PostgreSQL does. A database in memory
  // is the first connection's alone.
  if (url != ":memory:" && !absl::StrContains(url, "mode=memory")) {
    auto reads = Database::Open(url);
    if (!reads.ok()) return reads.status();
    store->reads_ = *std::move(reads);
  }
  return store;
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

}  // namespace tuned
