-- The tuned store, schema version 1 (PRAGMA user_version at the end; it must
-- match Store::kSchemaVersion). Embedded into the binary as
-- tuned::embedded::kSchemaSql and applied by db/store.cc to a fresh database
-- (user_version 0) in one transaction. Enums are stored by their proto names
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

PRAGMA user_version = 1;
