-- 0004_accounting: one row per worker run, with what it cost.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- A worker run for a need's missing obligations: its invocation identity,
-- outcome, token usage, priced cost and wall-clock latency. Economic
-- observations (0003) are derived per operator; this is the ledger of runs.
CREATE TABLE worker_runs (
	run_id INTEGER PRIMARY KEY,
	root TEXT NOT NULL,
	need_id TEXT NOT NULL REFERENCES needs (need_id),
	invocation TEXT NOT NULL,
	obligations TEXT NOT NULL CHECK (json_type(obligations) = 'array'),
	status TEXT NOT NULL CHECK (status IN ('completed', 'failed')),
	error TEXT NOT NULL DEFAULT '',
	proposals INTEGER NOT NULL CHECK (proposals >= 0),
	input_tokens INTEGER NOT NULL CHECK (input_tokens >= 0),
	output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0),
	total_tokens INTEGER NOT NULL CHECK (total_tokens >= 0),
	cost_usd REAL NOT NULL CHECK (cost_usd >= 0),
	latency_ms REAL NOT NULL CHECK (latency_ms >= 0),
	created_at TEXT NOT NULL
) STRICT;

CREATE INDEX worker_runs_need ON worker_runs (need_id);
