-- Schema version 3 -> 4 on PostgreSQL (issue 17), the same columns as
-- db/sqlite/migrations/4.sql: a job's strategy and budget, a measurement's
-- SM clock and a finalist's judged speedup. Applied by db/postgres.cc in one
-- transaction under the schema's advisory lock, with the version row.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS strategy TEXT NOT NULL DEFAULT 'exhaustive';
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS budget_seconds DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS budget_configs BIGINT NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS sm_clock_mhz BIGINT NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS clock_low BIGINT NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS speedup DOUBLE PRECISION;
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS speedup_ci_low DOUBLE PRECISION;
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS speedup_ci_high DOUBLE PRECISION;
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS speedup_pairs BIGINT NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS speedup_note TEXT NOT NULL DEFAULT '';
UPDATE schema_version SET version = 4;
