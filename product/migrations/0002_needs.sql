-- 0002_needs: sessions, compiled needs and the session ledger.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- A session freezes its semantic definition, transport, enabled routes and
-- main model when it starts; later needs are judged against that snapshot.
CREATE TABLE sessions (
	session_id TEXT PRIMARY KEY,
	definition_id TEXT NOT NULL REFERENCES definitions (definition_id),
	transport TEXT NOT NULL,
	routes TEXT NOT NULL CHECK (json_type(routes) = 'array'),
	main_model TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL
) STRICT;

-- A compiled need (its NeedIR as canonical JSON), addressed by need_id, the
-- content id of that IR. The same need asked twice is one row.
CREATE TABLE needs (
	need_id TEXT PRIMARY KEY
		CHECK (length(need_id) = 67
			AND substr(need_id, 1, 3) = 'b3:'
			AND NOT substr(need_id, 4) GLOB '*[^0-9a-f]*'),
	definition_id TEXT NOT NULL REFERENCES definitions (definition_id),
	route TEXT NOT NULL,
	subject_kind TEXT NOT NULL,
	subject_name TEXT NOT NULL,
	ir TEXT NOT NULL CHECK (json_valid(ir)),
	created_at TEXT NOT NULL
) STRICT;

-- Candidate lookup finds earlier needs about the same subject.
CREATE INDEX needs_subject ON needs (subject_kind, subject_name);

-- The session ledger: the needs of a session in the order they were asked,
-- each with its relation to the earlier ones (repeat, residual, …) and the
-- task wording, which is carried for workers but is not part of identity.
CREATE TABLE steps (
	session_id TEXT NOT NULL REFERENCES sessions (session_id),
	ordinal INTEGER NOT NULL CHECK (ordinal >= 1),
	need_id TEXT NOT NULL REFERENCES needs (need_id),
	relation TEXT NOT NULL,
	task TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	PRIMARY KEY (session_id, ordinal)
) STRICT;
