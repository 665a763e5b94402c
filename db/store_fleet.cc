// The store's fleet (store.h): daemons, their heartbeats and leases, work
// items, claims and rounds, and a job's end.
#include "db/store.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/store_internal.h"
#include "core/status.h"

namespace tuned {

using store_internal::NowUnix;
using store_internal::ParamsText;
using store_internal::ParseParams;

absl::StatusOr<int64_t> Store::RegisterDaemon(int64_t device_id, const DaemonIdentity& who) {
  absl::MutexLock lock(&mu_);
  int64_t id = 0;
  TUNED_RETURN_IF_ERROR(InTxn(false, [&]() -> absl::Status {
    auto row = Query(
        "INSERT INTO daemons (host, gpu, gpu_uuid, device_id, pid, started_unix, "
        "heartbeat, lease_seconds, job_id, stopped, user_kernels, sandbox) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, {now}, ?7, 0, 0, ?8, ?9) "
        "ON CONFLICT (host, gpu, gpu_uuid) DO UPDATE SET device_id = excluded.device_id, "
        "pid = excluded.pid, started_unix = excluded.started_unix, "
        "heartbeat = excluded.heartbeat, lease_seconds = excluded.lease_seconds, "
        "job_id = 0, stopped = 0, user_kernels = excluded.user_kernels, "
        "sandbox = excluded.sandbox RETURNING id",
        who.host, who.gpu, who.gpu_uuid, device_id, who.pid, NowUnix(), who.lease_seconds,
        int64_t{who.user_kernels ? 1 : 0}, who.sandbox);
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
      "(SELECT COUNT(*) FROM work_items w WHERE w.daemon_id = d.id AND w.done = 0), "
      "d.user_kernels, d.sandbox "
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
    d.set_user_kernels(q->Int(r, 17) != 0);
    d.set_sandbox(q->Text(r, 18));
    if (all || d.live()) out.push_back(std::move(d));
  }
  return out;
}

absl::StatusOr<std::optional<Claim>> Store::ClaimWork(int64_t daemon_id, int64_t device_id,
                                                      int64_t prefer_job, int n, bool user_kernels) {
  absl::MutexLock lock(&mu_);
  std::optional<Claim> claim;
  // Another daemon may take the chosen job's last items between the two
  // statements: then the next job is tried.
  bool none = false;  // no job of the kind has a claimable item
  for (int attempt = 0; attempt < 3 && !claim && !none; ++attempt) {
    TUNED_RETURN_IF_ERROR(InTxn(false, [&]() -> absl::Status {
      auto job = Query("SELECT w.job_id FROM work_items w JOIN jobs j ON j.id = w.job_id "
                       "JOIN problems p ON p.id = j.problem_id "
                       "WHERE j.device_id = ?1 AND j.state IN ('JOB_QUEUED', 'JOB_RUNNING') "
                       "AND w.done = 0 AND (w.daemon_id IS NULL OR w.daemon_id = ?3 OR "
                       "w.lease_until < {now}) AND (?4 = 1 OR p.key NOT LIKE '%@%') "
                       "ORDER BY CASE WHEN w.job_id = ?2 THEN 0 ELSE 1 END, w.job_id LIMIT 1",
                       device_id, prefer_job, daemon_id, int64_t{user_kernels ? 1 : 0});
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

absl::StatusOr<std::vector<v1::Job>> Store::IdleJobs(int64_t device_id, bool user_kernels) {
  absl::MutexLock lock(&mu_);
  auto q = Query("SELECT j.id FROM jobs j JOIN problems p ON p.id = j.problem_id WHERE j.device_id = ?1 "
                 "AND j.state IN ('JOB_QUEUED', 'JOB_RUNNING') AND NOT EXISTS "
                 "(SELECT 1 FROM work_items w WHERE w.job_id = j.id AND w.done = 0) "
                 "AND (?2 = 1 OR p.key NOT LIKE '%@%') ORDER BY j.id",
                 device_id, int64_t{user_kernels ? 1 : 0});
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
  // A sweep that ends DONE with no config verified serves its baseline.
  if (changed && state == v1::JOB_DONE) BestChanged(id, /*bumped=*/false);
  return changed;
}

}  // namespace tuned
