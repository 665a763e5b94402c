-- Schema version 4 -> 5 (issue 18). Applied by db/sqlite.cc inside the
-- transaction that checks the version, then schema.sql. Only ADD COLUMNs.
-- Math modes (tuner.proto Math): a problem's math mode is part of its key,
-- in jobs and in the measurements copied from them; every earlier row is
-- MATH_IEEE_FP32, today's kernels and rule, so its keys do not change. A job
-- of another mode keeps its baseline's error against the fp64 reference and
-- the bound a kernel's error must meet.
ALTER TABLE jobs ADD COLUMN math TEXT NOT NULL DEFAULT 'MATH_IEEE_FP32';
ALTER TABLE jobs ADD COLUMN baseline_error REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN error_bound REAL NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN math TEXT NOT NULL DEFAULT 'MATH_IEEE_FP32';
