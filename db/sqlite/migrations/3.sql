-- Schema version 2 -> 3: the fleet (daemons, work items and leases, the
-- change counter; db/sqlite/schema.sql adds those tables), the SM count in
-- a device's kind, and who measured each measurement against which
-- baseline. Applied by db/sqlite.cc inside the transaction that checks the
-- version, then schema.sql. Jobs left QUEUED or RUNNING by version 2 have
-- no work items (round 0): the first daemon to take one seeds them,
-- marking the configs already measured as done.
ALTER TABLE devices ADD COLUMN sm_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN daemon_id INTEGER REFERENCES daemons (id);
ALTER TABLE measurements ADD COLUMN baseline_ms REAL;
