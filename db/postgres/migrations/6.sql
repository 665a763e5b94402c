-- Schema version 5 -> 6 on PostgreSQL, as db/sqlite/migrations/6.sql: the
-- table of kernel specs, one row per version; the family columns keep
-- their values (a built-in family's key is unchanged). Applied by
-- db/postgres.cc in one transaction under the schema's advisory lock, with
-- the version row.
CREATE TABLE IF NOT EXISTS kernel_specs (
  name         TEXT   NOT NULL,
  hash         TEXT   NOT NULL,
  spec         BYTEA  NOT NULL,
  client       TEXT   NOT NULL DEFAULT '',
  created_unix BIGINT NOT NULL,
  seq          BIGINT NOT NULL,
  PRIMARY KEY (name, hash)
);
UPDATE schema_version SET version = 6;
