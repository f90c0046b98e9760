-- 0011_hit_path: running cost aggregates, and the indexes the hit and
-- replay paths look evidence up by.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- Running aggregates of the observed cost of plan operators, one row per
-- (operator, capability): the number of observations and, per quantity,
-- the mean and M2 (the sum of squared deviations from the mean) of
-- Welford's recurrence, so that an observation is folded in in O(1) and
-- economic selection reads a handful of rows however many answers were
-- recorded. capability '' pools every observation of the operator; a
-- capability kind's row counts the observations of operations that served
-- that kind.
CREATE TABLE operator_costs (
	operator TEXT NOT NULL CHECK (operator IN ('reuse', 'replay', 'worker')),
	capability TEXT NOT NULL
		CHECK (capability IN ('', 'implementation_location', 'runtime_flow', 'focused_tests')),
	count INTEGER NOT NULL CHECK (count >= 1),
	latency_mean REAL NOT NULL,
	latency_m2 REAL NOT NULL,
	cost_mean REAL NOT NULL,
	cost_m2 REAL NOT NULL,
	tokens_mean REAL NOT NULL,
	tokens_m2 REAL NOT NULL,
	updated_at TEXT NOT NULL,
	PRIMARY KEY (operator, capability)
) STRICT;

-- The observations recorded before this migration become the pooled rows;
-- the observations table is no longer written.
INSERT INTO operator_costs (operator, capability, count, latency_mean, latency_m2, cost_mean, cost_m2,
	tokens_mean, tokens_m2, updated_at)
SELECT o.operator, '', count(*),
	m.latency, sum((o.latency_ms - m.latency) * (o.latency_ms - m.latency)),
	m.cost, sum((o.cost_usd - m.cost) * (o.cost_usd - m.cost)),
	m.tokens, sum((o.tokens - m.tokens) * (o.tokens - m.tokens)),
	max(o.created_at)
FROM observations o
JOIN (SELECT operator, avg(latency_ms) AS latency, avg(cost_usd) AS cost, avg(tokens) AS tokens
	FROM observations GROUP BY operator) m ON m.operator = o.operator
GROUP BY o.operator;

-- Claim sources start from the subject's claims and reach the certificates
-- that carry them.
CREATE INDEX certificate_claims_claim ON certificate_claims (claim_id);

-- "Not superseded by a replay" looks for an artifact whose origin is the
-- candidate.
CREATE INDEX artifacts_origin ON artifacts (origin_artifact_id);

-- The estimate of the worker tokens an obligation costs (what a hit saved,
-- 0009_resolution_accounting) reads the newest completed runs.
CREATE INDEX worker_runs_status ON worker_runs (status, run_id);
