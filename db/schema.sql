-- The tuned store, schema version 2 (PRAGMA user_version at the end; it must
-- match Store::kSchemaVersion). Embedded into the binary as
-- tuned::embedded::kSchemaSql and applied by db/store.cc to a fresh database
-- (user_version 0) in one transaction; an older database is brought here by
-- db/migrations/<version>.sql, one step at a time (they alter existing
-- tables), then this file (so every CREATE here is IF NOT EXISTS). Enums are stored by their proto names
-- ("FAMILY_SGEMM", "JOB_RUNNING", "MEASUREMENT_OK"), shapes as "MxNxK", times
-- as Unix seconds (NULL: not yet).

-- A GPU as identified for measurements: results on another name, compute
-- capability, driver or NVRTC are kept apart.
CREATE TABLE IF NOT EXISTS devices (
  id             INTEGER PRIMARY KEY,
  name           TEXT    NOT NULL,
  cc_major       INTEGER NOT NULL,
  cc_minor       INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  nvrtc_version  TEXT    NOT NULL,
  UNIQUE (name, cc_major, cc_minor, driver_version, nvrtc_version)
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
  client          TEXT    NOT NULL DEFAULT ''  -- who submitted it (quotas); '' before auth
);
CREATE INDEX IF NOT EXISTS jobs_by_device_state ON jobs (device_id, state, id);

-- Compiled kernels. Identical ones (same digest and same columns) are shared
-- by the measurements that produced them; digest is FNV-1a over the columns,
-- only used to find candidates.
CREATE TABLE IF NOT EXISTS binaries (
  id     INTEGER PRIMARY KEY,
  digest INTEGER NOT NULL,
  source TEXT    NOT NULL,
  entry  TEXT    NOT NULL,
  cubin  BLOB    NOT NULL,
  ptx    TEXT    NOT NULL,
  log    TEXT    NOT NULL
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
  UNIQUE (job_id, config)
);
CREATE INDEX IF NOT EXISTS measurements_by_problem
  ON measurements (device_id, family, dtype, shape, status, median_ms);

-- The compile cache: NVRTC's outcome for an exact (source, instantiation,
-- options, architecture, NVRTC version), so that no kernel is compiled twice,
-- across jobs and restarts. Compile errors are kept too (they are
-- deterministic); timeouts are not. digest is FNV-1a over the key columns.
CREATE TABLE IF NOT EXISTS compiled (
  id              INTEGER PRIMARY KEY,
  digest          INTEGER NOT NULL,
  source          TEXT    NOT NULL,
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
  created_unix    INTEGER NOT NULL
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

PRAGMA user_version = 2;
