-- Schema version 6 -> 7. Applied by db/sqlite.cc inside the transaction that
-- checks the version, then schema.sql. Only ADD COLUMNs. GEMM operand
-- layouts (tuner.proto Layout): a problem's layout is part of its key, in
-- jobs and in the measurements copied from them, as its math mode is; every
-- earlier row is LAYOUT_NN, so its keys do not change.
ALTER TABLE jobs ADD COLUMN layout TEXT NOT NULL DEFAULT 'LAYOUT_NN';
ALTER TABLE measurements ADD COLUMN layout TEXT NOT NULL DEFAULT 'LAYOUT_NN';
