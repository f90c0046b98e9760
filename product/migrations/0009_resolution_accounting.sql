-- 0009_resolution_accounting: what each resolution cost and saved, for
-- the resident runtime's need feed and accounting.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- latency_ms is the wall-clock time the resolution took, from its turn
-- to its answer;
-- tokens_spent the worker tokens the resolution used; tokens_saved the
-- worker tokens that reusing evidence avoided, estimated when it was
-- recorded from the mean tokens per obligation of earlier completed worker
-- runs (0 while none is known). Rows recorded before this migration keep 0
-- in all three.
ALTER TABLE resolutions ADD COLUMN latency_ms REAL NOT NULL DEFAULT 0 CHECK (latency_ms >= 0);
ALTER TABLE resolutions ADD COLUMN tokens_spent INTEGER NOT NULL DEFAULT 0 CHECK (tokens_spent >= 0);
ALTER TABLE resolutions ADD COLUMN tokens_saved INTEGER NOT NULL DEFAULT 0 CHECK (tokens_saved >= 0);

-- The feed reads the newest resolutions first, the accounting series by time.
CREATE INDEX resolutions_created ON resolutions (created_at);
