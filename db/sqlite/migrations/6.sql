-- Schema version 5 -> 6. Applied by db/sqlite.cc inside the transaction that
-- checks the version, then schema.sql. Kernel specs (tuner.proto
-- KernelSpec, RegisterFamily): one row per version of a spec. The family
-- columns of jobs, measurements and crashes keep their values: a built-in
-- family's key is its enum name as before, and a spec's version is
-- "<name>@<hash>" (Store's FamilyKey), which no earlier row holds.
CREATE TABLE IF NOT EXISTS kernel_specs (
  name         TEXT    NOT NULL,
  hash         TEXT    NOT NULL,
  spec         BLOB    NOT NULL,
  client       TEXT    NOT NULL DEFAULT '',
  created_unix INTEGER NOT NULL,
  seq          INTEGER NOT NULL,
  PRIMARY KEY (name, hash)
);
