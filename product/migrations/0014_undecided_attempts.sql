-- 0014_undecided_attempts: proposals the validators could not decide.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- A validation has three outcomes: certified (proven), rejected (proven
-- false) and undecided: the proof needs what this machine lacks — types
-- of a dependency missing from the module cache, a working sandbox, a Go
-- toolchain, a run within its deadline. An undecided proposal is never a
-- rejection, so it is kept here and not in attempts; causes name what is
-- missing. It is tried again when a need about its subject could use it
-- (or at a refresh); decided_attempt_id then points at the attempt that
-- decided it.
CREATE TABLE undecided_attempts (
	undecided_id INTEGER PRIMARY KEY,
	root TEXT NOT NULL,
	need_id TEXT REFERENCES needs (need_id),
	source TEXT NOT NULL CHECK (source IN ('operator', 'worker', 'replay')),
	kind TEXT NOT NULL CHECK (kind IN ('implementation_location', 'runtime_flow', 'focused_tests')),
	subject_kind TEXT NOT NULL,
	subject_name TEXT NOT NULL,
	proposal TEXT NOT NULL,
	causes TEXT NOT NULL CHECK (json_type(causes) = 'array'),
	decided_attempt_id INTEGER REFERENCES attempts (attempt_id),
	created_at TEXT NOT NULL
) STRICT;

CREATE INDEX undecided_attempts_subject ON undecided_attempts (root, subject_kind, subject_name, kind)
	WHERE decided_attempt_id IS NULL;
