-- Schema version 9 -> 10. Applied by db/sqlite.cc inside the transaction that
-- checks the version, then schema.sql. Only ADD COLUMNs. GEMM epilogues
-- (tuner.proto Epilogue): a problem's epilogue is part of its key, in jobs
-- and in the measurements copied from them, as its layout is; every earlier
-- row is EPILOGUE_NONE, so its keys do not change.
ALTER TABLE jobs ADD COLUMN epilogue TEXT NOT NULL DEFAULT 'EPILOGUE_NONE';
ALTER TABLE measurements ADD COLUMN epilogue TEXT NOT NULL DEFAULT 'EPILOGUE_NONE';
