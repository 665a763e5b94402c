-- Schema version 3 -> 4 (strategies, issue 17): how a job searches and its
-- budget (server/search/strategy.h). Jobs of version 3 searched exhaustively
-- without a budget.
ALTER TABLE jobs ADD COLUMN strategy TEXT NOT NULL DEFAULT 'exhaustive';
ALTER TABLE jobs ADD COLUMN budget_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN budget_configs INTEGER NOT NULL DEFAULT 0;
