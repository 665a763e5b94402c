// The one store: SQLite, schema in db/schema.sql (PRAGMA user_version).
// Knows nothing of CUDA or of families: configs are stored by canonical name
// plus their parameters as "BM=128,BN=64,..." text. Thread-safe (one
// connection behind a mutex); every write is one transaction.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "tuned/v1/tuner.pb.h"

struct sqlite3;

namespace tuned {

/// A compiled kernel as stored with its measurement.
struct KernelBinary {
  std::string source;  // CUDA C++ source given to NVRTC
  std::string entry;   // lowered (mangled) name
  std::string cubin;   // bytes; empty in compile-only mode if not kept
  std::string ptx;
  std::string log;     // NVRTC log
};

/// What identifies a compiled kernel exactly: NVRTC's whole input.
struct CompileKey {
  std::string source;
  std::string name_expression;
  std::string options;  // NVRTC options besides the architecture, joined with '\n'
  std::string arch;     // "sm_90"
  std::string nvrtc_version;
};

/// NVRTC's outcome for a CompileKey, as cached.
struct CompiledRow {
  bool ok = false;      // false: compile error, the log in `message`
  std::string message;  // the log
  KernelBinary binary;  // when ok
  int registers = 0;
  int local_bytes = 0;  // spill bytes per thread
  double compile_ms = 0;
};

/// Time a job spent since its last report, added to its totals (seconds).
struct JobTime {
  double compile_seconds = 0;
  double measure_seconds = 0;
  double wait_seconds = 0;
  int worker_restarts = 0;
  int cached = 0;
};

/// The best measurement of a problem, with its binary and the job's baseline.
struct BestRow {
  v1::Measurement measurement;
  KernelBinary binary;
  double baseline_ms = 0;
  std::string baseline_name;
};

/// Who submits a job and the caps on what that client may have pending.
struct ClientQuota {
  std::string client;        // stored with the job (jobs.client)
  int max_jobs = 0;          // queued + running jobs of the client; 0: no cap
  int64_t max_configs = 0;   // configs of those jobs not yet measured; 0: no cap
};

class Store {
 public:
  /// Schema version this build writes (db/schema.sql's PRAGMA user_version).
  static constexpr int kSchemaVersion = 2;

  /// Opens or creates the database at `path` (creating parent directories),
  /// enables WAL and a busy timeout, and applies the schema (an older one is
  /// migrated, db/migrations/). Fails with FAILED_PRECONDITION if the file's
  /// schema version is newer than this build's.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();

  /// Id of the device row (name, compute capability, driver, NVRTC), inserted if new.
  absl::StatusOr<int64_t> UpsertDevice(const v1::Device& device);

  /// Inserts a queued job of `quota.client`; returns its id. `total` =
  /// configs after pruning. RESOURCE_EXHAUSTED (with the numbers) if the
  /// client's queued and running jobs on any device would exceed
  /// quota.max_jobs, or their configs not yet measured quota.max_configs;
  /// checked and inserted in one transaction.
  absl::StatusOr<int64_t> CreateJob(int64_t device_id, const v1::Problem& problem, int32_t total,
                                    int32_t pruned, const ClientQuota& quota = {});
  /// Number of the device's jobs in `state`.
  absl::StatusOr<int64_t> CountJobs(int64_t device_id, v1::JobState state);
  /// The job with done/failed counted from its measurements and its best OK
  /// measurement (lowest median_ms). NOT_FOUND for an unknown id.
  absl::StatusOr<v1::Job> GetJob(int64_t id);
  /// Newest first, at most `limit` (limit <= 0: 50).
  absl::StatusOr<std::vector<v1::Job>> ListJobs(int limit);
  /// Sets the state (and started/finished time where it applies) and error text.
  absl::Status SetJobState(int64_t id, v1::JobState state, std::string_view error = "");
  /// Records the baseline (cuBLAS or copy) timed in the job.
  absl::Status SetJobBaseline(int64_t id, double ms, double metric, std::string_view name);
  /// Oldest queued job of the device, or nullopt.
  absl::StatusOr<std::optional<int64_t>> NextQueuedJob(int64_t device_id);
  /// Puts every RUNNING job back to QUEUED (after a daemon restart); returns their ids.
  absl::StatusOr<std::vector<int64_t>> RequeueRunningJobs();

  /// Stores one measurement of a job (its config's name and params in
  /// `m.config`) and, if given, its binary, in one transaction. Idempotent:
  /// a second call for the same (job, config name) changes nothing.
  absl::Status AddMeasurement(int64_t job_id, const v1::Measurement& m,
                              const KernelBinary* binary);
  /// Names of the configs already measured in the job (any status).
  absl::StatusOr<std::set<std::string>> MeasuredConfigs(int64_t job_id);
  /// Measurements of the problem on the device over all jobs, OK ones first by
  /// median_ms ascending, then the failures; at most `top` (0: all).
  absl::StatusOr<std::vector<v1::Measurement>> ListMeasurements(int64_t device_id,
                                                                const v1::Problem& problem,
                                                                int top);
  /// Shapes of the family and dtype with at least one OK measurement on the device.
  absl::StatusOr<std::vector<std::vector<int64_t>>> TunedShapes(int64_t device_id,
                                                                v1::Family family,
                                                                v1::DType dtype);
  /// The fastest OK measurement of the problem on the device, with its binary
  /// and its job's baseline. NOT_FOUND if none. Served from memory after the
  /// first call, until a write that can change a best (an OK measurement, a
  /// baseline): look-ups never wait on the database or on the job runner.
  /// The row is shared and immutable (no copy of its binary per look-up).
  absl::StatusOr<std::shared_ptr<const BestRow>> Best(int64_t device_id,
                                                      const v1::Problem& problem);

  /// The compile cache: the cached outcome for exactly this key, or nullopt.
  absl::StatusOr<std::optional<CompiledRow>> LookupCompiled(const CompileKey& key);
  /// Caches an outcome (binary deduplicated with the measurements' ones).
  /// Idempotent: a key cached already is left as it is.
  absl::Status AddCompiled(const CompileKey& key, const CompiledRow& row);

  /// Counts one more crash of the GPU worker on the config (`what`: status
  /// and message); returns the count. A config at 2 is quarantined.
  absl::StatusOr<int> AddCrash(int64_t device_id, v1::Family family, std::string_view config,
                               std::string_view what);
  absl::StatusOr<int> CrashCount(int64_t device_id, v1::Family family, std::string_view config);

  /// Replaces an OK measurement's time with its interleaved re-timing at the
  /// job's end (`note`, e.g. the first time, goes to its message).
  /// NOT_FOUND if the job has no OK measurement of that config.
  absl::Status SetRetimed(int64_t job_id, std::string_view config, double median_ms,
                          double metric, std::string_view note);

  /// Adds `time` to the job's totals (Job.compile_seconds etc.).
  absl::Status AddJobTime(int64_t id, const JobTime& time);
  /// Adds `configs` to the job's total (Job.total), for configs the job
  /// measures beyond its pruned space (the neighbours of its best).
  absl::Status AddJobConfigs(int64_t id, int32_t configs);

 private:
  /// Best() and AddMeasurement() without the cache: the SQL.
  absl::StatusOr<std::shared_ptr<const BestRow>> QueryBest(int64_t device_id,
                                                           const v1::Problem& problem);
  absl::Status InsertMeasurement(int64_t job_id, const v1::Measurement& m,
                                 const KernelBinary* binary);
  void InvalidateBest();
  absl::StatusOr<int> CrashCountLocked(int64_t device_id, v1::Family family,
                                       std::string_view config) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  explicit Store(sqlite3* db);
  sqlite3* db_;
  absl::Mutex mu_;
  // The Best() cache: problem -> row, and a generation bumped by every write
  // that may change a best (a row computed before the bump is not cached).
  absl::Mutex cache_mu_;
  std::map<std::string, std::shared_ptr<const BestRow>> best_cache_ ABSL_GUARDED_BY(cache_mu_);
  uint64_t best_generation_ ABSL_GUARDED_BY(cache_mu_) = 0;
};

}  // namespace tuned
