-- Schema version 8 -> 9 on PostgreSQL, as db/sqlite/migrations/9.sql: a
-- daemon says whether it runs kernel specs' code and what confines its
-- workers. Applied by db/postgres.cc in one transaction under the schema's
-- advisory lock, with the version row.
ALTER TABLE daemons ADD COLUMN IF NOT EXISTS user_kernels BIGINT NOT NULL DEFAULT 0;
ALTER TABLE daemons ADD COLUMN IF NOT EXISTS sandbox TEXT NOT NULL DEFAULT '';
UPDATE schema_version SET version = 9;
