-- Schema version 7 -> 8. Applied by db/sqlite.cc inside the transaction that
-- checks the version, then schema.sql. Kernel sources move to their own
-- table, each distinct text once: binaries.source and compiled.source
-- become source_id. The moved texts have no digest (NULL) here: SQL cannot
-- compute Store's FNV-1a, and Store::Open fills them in; readers match the
-- text meanwhile. sources_by_text only serves the move (kept, it would hold
-- a second copy of every text). DROP COLUMN (SQLite 3.35) rewrites the two
-- tables without the text; the file keeps its size until a VACUUM, and the
-- freed pages are reused.
-- A database of schema 1 has no compile cache yet (schema.sql adds it from
-- version 2 on, after the migrations): version 7's, to move like the others.
CREATE TABLE IF NOT EXISTS compiled (
  id              INTEGER PRIMARY KEY,
  digest          INTEGER NOT NULL,
  source          TEXT    NOT NULL,
  name_expression TEXT    NOT NULL,
  options         TEXT    NOT NULL,
  arch            TEXT    NOT NULL,
  nvrtc_version   TEXT    NOT NULL,
  ok              INTEGER NOT NULL,
  message         TEXT    NOT NULL,
  binary_id       INTEGER REFERENCES binaries (id),
  registers       INTEGER NOT NULL DEFAULT 0,
  local_bytes     INTEGER NOT NULL DEFAULT 0,
  compile_ms      REAL    NOT NULL DEFAULT 0,
  created_unix    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sources (
  id     INTEGER PRIMARY KEY,
  digest INTEGER,
  text   TEXT    NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS sources_by_digest ON sources (digest);
CREATE INDEX sources_by_text ON sources (text);
INSERT INTO sources (text) SELECT source FROM binaries UNION SELECT source FROM compiled;
-- NULL default: ADD COLUMN takes no REFERENCES with another one while
-- foreign keys are on; every row is set next.
ALTER TABLE binaries ADD COLUMN source_id INTEGER REFERENCES sources (id);
UPDATE binaries SET source_id = (SELECT s.id FROM sources s WHERE s.text = binaries.source);
ALTER TABLE binaries DROP COLUMN source;
ALTER TABLE compiled ADD COLUMN source_id INTEGER REFERENCES sources (id);
UPDATE compiled SET source_id = (SELECT s.id FROM sources s WHERE s.text = compiled.source);
ALTER TABLE compiled DROP COLUMN source;
DROP INDEX sources_by_text;
