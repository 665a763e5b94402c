// The store's record of a finalist's judging at its job's end (store.h,
// core/serving.h): its re-timed time and its speedup interval.
#include "db/store.h"

#include <functional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "db/store_internal.h"

namespace tuned {

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
    if (s.ok()) BestChanged(job_id, /*bumped=*/true);
  }
  if (!s.ok()) InvalidateBest();
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

}  // namespace tuned
