-- Schema version 9 -> 10 on PostgreSQL, as db/sqlite/migrations/10.sql: a
-- problem's epilogue (tuner.proto Epilogue) in jobs and measurements; every
-- earlier row is EPILOGUE_NONE. Applied by db/postgres.cc in one transaction
-- under the schema's advisory lock, with the version row.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS epilogue TEXT NOT NULL DEFAULT 'EPILOGUE_NONE';
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS epilogue TEXT NOT NULL DEFAULT 'EPILOGUE_NONE';
UPDATE schema_version SET version = 10;
