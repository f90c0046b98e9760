-- 0015_session_digests: what a session's transport speaks and what its
-- workers are sent, as digests.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- A session retains its route set, semantic definition and main model
-- (sessions, 0002) and, from now on, the digest of its transport's
-- contract (its name, protocol and request schemas or tools), of the
-- @@need marker grammar when its transport reads markers ('' otherwise),
-- and the revision and digest of the prompt profile (the worker prompts
-- and output schemas). The row is written with the session's, in one
-- transaction; a session started before this migration has none: not
-- known. A session resumed under a changed one says so.
CREATE TABLE session_digests (
	session_id TEXT PRIMARY KEY REFERENCES sessions (session_id),
	transport_digest TEXT NOT NULL,
	grammar_digest TEXT NOT NULL,
	prompt_profile_revision INTEGER NOT NULL CHECK (prompt_profile_revision >= 1),
	prompt_profile_digest TEXT NOT NULL
) STRICT;
