-- Schema version 6 -> 7 on PostgreSQL, as db/sqlite/migrations/7.sql: a
-- problem's operand layout (tuner.proto Layout) in jobs and measurements;
-- every earlier row is LAYOUT_NN. Applied by db/postgres.cc in one
-- transaction under the schema's advisory lock, with the version row.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS layout TEXT NOT NULL DEFAULT 'LAYOUT_NN';
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS layout TEXT NOT NULL DEFAULT 'LAYOUT_NN';
UPDATE schema_version SET version = 7;
