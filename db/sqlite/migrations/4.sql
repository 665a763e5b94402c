-- Schema version 3 -> 4 (issue 17). Applied by db/sqlite.cc inside the
-- transaction that checks the version, then schema.sql. Only ADD COLUMNs.
-- Strategies: how a job searches and its budget (server/search/strategy.h).
-- Jobs of version 3 searched exhaustively without a budget.
ALTER TABLE jobs ADD COLUMN strategy TEXT NOT NULL DEFAULT 'exhaustive';
ALTER TABLE jobs ADD COLUMN budget_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN budget_configs INTEGER NOT NULL DEFAULT 0;
-- What `best` serves is judged outside the daemon's long-lived worker
-- (core/serving.h). Each measurement keeps the SM clock it was timed at
-- and whether that clock sat low, and a finalist keeps the speedup over the
-- baseline from the job's final judging (a fresh worker process,
-- interleaved pairs), its 95% bootstrap interval and pair count, or why no
-- speedup was computed.
ALTER TABLE measurements ADD COLUMN sm_clock_mhz INTEGER NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN clock_low INTEGER NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN speedup REAL;
ALTER TABLE measurements ADD COLUMN speedup_ci_low REAL;
ALTER TABLE measurements ADD COLUMN speedup_ci_high REAL;
ALTER TABLE measurements ADD COLUMN speedup_pairs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN speedup_note TEXT NOT NULL DEFAULT '';
