// The store's measurements (store.h): adding and listing them, the binaries
// stored with them, tuned shapes, and the best of a problem with its
// in-memory cache.
#include "db/store.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "db/store_internal.h"
#include "core/status.h"

namespace tuned {

using store_internal::NowUnix;
using store_internal::kNoLimit;
using store_internal::ShapeText;
using store_internal::KeyText;
using store_internal::ProblemText;
using store_internal::ParamsText;
using store_internal::Digest;
using store_internal::kOk;
using store_internal::kMeasurementCols;
using store_internal::ReadMeasurement;
using store_internal::ReadProblem;
using store_internal::QueryOn;

absl::StatusOr<bool> Store::AddMeasurement(int64_t job_id, const v1::Measurement& m,
                                   const KernelBinary* binary, int64_t daemon_id,
                                   double baseline_ms) {
  if (m.config().name().empty()) {
    return absl::InvalidArgumentError("measurement has no config name");
  }
  const bool ok = m.status() == v1::MEASUREMENT_OK;
  bool inserted = false;
  bool bumped = false;
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
            "INSERT INTO measurements (job_id, device_id, problem_id, config, params, "
            "status, median_ms, metric, metric_unit, error, message, repetitions, registers, "
            "binary_id, created_unix, daemon_id, baseline_ms, sm_clock_mhz, clock_low) "
            "SELECT id, device_id, problem_id, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
            "?12, ?13, ?14, ?15, ?16, ?17 FROM jobs WHERE id = ?1 ON CONFLICT DO NOTHING",
            job_id, m.config().name(), ParamsText(m.config()), v1::MeasurementStatus_Name(m.status()),
            m.median_ms(), m.metric(), m.metric_unit(), m.error(), m.message(), m.repetitions(),
            m.registers(), binary_id,
            NowUnix(), daemon_id > 0 ? std::optional<int64_t>(daemon_id) : std::nullopt,
            baseline_ms > 0 ? Value(baseline_ms) : Value(nullptr), m.sm_clock_mhz(), m.clock_low());
        if (!insert.ok()) return insert.status();
        inserted = insert->affected() > 0;
        if (ok) {
          TUNED_RETURN_IF_ERROR(Query("{bump}").status());
          bumped = true;
        }
      }
      return Query("UPDATE work_items SET done = 1 WHERE job_id = ?1 AND config = ?2", job_id,
                   m.config().name())
          .status();
    });
    // Only a new OK measurement can change a best: its row is read again.
    if (s.ok() && bumped) BestChanged(job_id, /*bumped=*/true);
  }
  if (!s.ok()) {
    if (ok) InvalidateBest();
    return s;
  }
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

absl::StatusOr<std::vector<v1::Measurement>> Store::JobBest(int64_t job_id, int top) {
  absl::MutexLock lock(&mu_);
  auto q = Query("SELECT " TUNED_MEASUREMENT_COLS
                 " FROM measurements m LEFT JOIN daemons d ON d.id = m.daemon_id "
                 "WHERE m.job_id = ?1 AND m.status = 'MEASUREMENT_OK' "
                 "ORDER BY m.median_ms, m.id LIMIT ?2",
                 job_id, top <= 0 ? kNoLimit : top);
  if (!q.ok()) return q.status();
  std::vector<v1::Measurement> out;
  for (size_t r = 0; r < q->size(); ++r) {
    TUNED_RETURN_IF_ERROR(ReadMeasurement(*q, r, &out.emplace_back()));
  }
  return out;
}

absl::StatusOr<std::vector<v1::Measurement>> Store::ListMeasurements(int64_t device_id,
                                                                     const v1::Problem& problem,
                                                                     int top) {
  // OK by time, then compile-only results, then failures; ties by insertion.
  auto q = Read([&](Database& db) {
    return QueryOn(db, "SELECT " TUNED_MEASUREMENT_COLS
                 " FROM measurements m JOIN problems p ON p.id = m.problem_id "
                 "LEFT JOIN daemons d ON d.id = m.daemon_id "
                 "WHERE m.device_id = ?1 AND p.key = ?2 AND p.shape = ?3 "
                 "ORDER BY CASE m.status WHEN 'MEASUREMENT_OK' THEN 0 "
                 "  WHEN 'MEASUREMENT_COMPILED' THEN 1 ELSE 2 END, m.median_ms, m.id "
                 "LIMIT ?4",
                 device_id, KeyText(problem), ShapeText(problem), top <= 0 ? kNoLimit : top);
  });
  if (!q.ok()) return q.status();
  std::vector<v1::Measurement> out;
  for (size_t r = 0; r < q->size(); ++r) {
    TUNED_RETURN_IF_ERROR(ReadMeasurement(*q, r, &out.emplace_back()));
  }
  return out;
}

namespace {

/// Best()'s SQL on `db`: the row, not yet held.
absl::StatusOr<BestRow> ReadBest(Database& db, int64_t device_id, const v1::Problem& problem) {
  auto q =
      QueryOn(db, "SELECT " TUNED_MEASUREMENT_COLS
            ", b.id, s.text, b.entry, b.cubin, b.ptx, b.log, "
            "COALESCE(m.baseline_ms, j.baseline_ms), j.baseline_name, m.speedup, m.speedup_ci_low, "
            "m.speedup_ci_high, m.speedup_pairs, m.speedup_note, j.baseline_error "
            "FROM measurements m "
            "JOIN problems p ON p.id = m.problem_id "
            "JOIN jobs j ON j.id = m.job_id LEFT JOIN binaries b ON b.id = m.binary_id "
            "LEFT JOIN sources s ON s.id = b.source_id LEFT JOIN daemons d ON d.id = m.daemon_id "
            "WHERE m.device_id = ?1 AND p.key = ?2 AND p.shape = ?3 AND m.status = ?4 "
            TUNED_BEST_ORDER " LIMIT 1",
            device_id, KeyText(problem), ShapeText(problem), kOk);
  if (!q.ok()) return q.status();
  if (q->empty()) {
    // No kernel passed verification: a sweep that ended DONE with its
    // baseline timed serves the baseline (server/jobs/jobs.cc, Finish). A
    // compile-only job times none; a running or failed one is no answer.
    auto base = QueryOn(db, "SELECT j.id, j.baseline_ms, j.baseline_name, j.baseline_error "
                      "FROM jobs j JOIN problems p ON p.id = j.problem_id "
                      "WHERE j.device_id = ?1 AND j.state = ?2 AND p.key = ?3 AND p.shape = ?4 "
                      "AND j.baseline_ms > 0 ORDER BY j.id DESC LIMIT 1",
                      device_id, v1::JobState_Name(v1::JOB_DONE), KeyText(problem), ShapeText(problem));
    if (!base.ok()) return base.status();
    if (base->empty()) {
      return absl::NotFoundError(
          absl::StrCat("no tuned kernel for ", ProblemText(problem), " on this device"));
    }
    BestRow only;
    only.baseline_only = true;
    only.baseline_job = base->Int(0, 0);
    only.baseline_ms = base->Double(0, 1);
    only.baseline_name = base->Text(0, 2);
    only.baseline_error = base->Double(0, 3);
    return only;
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
  return best;
}

/// The key of a problem's held best: its device kind and the problem
/// (key and shape) that ReadBest matches.
std::string BestKey(int64_t device_id, const v1::Problem& p) {
  return absl::StrCat(device_id, " ", ProblemText(p));
}

/// `row` as shared, with `*token` (new) the token its `held` watches.
std::shared_ptr<const BestRow> Share(BestRow row, std::shared_ptr<const void>* token) {
  *token = std::make_shared<char>(0);
  row.held = *token;
  return std::make_shared<const BestRow>(std::move(row));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const BestRow>> Store::Best(int64_t device_id,
                                                           const v1::Problem& problem) {
  const std::string key = BestKey(device_id, problem);
  uint64_t generation;
  {
    absl::ReaderMutexLock lock(&cache_mu_);
    if (auto it = best_cache_.find(key); it != best_cache_.end()) return it->second.row;
    generation = best_generation_;
  }
  auto read = Read([&](Database& db) { return ReadBest(db, device_id, problem); });
  absl::MutexLock lock(&cache_mu_);
  if (read.ok()) {
    std::shared_ptr<const void> token;
    std::shared_ptr<const BestRow> row = Share(*std::move(read), &token);
    // Not kept if a write moved the generation meanwhile: this row may be
    // older than that write (its token then ends here, and with it current()).
    if (generation != best_generation_) return row;
    auto [it, added] = best_cache_.try_emplace(key, HeldBest{device_id, problem, row, token});
    return it->second.row;  // another look-up's, if it came first
  }
  if (read.status().code() == absl::StatusCode::kUnavailable) {
    if (auto it = stale_best_.find(key); it != stale_best_.end()) return it->second;
  }
  return read.status();
}

void Store::BestChanged(int64_t job_id, bool bumped) {
  if (bumped) ++own_bumps_;
  auto q = Query("SELECT j.device_id, p.key, p.shape FROM jobs j "
                 "JOIN problems p ON p.id = j.problem_id WHERE j.id = ?1",
                 job_id);
  v1::Problem problem;
  if (!q.ok() || q->empty() || !ReadProblem(q->Text(0, 1), q->Text(0, 2), &problem).ok()) {
    InvalidateBest();
    return;
  }
  // On db_ under mu_: no other write of this store comes between.
  ReloadBest(BestKey(q->Int(0, 0), problem),
             [&](int64_t device_id, const v1::Problem& p) { return ReadBest(*db_, device_id, p); });
}

void Store::ReloadBest(const std::optional<std::string>& key, const ReadBestFn& read) {
  struct Held {
    std::string key;
    int64_t device_id;
    v1::Problem problem;
  };
  std::vector<Held> held;
  uint64_t generation;
  {
    absl::MutexLock lock(&cache_mu_);
    generation = ++best_generation_;
    for (const auto& [k, h] : best_cache_) {
      if (!key || k == *key) held.push_back({k, h.device_id, h.problem});
    }
  }
  for (const Held& h : held) {
    auto row = read(h.device_id, h.problem);  // outside cache_mu_: look-ups go on
    absl::MutexLock lock(&cache_mu_);
    auto it = best_cache_.find(h.key);
    if (it == best_cache_.end()) continue;  // dropped meanwhile (InvalidateBest)
    if (row.ok() && generation == best_generation_) {
      it->second.row = Share(*std::move(row), &it->second.token);  // the old token ends
      continue;
    }
    // Not read, or read across another write: the next look-up reads it
    // (and serves the dropped row while the database is down).
    stale_best_[h.key] = std::move(it->second.row);
    best_cache_.erase(it);
  }
}

void Store::InvalidateBest() {
  absl::MutexLock lock(&cache_mu_);
  for (auto& [key, held] : best_cache_) stale_best_[key] = std::move(held.row);
  best_cache_.clear();
  ++best_generation_;
}

absl::Status Store::Refresh() {
  auto other = ChangedElsewhere();
  if (!other.ok()) return other.status();
  if (*other) {
    ++spec_generation_;  // a registration elsewhere bumps the counter too
    // Each row read on the reads' connection, one look-up's wait at most.
    ReloadBest(std::nullopt, [&](int64_t device_id, const v1::Problem& p) {
      return Read([&](Database& db) { return ReadBest(db, device_id, p); });
    });
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Store::ChangedElsewhere() {
  absl::MutexLock lock(&mu_);
  auto q = Query("{generation}");
  if (!q.ok()) return q.status();
  if (q->empty()) return absl::DataLossError("the change counter has no row");
  const int64_t now = q->Int(0, 0);
  // Moved by more than this store's own bumps: another daemon changed a best.
  const bool other = db_generation_ < 0 || now - db_generation_ != own_bumps_;
  db_generation_ = now;
  own_bumps_ = 0;
  return other;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> Store::TunedShapes(int64_t device_id,
                                                                     const ProblemKey& key) {
  const std::string key_text = FormatKey(key);
  auto q = Read([&](Database& db) {
    return QueryOn(db,
                   "SELECT DISTINCT p.shape FROM measurements m JOIN problems p ON p.id = m.problem_id "
                   "WHERE m.device_id = ?1 AND p.key = ?2 AND m.status = ?3 ORDER BY p.shape",
                   device_id, key_text, kOk);
  });
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
  auto source_id = InsertSource(b.source);
  if (!source_id.ok()) return source_id.status();
  const int64_t digest = Digest(b);
  auto find = Query("SELECT id FROM binaries WHERE digest = ?1 AND source_id = ?2 AND entry = ?3 "
                    "AND cubin = ?4 AND ptx = ?5 AND log = ?6 LIMIT 1",
                    digest, *source_id, b.entry, Blob{b.cubin}, b.ptx, b.log);
  if (!find.ok()) return find.status();
  if (!find->empty()) return find->Int(0, 0);
  auto insert = Query("INSERT INTO binaries (digest, source_id, entry, cubin, ptx, log) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                      digest, *source_id, b.entry, Blob{b.cubin}, b.ptx, b.log);
  if (!insert.ok()) return insert.status();
  if (insert->empty()) return absl::InternalError("binary insert returned no id");
  return insert->Int(0, 0);
}

absl::StatusOr<KernelBinary> Store::MeasurementBinary(int64_t job_id, std::string_view config) {
  auto q = Read([&](Database& db) {
    return QueryOn(db,
                   "SELECT s.text, b.entry, b.cubin, b.ptx, b.log FROM measurements m "
                   "JOIN binaries b ON b.id = m.binary_id JOIN sources s ON s.id = b.source_id "
                   "WHERE m.job_id = ?1 AND m.config = ?2",
                   job_id, config);
  });
  if (!q.ok()) return q.status();
  if (q->empty()) {
    return absl::NotFoundError(
        absl::StrCat("job ", job_id, " has no stored binary of ", std::string(config)));
  }
  return KernelBinary{q->Text(0, 0), q->Text(0, 1), q->Text(0, 2), q->Text(0, 3), q->Text(0, 4)};
}

}  // namespace tuned
