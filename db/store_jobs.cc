// The store's jobs (store.h): creating (with the client's quota), loading,
// listing, their baseline, error bound and time.
#include "db/store.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "db/store_internal.h"
#include "core/status.h"

namespace tuned {

using store_internal::NowUnix;
using store_internal::ProblemId;
using store_internal::ReadProblem;
using store_internal::kOk;
using store_internal::ReadMeasurement;

absl::StatusOr<v1::Job> Store::LoadJob(int64_t id) {
  auto q = Query(
      "SELECT p.key, p.shape, j.state, j.total, j.pruned, j.error, j.baseline_ms, "
      "j.baseline_metric, j.baseline_name, j.created_unix, j.started_unix, j.finished_unix, "
      "j.compile_seconds, j.measure_seconds, j.wait_seconds, j.worker_restarts, j.cached, j.client, "
      "j.round, j.strategy, j.budget_seconds, j.budget_configs, j.baseline_error, j.error_bound "
      "FROM jobs j JOIN problems p ON p.id = j.problem_id WHERE j.id = ?1",
      id);
  if (!q.ok()) return q.status();
  if (q->empty()) return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  v1::Job job;
  job.set_id(id);
  TUNED_RETURN_IF_ERROR(ReadProblem(q->Text(0, 0), q->Text(0, 1), job.mutable_problem()));
  v1::JobState state;
  if (!v1::JobState_Parse(q->Text(0, 2), &state)) {
    return absl::DataLossError(absl::StrCat("job ", id, " has unknown state '", q->Text(0, 2), "'"));
  }
  job.set_state(state);
  job.set_total(static_cast<int32_t>(q->Int(0, 3)));
  job.set_pruned(static_cast<int32_t>(q->Int(0, 4)));
  job.set_error(q->Text(0, 5));
  job.set_baseline_ms(q->Double(0, 6));
  job.set_baseline_metric(q->Double(0, 7));
  job.set_baseline_name(q->Text(0, 8));
  job.set_created_unix(q->Int(0, 9));
  job.set_started_unix(q->Int(0, 10));
  job.set_finished_unix(q->Int(0, 11));
  job.set_compile_seconds(q->Double(0, 12));
  job.set_measure_seconds(q->Double(0, 13));
  job.set_wait_seconds(q->Double(0, 14));
  job.set_worker_restarts(static_cast<int32_t>(q->Int(0, 15)));
  job.set_cached(static_cast<int32_t>(q->Int(0, 16)));
  job.set_client(q->Text(0, 17));
  job.set_round(static_cast<int32_t>(q->Int(0, 18)));
  job.set_strategy(q->Text(0, 19));
  job.set_budget_seconds(q->Double(0, 20));
  job.set_budget_configs(q->Int(0, 21));
  job.set_baseline_error(q->Double(0, 22));
  job.set_error_bound(q->Double(0, 23));

  auto counts = Query("SELECT COALESCE(SUM(CASE WHEN status IN ('MEASUREMENT_OK', "
                      "'MEASUREMENT_COMPILED') THEN 1 ELSE 0 END), 0), COUNT(*) "
                      "FROM measurements WHERE job_id = ?1",
                      id);
  if (!counts.ok()) return counts.status();
  job.set_done(static_cast<int32_t>(counts->Int(0, 0)));
  job.set_failed(static_cast<int32_t>(counts->Int(0, 1) - counts->Int(0, 0)));

  auto best = Query("SELECT " TUNED_MEASUREMENT_COLS
                    " FROM measurements m LEFT JOIN daemons d ON d.id = m.daemon_id "
                    "WHERE m.job_id = ?1 AND m.status = ?2 " TUNED_BEST_ORDER " LIMIT 1",
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
  if (!problem.family_name().empty() && problem.spec_hash().empty()) {
    // Its key would name no version (the caller resolves the newest).
    return absl::InvalidArgumentError(absl::StrCat(
        "a job's problem of kernel spec '", problem.family_name(), "' needs its spec_hash"));
  }
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
    auto problem_id = ProblemId(*db_, problem);
    if (!problem_id.ok()) return problem_id.status();
    auto insert = Query(
        "INSERT INTO jobs (device_id, problem_id, state, total, pruned, created_unix, client, "
        "strategy, budget_seconds, budget_configs) "
        "VALUES (?1, ?2, 'JOB_QUEUED', ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
        device_id, *problem_id, total, pruned, NowUnix(), quota.client, search.strategy,
        search.budget_seconds, search.budget_configs);
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
    if (s.ok()) BestChanged(id, /*bumped=*/true);
  }
  if (!s.ok()) InvalidateBest();
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

absl::Status Store::AddJobTime(int64_t id, const JobTime& t) {
  absl::MutexLock lock(&mu_);
  return Query(
             "UPDATE jobs SET compile_seconds = compile_seconds + ?2, "
             "measure_seconds = measure_seconds + ?3, wait_seconds = wait_seconds + ?4, "
             "worker_restarts = worker_restarts + ?5, cached = cached + ?6 WHERE id = ?1",
             id, t.compile_seconds, t.measure_seconds, t.wait_seconds, t.worker_restarts, t.cached)
      .status();
}

}  // namespace tuned
