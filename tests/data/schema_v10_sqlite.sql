-- Schema version 10 as released (db/sqlite/schema.sql before the problems table):
-- tests/store_test.cc builds a version-10 database with rows from it and
-- checks that migrations/11.sql keeps every row's problem.
-- The tuned store on SQLite, schema version 10 (PRAGMA user_version at the
-- end; it must match Store::kSchemaVersion). db/postgres/schema.sql is the
-- same schema for PostgreSQL; a change to one is made to both. Embedded into
-- the binary as tuned::embedded::kSqliteSchemaSql and applied by db/sqlite.cc
-- to a fresh database (user_version 0) in one transaction; an older database
-- is brought here by db/sqlite/migrations/<version>.sql, one step at a time
-- (they alter existing tables), then this file (so every CREATE here is IF
-- NOT EXISTS). Enums are stored by their proto names
-- ("FAMILY_SGEMM", "JOB_RUNNING", "MEASUREMENT_OK"), shapes as "MxNxK", times
-- as Unix seconds (NULL: not yet). A family column holds the problem's
-- family key (Store's FamilyKey): a built-in family's enum name, or
-- "<name>@<spec hash>" for a version of a kernel spec (kernel_specs).

-- A GPU kind as identified for measurements: results on another name,
-- compute capability, SM count, driver or NVRTC are kept apart; every daemon
-- of a kind serves the kind's results. (A database migrated from version 2
-- keeps its UNIQUE without sm_count, and devices_by_kind beside it.)
CREATE TABLE IF NOT EXISTS devices (
  id             INTEGER PRIMARY KEY,
  name           TEXT    NOT NULL,
  cc_major       INTEGER NOT NULL,
  cc_minor       INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  nvrtc_version  TEXT    NOT NULL,
  sm_count       INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS devices_by_kind
  ON devices (name, cc_major, cc_minor, sm_count, driver_version, nvrtc_version);

-- The daemons that share this database, one per GPU (host, GPU index and
-- UUID; a restart keeps the row). heartbeat: Unix seconds (the database's
-- clock) of its last lease renewal; a daemon is live while its heartbeat is
-- younger than its lease. user_kernels: it was started with
-- --allow-user-kernels (it claims kernel specs' jobs); sandbox: what confines
-- its worker processes ("Landlock ABI 7", "none (...)"; both schema 9).
CREATE TABLE IF NOT EXISTS daemons (
  id            INTEGER PRIMARY KEY,
  host          TEXT    NOT NULL,
  gpu           INTEGER NOT NULL,
  gpu_uuid      TEXT    NOT NULL,
  device_id     INTEGER NOT NULL REFERENCES devices (id),
  pid           INTEGER NOT NULL DEFAULT 0,
  started_unix  INTEGER NOT NULL,
  heartbeat     REAL    NOT NULL,
  lease_seconds REAL    NOT NULL,
  job_id        INTEGER,           -- the job it works on, NULL when idle
  stopped       INTEGER NOT NULL DEFAULT 0,
  user_kernels  INTEGER NOT NULL DEFAULT 0,
  sandbox       TEXT    NOT NULL DEFAULT '',
  UNIQUE (host, gpu, gpu_uuid)
);

-- One sweep of a family's search space for a problem on a device.
CREATE TABLE IF NOT EXISTS jobs (
  id              INTEGER PRIMARY KEY,
  device_id       INTEGER NOT NULL REFERENCES devices (id),
  family          TEXT    NOT NULL,
  dtype           TEXT    NOT NULL,
  shape           TEXT    NOT NULL,
  state           TEXT    NOT NULL,
  total           INTEGER NOT NULL DEFAULT 0,
  pruned          INTEGER NOT NULL DEFAULT 0,
  error           TEXT    NOT NULL DEFAULT '',
  baseline_ms     REAL,
  baseline_metric REAL,
  baseline_name   TEXT,
  created_unix    INTEGER NOT NULL,
  started_unix    INTEGER,
  finished_unix   INTEGER,
  -- where the job's time went (seconds, summed over daemon restarts)
  compile_seconds REAL    NOT NULL DEFAULT 0,
  measure_seconds REAL    NOT NULL DEFAULT 0,
  wait_seconds    REAL    NOT NULL DEFAULT 0,
  worker_restarts INTEGER NOT NULL DEFAULT 0,
  cached          INTEGER NOT NULL DEFAULT 0,
  client          TEXT    NOT NULL DEFAULT '',  -- who submitted it (quotas); '' before auth
  -- its work items' last round: 0 none yet, 1 the sweep of the pruned
  -- space, 2.. the refinement rounds (then the re-timing item)
  round           INTEGER NOT NULL DEFAULT 0,
  -- how it searches and its budget (0: none of that kind); server/search/
  strategy        TEXT    NOT NULL DEFAULT 'exhaustive',
  budget_seconds  REAL    NOT NULL DEFAULT 0,
  budget_configs  INTEGER NOT NULL DEFAULT 0,
  -- the problem's math mode (tuner.proto Math; schema 5), and below its
  -- layout (Layout; schema 7) and epilogue (Epilogue; schema 10): each its
  -- own measurements and best. baseline_error: the baseline's relative error
  -- against the fp64 reference, error_bound: what a kernel's may reach (0:
  -- not measured, as for MATH_IEEE_FP32)
  math            TEXT    NOT NULL DEFAULT 'MATH_IEEE_FP32',
  baseline_error  REAL    NOT NULL DEFAULT 0,
  error_bound     REAL    NOT NULL DEFAULT 0,
  layout          TEXT    NOT NULL DEFAULT 'LAYOUT_NN',
  epilogue        TEXT    NOT NULL DEFAULT 'EPILOGUE_NONE'
);
CREATE INDEX IF NOT EXISTS jobs_by_device_state ON jobs (device_id, state, id);

-- Kernel sources (the CUDA C++ given to NVRTC), each distinct text once
-- (schema 8): binaries and compiled refer to them by id, and the kernels of
-- a family share one text (its headers, about 100 KB), the config being
-- picked by the name expression. digest: FNV-1a of the text (Store's
-- SourceDigest), unique, to find a text; NULL where a row goes without it:
-- the texts moved here by migrations/8.sql until Store::Open fills them in,
-- and a text whose digest another text holds. Readers match the text.
CREATE TABLE IF NOT EXISTS sources (
  id     INTEGER PRIMARY KEY,
  digest INTEGER,
  text   TEXT    NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS sources_by_digest ON sources (digest);

-- Compiled kernels. Identical ones (same digest and same columns) are shared
-- by the measurements that produced them; digest is FNV-1a over the columns
-- with the source's text, only used to find candidates. source_id: the
-- source (schema 8; a database migrated from 7 has it without NOT NULL, and
-- every row has one).
CREATE TABLE IF NOT EXISTS binaries (
  id        INTEGER PRIMARY KEY,
  digest    INTEGER NOT NULL,
  entry     TEXT    NOT NULL,
  cubin     BLOB    NOT NULL,
  ptx       TEXT    NOT NULL,
  log       TEXT    NOT NULL,
  source_id INTEGER NOT NULL REFERENCES sources (id)
);
CREATE INDEX IF NOT EXISTS binaries_by_digest ON binaries (digest);

-- One config measured in one job. device/family/dtype/shape are copied from
-- the job so that a problem's measurements over all jobs are one index range.
CREATE TABLE IF NOT EXISTS measurements (
  id           INTEGER PRIMARY KEY,
  job_id       INTEGER NOT NULL REFERENCES jobs (id),
  device_id    INTEGER NOT NULL REFERENCES devices (id),
  family       TEXT    NOT NULL,
  dtype        TEXT    NOT NULL,
  shape        TEXT    NOT NULL,
  config       TEXT    NOT NULL,  -- canonical name
  params       TEXT    NOT NULL,  -- "BK=8,BM=128,BN=64", keys in order
  status       TEXT    NOT NULL,
  median_ms    REAL    NOT NULL DEFAULT 0,
  metric       REAL    NOT NULL DEFAULT 0,
  metric_unit  TEXT    NOT NULL DEFAULT '',
  error        REAL    NOT NULL DEFAULT 0,
  message      TEXT    NOT NULL DEFAULT '',
  repetitions  INTEGER NOT NULL DEFAULT 0,
  registers    INTEGER NOT NULL DEFAULT 0,
  binary_id    INTEGER REFERENCES binaries (id),
  created_unix INTEGER NOT NULL,
  daemon_id    INTEGER REFERENCES daemons (id),  -- who measured it (NULL: imported, or before 3)
  baseline_ms  REAL,  -- the baseline on the GPU that measured it (NULL: the job's)
  -- the SM clock (MHz, median of NVML samples) while it was timed, 0 unknown;
  -- clock_low: under 90% of the maximum even when re-timed after a pause
  sm_clock_mhz INTEGER NOT NULL DEFAULT 0,
  clock_low    INTEGER NOT NULL DEFAULT 0,
  -- a finalist's judging at the job's end (core/serving.h): the speedup
  -- over the baseline (baseline ms / kernel ms) from speedup_pairs rounds in
  -- a fresh worker process and its 95% bootstrap interval (NULL, 0: none);
  -- speedup_note: why the judging computed none (e.g. a low clock)
  speedup         REAL,
  speedup_ci_low  REAL,
  speedup_ci_high REAL,
  speedup_pairs   INTEGER NOT NULL DEFAULT 0,
  speedup_note    TEXT    NOT NULL DEFAULT '',
  math            TEXT    NOT NULL DEFAULT 'MATH_IEEE_FP32',  -- the job's (schema 5)
  layout          TEXT    NOT NULL DEFAULT 'LAYOUT_NN',       -- the job's (schema 7)
  epilogue        TEXT    NOT NULL DEFAULT 'EPILOGUE_NONE',   -- the job's (schema 10)
  UNIQUE (job_id, config)
);
CREATE INDEX IF NOT EXISTS measurements_by_problem
  ON measurements (device_id, family, dtype, shape, status, median_ms);

-- The compile cache: NVRTC's outcome for an exact (source, instantiation,
-- options, architecture, NVRTC version), so that no kernel is compiled twice,
-- across jobs and restarts. Compile errors are kept too (they are
-- deterministic); timeouts are not. digest is FNV-1a over the key columns,
-- the source's text first. source_id: the source, as in binaries (schema 8).
CREATE TABLE IF NOT EXISTS compiled (
  id              INTEGER PRIMARY KEY,
  digest          INTEGER NOT NULL,
  name_expression TEXT    NOT NULL,
  options         TEXT    NOT NULL,  -- joined with newlines
  arch            TEXT    NOT NULL,  -- "sm_90"
  nvrtc_version   TEXT    NOT NULL,
  ok              INTEGER NOT NULL,  -- 0: compile error (message holds the log)
  message         TEXT    NOT NULL,
  binary_id       INTEGER REFERENCES binaries (id),
  registers       INTEGER NOT NULL DEFAULT 0,
  local_bytes     INTEGER NOT NULL DEFAULT 0,
  compile_ms      REAL    NOT NULL DEFAULT 0,
  created_unix    INTEGER NOT NULL,
  source_id       INTEGER NOT NULL REFERENCES sources (id)
);
CREATE INDEX IF NOT EXISTS compiled_by_digest ON compiled (digest);

-- Configs that broke the GPU worker (device fault, run timeout, worker
-- death): one that did it twice is quarantined (never run again).
CREATE TABLE IF NOT EXISTS crashes (
  device_id INTEGER NOT NULL REFERENCES devices (id),
  family    TEXT    NOT NULL,
  config    TEXT    NOT NULL,
  count     INTEGER NOT NULL,
  last      TEXT    NOT NULL,  -- the last crash's status and message
  PRIMARY KEY (device_id, family, config)
);

-- A job's configs as work items, claimed in batches by the daemons of the
-- job's GPU kind: a claim sets daemon_id and a lease (Unix seconds, the
-- database's clock) that its daemon renews; an item whose lease ran out
-- goes back to the pool. done: its measurement is stored (same
-- transaction). The item with config '' is the job's end: the re-timing of
-- its finalists on one GPU.
CREATE TABLE IF NOT EXISTS work_items (
  job_id      INTEGER NOT NULL REFERENCES jobs (id),
  config      TEXT    NOT NULL,
  params      TEXT    NOT NULL,
  round       INTEGER NOT NULL,
  seq         INTEGER NOT NULL,  -- claim order within the job
  daemon_id   INTEGER REFERENCES daemons (id),
  lease_until REAL,
  done        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, config)
);
CREATE INDEX IF NOT EXISTS work_items_open ON work_items (job_id, done, seq);
CREATE INDEX IF NOT EXISTS work_items_by_daemon ON work_items (daemon_id, done);

-- Kernel specs (tuner.proto KernelSpec) registered by clients, one row per
-- version: `spec` is the serialized KernelSpec, `hash` its content hash
-- (spec::SpecHash, lower-case hex SHA-256), client and created_unix those of
-- its first registration. seq: the order of registration (the newest
-- version of a name is the latest created_unix, then the highest seq).
-- Schema 6.
CREATE TABLE IF NOT EXISTS kernel_specs (
  name         TEXT    NOT NULL,
  hash         TEXT    NOT NULL,
  spec         BLOB    NOT NULL,
  client       TEXT    NOT NULL DEFAULT '',
  created_unix INTEGER NOT NULL,
  seq          INTEGER NOT NULL,
  PRIMARY KEY (name, hash)
);

-- The change counter: bumped by every write that can change a best kernel,
-- so that each daemon's cache of bests (Store::Best) follows the others'.
CREATE TABLE IF NOT EXISTS generation (
  id    INTEGER PRIMARY KEY CHECK (id = 1),
  value INTEGER NOT NULL
);
INSERT INTO generation (id, value) VALUES (1, 0) ON CONFLICT DO NOTHING;

PRAGMA user_version = 10;
