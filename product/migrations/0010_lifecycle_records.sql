-- 0010_lifecycle_records: what a lifecycle adapter's worker produced,
-- recorded the moment it completed, and the abandonment of an interrupted
-- apply that recovery cannot decide.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- One row per completed worker run of a lifecycle invocation (the
-- deterministic id of a lifecycle, phase and attempt), written by the
-- adapter before it returns to the kernel: an adapter invoked again with
-- the same invocation id, because the kernel was killed before it
-- persisted the artifact, returns this row and runs nothing. part numbers
-- the units of one invocation that are recorded apart (explore records
-- each need it resolved; every other phase one part, 0). outcome failed
-- keeps a worker that ran and failed (its failure class and message), so
-- a failure is not paid for twice either. result is the adapter's result
-- as JSON; wall_ms the time the run took, which the lifecycle's budget
-- still counts when the result is returned again.
CREATE TABLE invocation_results (
	invocation TEXT NOT NULL CHECK (length(invocation) = 67 AND substr(invocation, 1, 3) = 'b3:'),
	part INTEGER NOT NULL CHECK (part >= 0),
	lifecycle_id TEXT NOT NULL REFERENCES change_lifecycles (lifecycle_id),
	phase TEXT NOT NULL CHECK (phase IN ('explore', 'implement', 'test', 'review', 'verify')),
	attempt INTEGER NOT NULL CHECK (attempt >= 1),
	outcome TEXT NOT NULL CHECK (outcome IN ('completed', 'failed')),
	failure TEXT NOT NULL CHECK (failure IN ('', 'crashed', 'timeout', 'unavailable', 'invalid_result', 'fail_closed')),
	detail TEXT NOT NULL,
	result TEXT NOT NULL CHECK (json_valid(result)),
	wall_ms INTEGER NOT NULL CHECK (wall_ms >= 0),
	created_at TEXT NOT NULL,
	PRIMARY KEY (invocation, part),
	CHECK ((outcome = 'failed') = (failure != ''))
) STRICT;

CREATE TRIGGER invocation_results_immutable BEFORE UPDATE ON invocation_results
BEGIN
	SELECT RAISE(ABORT, 'invocation_results: rows are immutable');
END;

CREATE TRIGGER invocation_results_no_delete BEFORE DELETE ON invocation_results
BEGIN
	SELECT RAISE(ABORT, 'invocation_results: rows are never deleted');
END;

-- The runs of a lifecycle invocation's worker, as events: started before
-- the worker runs (committed, so a kill cannot hide it), stopped when the
-- run ended cleanly without a result (cancelled, or the work tree moved
-- under it; it may start again). An invocation whose last event is started
-- and that has no invocation_results row was interrupted by a crash: its
-- side effects happened, or some of them, and its result is lost. It is
-- never run again under its id: it is recorded as failed (crashed), and the
-- lifecycle's retry runs the phase under a new invocation id, in its
-- journal.
CREATE TABLE invocation_runs (
	invocation TEXT NOT NULL CHECK (length(invocation) = 67 AND substr(invocation, 1, 3) = 'b3:'),
	part INTEGER NOT NULL CHECK (part >= 0),
	seq INTEGER NOT NULL CHECK (seq >= 1),
	event TEXT NOT NULL CHECK (event IN ('started', 'stopped')),
	lifecycle_id TEXT NOT NULL REFERENCES change_lifecycles (lifecycle_id),
	phase TEXT NOT NULL CHECK (phase IN ('explore', 'implement', 'test', 'review', 'verify')),
	attempt INTEGER NOT NULL CHECK (attempt >= 1),
	pid INTEGER NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (invocation, part, seq),
	CHECK ((event = 'started') = (seq % 2 = 1))
) STRICT;

CREATE TRIGGER invocation_runs_immutable BEFORE UPDATE ON invocation_runs
BEGIN
	SELECT RAISE(ABORT, 'invocation_runs: rows are immutable');
END;

CREATE TRIGGER invocation_runs_no_delete BEFORE DELETE ON invocation_runs
BEGIN
	SELECT RAISE(ABORT, 'invocation_runs: rows are never deleted');
END;

-- An interrupted apply the user abandoned (needle change apply --abandon):
-- recovery could not finish or undo it because a file holds neither its
-- content before nor after the patch. Written in the transaction that ends
-- the apply as rolled_back (cause crash_recovered): files says, per file of
-- the intent, what was found (before, after or changed) and whether it was
-- restored (only a file holding exactly what the apply wrote is).
CREATE TABLE change_apply_abandons (
	apply_id INTEGER PRIMARY KEY REFERENCES change_applies (apply_id),
	abandoned_by TEXT NOT NULL,
	files TEXT NOT NULL CHECK (json_type(files) = 'array'),
	created_at TEXT NOT NULL
) STRICT;

CREATE TRIGGER change_apply_abandons_immutable BEFORE UPDATE ON change_apply_abandons
BEGIN
	SELECT RAISE(ABORT, 'change_apply_abandons: rows are immutable');
END;

CREATE TRIGGER change_apply_abandons_no_delete BEFORE DELETE ON change_apply_abandons
BEGIN
	SELECT RAISE(ABORT, 'change_apply_abandons: rows are never deleted');
END;
