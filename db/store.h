// The one store, over a Database (db/database.h): an SQLite file (the
// default) or a PostgreSQL server shared by a fleet of daemons, one per GPU.
// Schemas in db/sqlite/ and db/postgres/, versioned. Knows nothing of CUDA
// or of families: configs are stored by canonical name plus their
// parameters as "BM=128,BN=64,..." text, a problem as a row of `problems`
// (its key's canonical text, core/problem_key.h, and its shape) that jobs
// and measurements reference, and kernel specs as the messages that clients
// registered. Thread-safe (one connection behind
// a mutex); every write is one transaction. The reads that GetBest may make
// (a best not in memory, tuned shapes, measurements, specs) go through a
// second connection where the database has one to give (a file or a
// server), so that they never wait behind a write transaction.
//
// The fleet: a job's configs are work items (AddRound) that the daemons of
// the job's GPU kind claim in batches (ClaimWork) under a lease that each
// renews (Heartbeat); the items of a daemon that stops renewing go back to
// the pool when the lease runs out, and a (job, config) keeps one
// measurement however often it is measured. With one daemon (SQLite) this is
// the single-daemon queue: it claims everything itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
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
#include "core/problem_key.h"
#include "db/database.h"
#include "tuned/v1/tuner.pb.h"


namespace tuned {

/// A version of a kernel spec as stored (Store::AddSpec).
struct StoredSpec {
  v1::KernelSpec spec;
  std::string hash;          // its content hash (spec::SpecHash), lower-case hex
  std::string client;        // who registered it first
  int64_t created_unix = 0;  // when it was first registered (Unix seconds)
  int versions = 0;          // how many versions its name has
};

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

/// How a job searches and its budget (jobs.strategy, budget_seconds,
/// budget_configs; server/search/strategy.h). 0: no limit of that kind.
struct JobSearch {
  std::string strategy = "exhaustive";
  double budget_seconds = 0;
  int64_t budget_configs = 0;
};

/// The best measurement of a problem, with its binary and the job's baseline.
/// A finalist's judging at its job's end (core/serving.h): the speedup
/// over the baseline from paired rounds in a fresh worker process, with its
/// 95% interval, and the clock it ran at.
struct StoredSpeedup {
  double speedup = 0;  // baseline ms / kernel ms
  double ci_low = 0;
  double ci_high = 0;
  int pairs = 0;       // 0: no speedup computed
  std::string note;    // why none was computed ("" if one was, or never judged)
  int sm_clock_mhz = 0;    // the judging's SM clock (MHz; 0: unknown)
  bool clock_low = false;  // it sat under 90% of the maximum, re-timed once
};

/// The best measurement of a problem, with its binary, the job's baseline
/// and the measurement's judging (pairs 0 and note "" if never judged).
struct BestRow {
  v1::Measurement measurement;
  KernelBinary binary;
  double baseline_ms = 0;
  std::string baseline_name;
  StoredSpeedup speedup;
  /// The job's baseline error against the fp64 reference (Job.baseline_error).
  double baseline_error = 0;
  /// No kernel: no config of the problem passed verification, and
  /// `baseline_job` is its newest DONE job that timed the baseline (a
  /// sweep that the runner ended DONE so that the baseline is served,
  /// server/jobs/jobs.cc Finish). `measurement`, `binary` and `speedup` are
  /// empty; the baseline fields are that job's.
  bool baseline_only = false;
  int64_t baseline_job = 0;
  /// Live while the store serves this row from memory (Store::Best); expired
  /// once a write replaced it, and from the start for a row that the store
  /// read while a write was under way and did not keep. What is built from
  /// the row holds while current().
  std::weak_ptr<const void> held;
  bool current() const { return !held.expired(); }
};

/// Who submits a job and the caps on what that client may have pending.
struct ClientQuota {
  std::string client;        // stored with the job (jobs.client)
  int max_jobs = 0;          // queued + running jobs of the client; 0: no cap
  int64_t max_configs = 0;   // configs of those jobs not yet measured; 0: no cap
};

/// A daemon as the fleet knows it: one per GPU of a host.
struct DaemonIdentity {
  std::string host;
  int gpu = 0;            // CUDA ordinal on the host
  std::string gpu_uuid;   // "GPU-..." (nvidia-smi -L); compile-only: "compile-only"
  int64_t pid = 0;
  double lease_seconds = 30;  // its claims' lease; it renews them at a third of it
  bool user_kernels = false;  // started with --allow-user-kernels: runs kernel specs' code
  std::string sandbox = {};   // what confines its workers, e.g. "Landlock ABI 7"
};

/// One work item: a config of a job to measure, or, when `retime` (config
/// name ""), the job's end: its finalists re-timed on one GPU.
struct WorkItem {
  v1::KernelConfig config;
  int round = 0;
  bool retime = false;
};

/// What a heartbeat found (Store::Heartbeat).
struct HeartbeatResult {
  int64_t held = 0;         // work items the daemon holds
  bool job_active = false;  // its current job is still queued or running
};

/// Work items of one job claimed by one daemon (Store::ClaimWork).
struct Claim {
  int64_t job_id = 0;
  std::vector<WorkItem> items;
  int taken_over = 0;  // of them, items whose earlier claim's lease had run out
};

class Store {
 public:
  /// Schema version this build writes (both backends' schema files).
  static constexpr int kSchemaVersion = 11;

  /// Opens the database named by `url` (Database::Open: a path,
  /// sqlite:///path or postgresql://...), applies or migrates its schema,
  /// and fills in the digests of the kernel sources that migration 8 moved
  /// (FillSourceDigests); then opens the second connection of the reads
  /// (none for an SQLite database in memory). Errors: Database::Open's, the
  /// database's.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& url);
  /// `reads`: a second connection to the same database for the request
  /// path's reads (null: they share `db`).
  explicit Store(std::unique_ptr<Database> db, std::unique_ptr<Database> reads = nullptr);
  ~Store();

  /// The database's URL without its password, and "sqlite" or "postgresql".
  const std::string& name() const { return db_->name(); }
  std::string_view backend() const { return db_->backend(); }

  /// Id of the device kind (name, compute capability, SM count, driver,
  /// NVRTC), inserted if new.
  absl::StatusOr<int64_t> UpsertDevice(const v1::Device& device);

  // ---- the fleet: daemons, claims and leases ----

  /// Registers (or, after a restart, finds) the daemon of `who` on the
  /// device kind `device_id`, hands back the claims of its earlier run,
  /// and starts its heartbeat; returns its id.
  absl::StatusOr<int64_t> RegisterDaemon(int64_t device_id, const DaemonIdentity& who);
  /// Renews the daemon's heartbeat and the leases of its unfinished claims
  /// by its lease (seconds); records the job it works on (0: none).
  /// NOT_FOUND for an unknown daemon.
  absl::StatusOr<HeartbeatResult> Heartbeat(int64_t daemon_id, int64_t job_id);
  /// Gives the daemon's unfinished claims back to the pool at once; with
  /// `stopped`, marks it stopped (it leaves `tunectl daemons`).
  absl::Status ReleaseClaims(int64_t daemon_id, bool stopped);
  /// The daemons whose heartbeat is younger than their lease (live), with
  /// their kind, heartbeat age (s) and current job; with `all`, also the
  /// stopped and the silent ones.
  absl::StatusOr<std::vector<v1::Daemon>> ListDaemons(bool all = false);

  /// Claims up to `n` unclaimed work items (or items whose lease ran out,
  /// or the daemon's own unfinished ones) of one queued or running job of the device kind, for `daemon_id`,
  /// under its lease: of `prefer_job` if it has any (the job the daemon is
  /// prepared for), else of the oldest such job, which becomes RUNNING.
  /// nullopt when no job of the kind has claimable items.
  /// Without `user_kernels`, jobs of users' kernel specs (a problem key
  /// "<name>@<hash>") are left for a daemon that runs them.
  absl::StatusOr<std::optional<Claim>> ClaimWork(int64_t daemon_id, int64_t device_id,
                                                 int64_t prefer_job, int n, bool user_kernels = true);
  /// Queued or running jobs of the device kind with no unfinished item:
  /// each needs its next round (AddRound) or its end (FinishJob). Without
  /// `user_kernels`, not the jobs of users' kernel specs.
  absl::StatusOr<std::vector<v1::Job>> IdleJobs(int64_t device_id, bool user_kernels = true);
  /// A job's next round of work items: `configs` (names and params), or
  /// one re-timing item when `retime`. Only if the job is still at round
  /// `from_round` with every item finished (checked and written in one
  /// serialized transaction, so that one daemon of the fleet does it):
  /// returns false, changing nothing, otherwise. Configs the job measured
  /// already (a job of schema 2) are added as finished. The job's total
  /// becomes its number of config items.
  absl::StatusOr<bool> AddRound(int64_t job_id, int from_round,
                                const std::vector<v1::KernelConfig>& configs, bool retime = false);
  /// Ends a queued or running job in `state` (DONE, FAILED or CANCELLED)
  /// with `error`, finishing its items; false (nothing changed) if it had
  /// ended already. INVALID_ARGUMENT for a state that is no end.
  absl::StatusOr<bool> FinishJob(int64_t id, v1::JobState state, std::string_view error = "");

  // ---- jobs ----

  /// Inserts a queued job of `quota.client`; returns its id. `total` =
  /// configs after pruning. RESOURCE_EXHAUSTED (with the numbers) if the
  /// client's queued and running jobs on any device would exceed
  /// quota.max_jobs, or their configs not yet measured quota.max_configs;
  /// checked and inserted in one serialized transaction (fleet-wide).
  /// INVALID_ARGUMENT for a kernel spec's problem without its spec_hash
  /// (the caller resolves an empty one to a version first).
  absl::StatusOr<int64_t> CreateJob(int64_t device_id, const v1::Problem& problem, int32_t total,
                                    int32_t pruned, const ClientQuota& quota = {},
                                    const JobSearch& search = {});
  /// Marks the job's configs not yet measured done without measuring them
  /// (its budget ran out mid-round); the re-timing item stays. Returns how
  /// many.
  absl::StatusOr<int64_t> SkipRemaining(int64_t job_id);
  /// Number of the device kind's jobs in `state`.
  absl::StatusOr<int64_t> CountJobs(int64_t device_id, v1::JobState state);
  /// The job with done/failed counted from its measurements, its best OK
  /// measurement (lowest median_ms) and the daemons that measured for it.
  /// NOT_FOUND for an unknown id.
  absl::StatusOr<v1::Job> GetJob(int64_t id);
  /// Newest first, at most `limit` (limit <= 0: 50).
  absl::StatusOr<std::vector<v1::Job>> ListJobs(int limit);
  /// Records the job's baseline (cuBLAS or copy), as timed on the GPU of
  /// the daemon that prepared or re-timed it last.
  absl::Status SetJobBaseline(int64_t id, double ms, double metric, std::string_view name);
  /// Records the job's baseline error against the fp64 reference and the
  /// bound a kernel's error must meet (Job.baseline_error, error_bound), as
  /// found by the worker that prepared it. NOT_FOUND for an unknown job.
  absl::Status SetJobErrorBound(int64_t id, double baseline_error, double error_bound);

  /// Stores one measurement of a job (its config's name and params in
  /// `m.config`) and, if given, its binary, and finishes its work item, in
  /// one transaction. `daemon_id` (0: none, an import) measured it against
  /// its own baseline `baseline_ms` (0: the job's). Idempotent: a second
  /// call for the same (job, config name) changes nothing and returns false
  /// (measured twice: two daemons measured it after a lease ran out).
  absl::StatusOr<bool> AddMeasurement(int64_t job_id, const v1::Measurement& m, const KernelBinary* binary,
                              int64_t daemon_id = 0, double baseline_ms = 0);
  /// Names of the configs already measured in the job (any status).
  absl::StatusOr<std::set<std::string>> MeasuredConfigs(int64_t job_id);
  /// The job's OK measurements, fastest first (ties by insertion), at most
  /// `top` (0: all): a job's finalists and the winners its refinement
  /// starts from, read by the job's id alone (UNIQUE (job_id, config) is its
  /// index), not from the whole problem's measurements.
  absl::StatusOr<std::vector<v1::Measurement>> JobBest(int64_t job_id, int top);
  /// Measurements of the problem on the device kind over all jobs, OK ones
  /// first by median_ms ascending, then the failures; at most `top` (0: all).
  absl::StatusOr<std::vector<v1::Measurement>> ListMeasurements(int64_t device_id,
                                                                const v1::Problem& problem,
                                                                int top);
  /// Shapes of the problems of `key` (a kernel spec's version lists only
  /// its own shapes) with at least one OK measurement on the device kind,
  /// in the order of their text ("MxNxK").
  absl::StatusOr<std::vector<std::vector<int64_t>>> TunedShapes(int64_t device_id,
                                                                const ProblemKey& key);
  /// The fastest OK measurement of the problem on the device kind, whoever
  /// measured it, with its binary and the baseline of the GPU that measured
  /// it. Without one, the baseline of the problem's newest DONE job that
  /// timed one (BestRow::baseline_only: every config failed verification).
  /// NOT_FOUND if neither. Served from memory after the first call: a
  /// write of this daemon that can change the problem's best (an OK
  /// measurement, a baseline, a re-timing, its job's end) reads the row
  /// again before it returns and replaces it (the old row's current() turns
  /// false), and Refresh does so for every held row when another daemon
  /// changed one. A look-up of a held row is a hash look-up that never waits
  /// on the database, its writers or the job runner; one of a row not held
  /// reads it on the second connection. Look-ups go on while the database
  /// is unreachable (a row dropped by a failed write is still served then,
  /// rather than UNAVAILABLE). The row is shared and immutable.
  absl::StatusOr<std::shared_ptr<const BestRow>> Best(int64_t device_id,
                                                      const v1::Problem& problem);
  /// Changes (grows) whenever a row Best() returns may have changed, for
  /// any problem: what was built from Best()'s rows and the tuned shapes at
  /// one generation holds while it stays the same.
  uint64_t BestGeneration() const { return best_generation_.load(std::memory_order_acquire); }
  /// Changes (grows) whenever a kernel spec's newest version may have
  /// changed (a version registered here or, seen by Refresh, elsewhere): a
  /// version resolved from a name (GetSpec without a hash) holds while it
  /// stays the same.
  uint64_t SpecGeneration() const { return spec_generation_.load(std::memory_order_acquire); }
  /// Reads the database's change counter and, if a write other than this
  /// store's changed it (another daemon's), reads every held best again.
  /// Errors: the database's (the held rows stay).
  absl::Status Refresh();

  /// The compile cache, shared by every daemon of the database: the cached
  /// outcome for exactly this key, or nullopt.
  absl::StatusOr<std::optional<CompiledRow>> LookupCompiled(const CompileKey& key);
  /// Whether the compile cache holds an outcome for exactly this key (a
  /// binary or a compile error), reading no binary: the model strategy asks
  /// it of each neighbour it may refine to.
  absl::StatusOr<bool> HasCompiled(const CompileKey& key);
  /// Caches an outcome (binary deduplicated with the measurements' ones).
  /// Idempotent: a key cached already is left as it is.
  absl::Status AddCompiled(const CompileKey& key, const CompiledRow& row);

  /// Counts one more crash of the GPU worker on the config of the family
  /// of `key` (its family and spec_hash: a kernel spec's versions count
  /// apart; the other fields do not) on the device kind (`what`: status
  /// and message); returns the count. A config at 2 is quarantined.
  absl::StatusOr<int> AddCrash(int64_t device_id, const ProblemKey& key, std::string_view config,
                               std::string_view what);
  /// The crashes AddCrash counted for the config (0: none).
  absl::StatusOr<int> CrashCount(int64_t device_id, const ProblemKey& key, std::string_view config);

  // ---- kernel specs (tuner.proto KernelSpec, RegisterFamily) ----

  /// Stores a version of a kernel spec: `spec` (serialized), its content
  /// hash `hash` (spec::SpecHash(spec), 64 lower-case hex digits; not
  /// recomputed here), the registering `client` and `now_unix` (Unix
  /// seconds). Returns true if the version is new, false if (spec.name(),
  /// hash) was stored already (then nothing changes: the first client and
  /// time stay). Idempotent and safe for daemons of a fleet registering the
  /// same spec at once. INVALID_ARGUMENT for an empty name or a hash that is
  /// no lower-case hex SHA-256.
  absl::StatusOr<bool> AddSpec(const v1::KernelSpec& spec, std::string_view hash,
                               std::string_view client, int64_t now_unix);
  /// The version `hash` of the spec `name`; an empty hash: its newest version
  /// (latest created_unix, then the last registered). `hash` may be a prefix
  /// of at least kMinHashPrefix hex digits (the 12 that tunectl prints): the
  /// one version it starts. NOT_FOUND for an unknown name or version (the
  /// message names both); INVALID_ARGUMENT for a prefix of several versions
  /// or a hash that is no hex; DATA_LOSS if the stored bytes do not parse as
  /// a KernelSpec.
  absl::StatusOr<StoredSpec> GetSpec(std::string_view name, std::string_view hash = "");
  static constexpr size_t kMinHashPrefix = 8;
  /// The newest version of every registered spec, by name. DATA_LOSS as GetSpec.
  absl::StatusOr<std::vector<StoredSpec>> ListSpecs();

  /// A finalist's re-timing at the job's end: its time (ms) and metric,
  /// `note` (e.g. the first time) for its message, and the baseline timed
  /// beside it (ms; 0: keep the measurement's).
  struct Retimed {
    double median_ms = 0;
    double metric = 0;
    std::string note;
    double baseline_ms = 0;
  };
  /// Stores a finalist's judging in one transaction: replaces the OK
  /// measurement's time with `retimed` and stores `speedup` (SetSpeedup), so
  /// that no look-up sees the new time without its interval. NOT_FOUND if
  /// the job has no OK measurement of that config.
  absl::Status SetJudged(int64_t job_id, std::string_view config, const Retimed& retimed,
                         const StoredSpeedup& speedup);

  /// Stores an OK measurement's judging (speedup, interval, pairs, note, and
  /// the clock it ran at, which replaces the measurement's). NOT_FOUND if the
  /// job has no OK measurement of that config.
  absl::Status SetSpeedup(int64_t job_id, std::string_view config, const StoredSpeedup& speedup);
  /// The binary stored with the job's measurement of `config` (what GetBest
  /// serves). NOT_FOUND if it has none.
  absl::StatusOr<KernelBinary> MeasurementBinary(int64_t job_id, std::string_view config);

  /// Adds `time` to the job's totals (Job.compile_seconds etc.).
  absl::Status AddJobTime(int64_t id, const JobTime& time);

 private:
  /// Runs one statement (Database::Query, the dialect of db/database.h) with
  /// `args` bound as Values, under the held lock. Errors: the database's.
  template <typename... Args>
  absl::StatusOr<Rows> Query(std::string_view sql, const Args&... args)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// Runs `body` in one transaction (serialized across the fleet if asked);
  /// rolls back if it fails.
  absl::Status InTxn(bool serialize, const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<v1::Job> LoadJob(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int64_t> InsertBinary(const KernelBinary& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// Kernel sources (store_sources.cc). The id of the row of `text` in
  /// `sources`, inserted if new: each distinct text is stored once.
  absl::StatusOr<int64_t> InsertSource(std::string_view text) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// The id of the row of `text` (whose SourceDigest is `digest`), if any.
  absl::StatusOr<std::optional<int64_t>> FindSource(std::string_view text, int64_t digest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// Sets the digest of each source that has none (the texts migration 8
  /// moved), unless another text holds it. Each row in a statement of its
  /// own: daemons that open the database together may run it at once.
  absl::Status FillSourceDigests() ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int> CrashCountLocked(int64_t device_id, const std::string& family,
                                       std::string_view config) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// Runs `read(Database&)` (an absl::StatusOr) on the connection of the
  /// request path's reads: reads_ under reads_mu_, or db_ under mu_ where
  /// there is no second one. A read that found the PostgreSQL connection
  /// gone (UNAVAILABLE: the server restarted while it idled) runs once
  /// more, on the connection made again.
  template <typename F>
  auto Read(F&& read) ABSL_LOCKS_EXCLUDED(mu_, reads_mu_) {
    absl::MutexLock lock(reads_ != nullptr ? &reads_mu_ : &mu_);
    Database& db = reads_ != nullptr ? *reads_ : *db_;
    auto out = read(db);
    if (absl::IsUnavailable(out.status()) && db.backend() == "postgresql") out = read(db);
    return out;
  }
  /// Runs `update` (an UPDATE of job_id's OK measurement of `config`) in a
  /// transaction that bumps the change counter, then reads the job's best
  /// again (BestChanged). NOT_FOUND if it changed no row.
  absl::Status UpdateFinalist(int64_t job_id, std::string_view config,
                              const std::function<absl::StatusOr<Rows>()>& update)
      ABSL_LOCKS_EXCLUDED(mu_);
  /// After this store's committed write that can change the best of job
  /// `job_id`'s problem (`bumped`: the write bumped the change counter):
  /// moves the generation on and reads the held row of that problem again,
  /// before any other write, so that no look-up after the write returns
  /// sees the old row. Where the job's problem cannot be read, drops every
  /// held row (InvalidateBest).
  void BestChanged(int64_t job_id, bool bumped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  /// Best()'s row of a problem, read on a connection of the caller's choice.
  using ReadBestFn = std::function<absl::StatusOr<BestRow>(int64_t device_id, const v1::Problem&)>;
  /// Moves the generation on, then reads the held row of `key` (nullopt:
  /// every held row) again with `read` and replaces it. A row that no longer
  /// reads, or that was read across another move of the generation, is
  /// dropped (into stale_best_): the next look-up reads it.
  void ReloadBest(const std::optional<std::string>& key, const ReadBestFn& read)
      ABSL_LOCKS_EXCLUDED(cache_mu_);
  /// Reads the change counter: whether it moved by more than this store's
  /// own bumps since it was last read (the first time: true).
  absl::StatusOr<bool> ChangedElsewhere() ABSL_LOCKS_EXCLUDED(mu_);
  /// Drops every held best (after a write that failed: what it changed is
  /// unknown).
  void InvalidateBest();

  std::unique_ptr<Database> db_;
  absl::Mutex mu_;
  std::unique_ptr<Database> reads_;  // may be null: reads share db_
  absl::Mutex reads_mu_;
  // The bests held in memory: BestKey -> the row, with what reads it again
  // and the token its `held` watches (dropped when the row is replaced).
  struct HeldBest {
    int64_t device_id = 0;
    v1::Problem problem;
    std::shared_ptr<const BestRow> row;
    std::shared_ptr<const void> token;
  };
  absl::Mutex cache_mu_;
  std::map<std::string, HeldBest> best_cache_ ABSL_GUARDED_BY(cache_mu_);
  // Moved on by every write that may change a best: a row read on the
  // second connection across a move is not kept.
  std::atomic<uint64_t> best_generation_ = 0;  // changed under cache_mu_
  std::atomic<uint64_t> spec_generation_ = 0;
  // Rows InvalidateBest dropped: what Best() serves while the database is down.
  std::map<std::string, std::shared_ptr<const BestRow>> stale_best_ ABSL_GUARDED_BY(cache_mu_);
  int64_t db_generation_ ABSL_GUARDED_BY(mu_) = -1;  // the database's counter, last read
  // This store's committed bumps of the counter since it was last read: a
  // change of the counter by more is another daemon's.
  int64_t own_bumps_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tuned
