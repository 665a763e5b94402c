-- Schema version 10 -> 11. Applied by db/sqlite.cc inside the transaction that
-- checks the version, then db/database.cc's KeyMigratedProblems, then
-- schema.sql. A problem is one row of `problems` (its key, core/problem_key.h,
-- and its shape), which jobs and measurements reference: their family,
-- dtype, shape, math, layout and epilogue columns go. Every (key, shape) that
-- a job or a measurement holds becomes a row, its key written here as the
-- old columns joined by spaces ("FAMILY_SGEMM DTYPE_F32 MATH_IEEE_FP32
-- LAYOUT_NN EPILOGUE_NONE"; no canonical key holds a space), which
-- KeyMigratedProblems rewrites as the canonical key in the same transaction.
-- problem_id keeps no NOT NULL here (SQLite adds no REFERENCES column with a
-- default), and every row has one.
CREATE TABLE problems (
  id    INTEGER PRIMARY KEY,
  key   TEXT    NOT NULL,
  shape TEXT    NOT NULL,
  UNIQUE (key, shape)
);
INSERT INTO problems (key, shape)
  SELECT family || ' ' || dtype || ' ' || math || ' ' || layout || ' ' || epilogue, shape FROM jobs
  UNION
  SELECT family || ' ' || dtype || ' ' || math || ' ' || layout || ' ' || epilogue, shape FROM measurements;
ALTER TABLE jobs ADD COLUMN problem_id INTEGER REFERENCES problems (id);
UPDATE jobs SET problem_id = (
  SELECT p.id FROM problems p WHERE p.shape = jobs.shape
    AND p.key = jobs.family || ' ' || jobs.dtype || ' ' || jobs.math || ' ' || jobs.layout || ' ' || jobs.epilogue);
ALTER TABLE measurements ADD COLUMN problem_id INTEGER REFERENCES problems (id);
UPDATE measurements SET problem_id = (
  SELECT p.id FROM problems p WHERE p.shape = measurements.shape
    AND p.key = measurements.family || ' ' || measurements.dtype || ' ' || measurements.math || ' ' ||
                measurements.layout || ' ' || measurements.epilogue);
-- Its columns go; schema.sql makes it again on (device_id, problem_id, ...).
DROP INDEX measurements_by_problem;
ALTER TABLE jobs DROP COLUMN family;
ALTER TABLE jobs DROP COLUMN dtype;
ALTER TABLE jobs DROP COLUMN shape;
ALTER TABLE jobs DROP COLUMN math;
ALTER TABLE jobs DROP COLUMN layout;
ALTER TABLE jobs DROP COLUMN epilogue;
ALTER TABLE measurements DROP COLUMN family;
ALTER TABLE measurements DROP COLUMN dtype;
ALTER TABLE measurements DROP COLUMN shape;
ALTER TABLE measurements DROP COLUMN math;
ALTER TABLE measurements DROP COLUMN layout;
ALTER TABLE measurements DROP COLUMN epilogue;
