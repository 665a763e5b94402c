-- Schema version 4 -> 5 on PostgreSQL (issue 18), the same columns as
-- db/sqlite/migrations/5.sql: a problem's math mode in jobs and
-- measurements (MATH_IEEE_FP32 for every earlier row), and a job's baseline
-- error against the fp64 reference and its error bound. Applied by
-- db/postgres.cc in one transaction under the schema's advisory lock, with
-- the version row.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS math TEXT NOT NULL DEFAULT 'MATH_IEEE_FP32';
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS baseline_error DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS error_bound DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS math TEXT NOT NULL DEFAULT 'MATH_IEEE_FP32';
UPDATE schema_version SET version = 5;
