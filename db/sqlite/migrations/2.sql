-- Schema version 1 -> 2: the job time split, worker restarts, cache hits and
-- client columns on jobs. Applied by db/store.cc inside the transaction that
-- checks the version; db/schema.sql (every CREATE is IF NOT EXISTS) then adds
-- the new tables (compiled, crashes) and sets user_version.
ALTER TABLE jobs ADD COLUMN compile_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN measure_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN wait_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN worker_restarts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN cached INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN client TEXT NOT NULL DEFAULT '';
