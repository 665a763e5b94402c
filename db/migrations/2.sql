-- Schema version 1 -> 2: job time split, restarts, cache hits and client on
-- jobs; the compile cache; the crash counts behind quarantine. Applied by
-- db/store.cc inside the transaction that checks the version; the new tables
-- are those of db/schema.sql.
ALTER TABLE jobs ADD COLUMN compile_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN measure_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN wait_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN worker_restarts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN cached INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN client TEXT NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS compiled (
  id              INTEGER PRIMARY KEY,
  digest          INTEGER NOT NULL,
  source          TEXT    NOT NULL,
  name_expression TEXT    NOT NULL,
  options         TEXT    NOT NULL,
  arch            TEXT    NOT NULL,
  nvrtc_version   TEXT    NOT NULL,
  ok              INTEGER NOT NULL,
  message         TEXT    NOT NULL,
  binary_id       INTEGER REFERENCES binaries (id),
  registers       INTEGER NOT NULL DEFAULT 0,
  local_bytes     INTEGER NOT NULL DEFAULT 0,
  compile_ms      REAL    NOT NULL DEFAULT 0,
  created_unix    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS compiled_by_digest ON compiled (digest);
CREATE TABLE IF NOT EXISTS crashes (
  device_id INTEGER NOT NULL REFERENCES devices (id),
  family    TEXT    NOT NULL,
  config    TEXT    NOT NULL,
  count     INTEGER NOT NULL,
  last      TEXT    NOT NULL,
  PRIMARY KEY (device_id, family, config)
);
PRAGMA user_version = 2;
