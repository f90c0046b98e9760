-- 0008_lifecycle: the change lifecycle — its projection, the append-only
-- journal of its transitions, the worker artifacts the transitions cite,
-- approvals, and the apply journal.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- The projection: one row per lifecycle, the canonical LifecycleState and
-- its digest (the compare-and-swap token of every transition). phase,
-- status and seq repeat fields of state for listing; every read checks that
-- they agree with it and that replaying change_events rebuilds it exactly.
-- request, needs and test_plans are what the freeze holds digests of.
CREATE TABLE change_lifecycles (
	lifecycle_id TEXT PRIMARY KEY
		CHECK (length(lifecycle_id) = 28 AND substr(lifecycle_id, 1, 4) = 'lcy_'),
	change_id TEXT NOT NULL UNIQUE
		CHECK (length(change_id) = 28 AND substr(change_id, 1, 4) = 'chg_'),
	root TEXT NOT NULL,
	session_id TEXT NOT NULL REFERENCES sessions (session_id),
	request TEXT NOT NULL CHECK (json_valid(request)),
	needs TEXT NOT NULL CHECK (json_type(needs) = 'array'),
	test_plans TEXT NOT NULL CHECK (json_type(test_plans) = 'array'),
	seq INTEGER NOT NULL CHECK (seq >= 1),
	phase TEXT NOT NULL CHECK (phase IN ('explore', 'implement', 'test', 'review', 'verify', 'apply')),
	status TEXT NOT NULL CHECK (status IN ('running', 'awaiting_approval', 'approved', 'applying',
		'applied', 'rejected', 'inconclusive', 'failed', 'cancelled')),
	state TEXT NOT NULL CHECK (json_valid(state)),
	state_digest TEXT NOT NULL CHECK (length(state_digest) = 67 AND substr(state_digest, 1, 3) = 'b3:'),
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
) STRICT;

-- Listing by repository; created_at never changes, so a transition does
-- not rewrite the index.
CREATE INDEX change_lifecycles_root ON change_lifecycles (root, created_at);

CREATE TRIGGER change_lifecycles_immutable BEFORE UPDATE OF lifecycle_id, change_id, root, session_id,
	request, needs, test_plans, created_at ON change_lifecycles
BEGIN
	SELECT RAISE(ABORT, 'change_lifecycles: what a lifecycle froze is immutable');
END;

-- Each transition moves the projection exactly one event forward.
CREATE TRIGGER change_lifecycles_forward BEFORE UPDATE OF seq ON change_lifecycles
	WHEN NEW.seq != OLD.seq + 1
BEGIN
	SELECT RAISE(ABORT, 'change_lifecycles: a transition moves seq one forward');
END;

CREATE TRIGGER change_lifecycles_no_delete BEFORE DELETE ON change_lifecycles
BEGIN
	SELECT RAISE(ABORT, 'change_lifecycles: rows are never deleted');
END;

-- The journal: every accepted event, appended in the transaction that moves
-- the projection. payload is the event's canonical JSON, payload_digest its
-- LifecycleEventDigest, prev_digest and state_digest the state digests
-- before and after it.
CREATE TABLE change_events (
	lifecycle_id TEXT NOT NULL REFERENCES change_lifecycles (lifecycle_id),
	seq INTEGER NOT NULL CHECK (seq >= 1),
	kind TEXT NOT NULL CHECK (kind IN ('created', 'explore_completed', 'implement_completed',
		'test_completed', 'review_completed', 'verify_completed', 'phase_failed', 'approval_granted',
		'apply_started', 'apply_conflicted', 'apply_completed', 'apply_rolled_back', 'cancel_requested')),
	payload TEXT NOT NULL CHECK (json_valid(payload)),
	payload_digest TEXT NOT NULL CHECK (length(payload_digest) = 67 AND substr(payload_digest, 1, 3) = 'b3:'),
	prev_digest TEXT NOT NULL,
	state_digest TEXT NOT NULL CHECK (length(state_digest) = 67 AND substr(state_digest, 1, 3) = 'b3:'),
	created_at TEXT NOT NULL,
	PRIMARY KEY (lifecycle_id, seq)
) STRICT, WITHOUT ROWID; -- one b-tree: an append writes one page, not a table's and an index's

CREATE TRIGGER change_events_append BEFORE INSERT ON change_events
	WHEN NEW.seq != (SELECT coalesce(max(seq), 0) + 1 FROM change_events WHERE lifecycle_id = NEW.lifecycle_id)
BEGIN
	SELECT RAISE(ABORT, 'change_events: events are appended in order');
END;

CREATE TRIGGER change_events_immutable BEFORE UPDATE ON change_events
BEGIN
	SELECT RAISE(ABORT, 'change_events: the journal is append-only');
END;

CREATE TRIGGER change_events_no_delete BEFORE DELETE ON change_events
BEGIN
	SELECT RAISE(ABORT, 'change_events: the journal is append-only');
END;

-- Worker artifacts, persisted and validated before the transition that
-- cites them: one row per invocation (the deterministic id of a lifecycle,
-- phase and attempt). event is the completion (or phase_failed) event the
-- kernel commits for it; blobs hold what the event only names (patch
-- contents, test output, the verifier's reasons); raw_output is the
-- worker's final message, never shown.
CREATE TABLE lifecycle_artifacts (
	invocation TEXT PRIMARY KEY CHECK (length(invocation) = 67 AND substr(invocation, 1, 3) = 'b3:'),
	lifecycle_id TEXT NOT NULL REFERENCES change_lifecycles (lifecycle_id),
	phase TEXT NOT NULL CHECK (phase IN ('explore', 'implement', 'test', 'review', 'verify')),
	attempt INTEGER NOT NULL CHECK (attempt >= 1),
	kind TEXT NOT NULL,
	event TEXT NOT NULL CHECK (json_valid(event)),
	event_digest TEXT NOT NULL,
	artifact_id TEXT NOT NULL,
	blobs TEXT NOT NULL CHECK (json_valid(blobs)),
	raw_output TEXT NOT NULL,
	thread_identity TEXT NOT NULL,
	usage TEXT NOT NULL CHECK (json_valid(usage)),
	created_at TEXT NOT NULL,
	UNIQUE (lifecycle_id, phase, attempt)
) STRICT;

CREATE TRIGGER lifecycle_artifacts_immutable BEFORE UPDATE ON lifecycle_artifacts
BEGIN
	SELECT RAISE(ABORT, 'lifecycle_artifacts: rows are immutable');
END;

CREATE TRIGGER lifecycle_artifacts_no_delete BEFORE DELETE ON lifecycle_artifacts
BEGIN
	SELECT RAISE(ABORT, 'lifecycle_artifacts: rows are never deleted');
END;

-- Approvals of a patch to apply, bound to the patch, the verification and
-- the subject digest the user was shown: the lifecycle digest awaiting
-- approval, or for a change without a lifecycle its projection digest.
CREATE TABLE approvals (
	approval_id TEXT PRIMARY KEY CHECK (length(approval_id) = 67 AND substr(approval_id, 1, 3) = 'b3:'),
	change_id TEXT NOT NULL REFERENCES changes (change_id),
	lifecycle_id TEXT REFERENCES change_lifecycles (lifecycle_id),
	patch_id TEXT NOT NULL,
	verification_id TEXT NOT NULL,
	subject_digest TEXT NOT NULL,
	approved_by TEXT NOT NULL,
	created_at TEXT NOT NULL
) STRICT;

CREATE INDEX approvals_change ON approvals (change_id, created_at);

CREATE TRIGGER approvals_immutable BEFORE UPDATE ON approvals
BEGIN
	SELECT RAISE(ABORT, 'approvals: rows are immutable');
END;

CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals
BEGIN
	SELECT RAISE(ABORT, 'approvals: rows are never deleted');
END;

-- The apply journal: the intent (every file with its digests before and
-- after, and the content it had before), then each file written or
-- restored, then done or rolled back. With this row and the work tree a
-- crashed apply is finished or undone, all or nothing, on the next open.
-- An apply that was rolled back may be tried again: the same intent then
-- gets a new apply_id.
CREATE TABLE change_applies (
	apply_id INTEGER PRIMARY KEY,
	intent_id TEXT NOT NULL CHECK (length(intent_id) = 67 AND substr(intent_id, 1, 3) = 'b3:'),
	change_id TEXT NOT NULL REFERENCES changes (change_id),
	lifecycle_id TEXT REFERENCES change_lifecycles (lifecycle_id),
	approval_id TEXT NOT NULL REFERENCES approvals (approval_id),
	root TEXT NOT NULL,
	files TEXT NOT NULL CHECK (json_type(files) = 'array'),
	status TEXT NOT NULL CHECK (status IN ('intent', 'done', 'rolled_back')),
	cause TEXT NOT NULL DEFAULT '' CHECK (cause IN ('', 'drift', 'crash_recovered', 'io')),
	created_at TEXT NOT NULL,
	finished_at TEXT
) STRICT;

CREATE INDEX change_applies_open ON change_applies (root, status);

CREATE TRIGGER change_applies_immutable BEFORE UPDATE OF apply_id, intent_id, change_id, lifecycle_id, approval_id,
	root, files, created_at ON change_applies
BEGIN
	SELECT RAISE(ABORT, 'change_applies: the intent is immutable');
END;

-- An apply ends once: intent -> done | rolled_back.
CREATE TRIGGER change_applies_once BEFORE UPDATE OF status ON change_applies
	WHEN OLD.status != 'intent' OR NEW.status = 'intent'
BEGIN
	SELECT RAISE(ABORT, 'change_applies: an apply ends once');
END;

CREATE TRIGGER change_applies_no_delete BEFORE DELETE ON change_applies
BEGIN
	SELECT RAISE(ABORT, 'change_applies: rows are never deleted');
END;

CREATE TABLE change_apply_files (
	apply_id INTEGER NOT NULL REFERENCES change_applies (apply_id),
	ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
	step TEXT NOT NULL CHECK (step IN ('written', 'restored')),
	path TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (apply_id, ordinal, step)
) STRICT;

CREATE TRIGGER change_apply_files_immutable BEFORE UPDATE ON change_apply_files
BEGIN
	SELECT RAISE(ABORT, 'change_apply_files: rows are immutable');
END;

CREATE TRIGGER change_apply_files_no_delete BEFORE DELETE ON change_apply_files
BEGIN
	SELECT RAISE(ABORT, 'change_apply_files: rows are never deleted');
END;
