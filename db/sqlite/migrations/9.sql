-- Schema version 8 -> 9. Applied by db/sqlite.cc inside the transaction that
-- checks the version, then schema.sql. A daemon says whether it runs kernel
-- specs' code (--allow-user-kernels) and what confines its workers, for
-- `tunectl daemons`; rows of daemons that have not started since read as
-- without both until they do.
-- A database older than 3 has no daemons table yet (schema.sql adds it after
-- the migrations): version 8's, to alter like the others.
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
  job_id        INTEGER,
  stopped       INTEGER NOT NULL DEFAULT 0,
  UNIQUE (host, gpu, gpu_uuid)
);
ALTER TABLE daemons ADD COLUMN user_kernels INTEGER NOT NULL DEFAULT 0;
ALTER TABLE daemons ADD COLUMN sandbox TEXT NOT NULL DEFAULT '';
