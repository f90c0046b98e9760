-- 0005_profiles: role profiles with immutable revisions, and what an MCP
-- session freezes when it connects.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- A role profile says how workers run (model, effort, limits, sandbox per
-- role). A change is a new revision; revisions never change.
CREATE TABLE profile_revisions (
	profile_id TEXT NOT NULL,
	revision INTEGER NOT NULL CHECK (revision >= 1),
	body TEXT NOT NULL CHECK (json_valid(body)),
	digest TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (profile_id, revision)
) STRICT;

-- What a session froze at its start besides its definition, transport,
-- routes and main model (0002): the repository, the role-profile revision,
-- the worker policy and the negotiated protocol.
CREATE TABLE session_freezes (
	session_id TEXT PRIMARY KEY REFERENCES sessions (session_id),
	repository TEXT NOT NULL,
	profile_id TEXT NOT NULL,
	profile_revision INTEGER NOT NULL,
	worker_policy TEXT NOT NULL CHECK (json_valid(worker_policy)),
	protocol_version TEXT NOT NULL,
	FOREIGN KEY (profile_id, profile_revision) REFERENCES profile_revisions (profile_id, revision)
) STRICT;
