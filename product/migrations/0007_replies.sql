-- 0007_replies: what Needle answered to the @@need markers of a main model
-- that runs in Codex (the Stop hook, needle exec).
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- One row per reply that made the main model continue, in the order of the
-- user turn it continued (turn_id: the Codex turn of a hook, the first
-- turn of a needle exec run). The rows bound the replies of a turn
-- (ledger.go), so a model that asks for ever is answered a bounded number
-- of times. An invalid marker has no need; a resolved one names the need
-- and the session step it made. final marks the last reply of a turn.
CREATE TABLE replies (
	session_id TEXT NOT NULL REFERENCES sessions (session_id),
	turn_id TEXT NOT NULL,
	ordinal INTEGER NOT NULL CHECK (ordinal >= 1),
	kind TEXT NOT NULL CHECK (kind IN ('context', 'bypass', 'invalid')),
	need_id TEXT REFERENCES needs (need_id),
	step_ordinal INTEGER,
	final INTEGER NOT NULL CHECK (final IN (0, 1)),
	text_digest TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (session_id, turn_id, ordinal),
	CHECK ((kind = 'invalid') = (need_id IS NULL)),
	CHECK ((need_id IS NULL) = (step_ordinal IS NULL)),
	FOREIGN KEY (session_id, step_ordinal) REFERENCES steps (session_id, ordinal)
) STRICT;
