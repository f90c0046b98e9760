-- 0003_evidence: certified evidence, validation attempts, resolutions,
-- economic observations and the persistent stat cache.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- An artifact is a proposal (implementation_location, runtime_flow or
-- focused_tests) that trusted validators certified against a repository.
-- body is the canonical proposal JSON; artifact_id its content id. An artifact
-- re-certified at shifted lines by proof replay is a new artifact whose
-- origin is the one it was replayed from.
CREATE TABLE artifacts (
	artifact_id TEXT PRIMARY KEY
		CHECK (length(artifact_id) = 67 AND substr(artifact_id, 1, 3) = 'b3:'),
	root TEXT NOT NULL,
	kind TEXT NOT NULL CHECK (kind IN ('implementation_location', 'runtime_flow', 'focused_tests')),
	subject_kind TEXT NOT NULL,
	subject_name TEXT NOT NULL,
	body TEXT NOT NULL CHECK (json_valid(body)),
	origin_artifact_id TEXT REFERENCES artifacts (artifact_id),
	created_at TEXT NOT NULL
) STRICT;

CREATE INDEX artifacts_subject ON artifacts (root, subject_kind, subject_name, kind);

-- A certificate binds what was validated to the facets it satisfies, the
-- validator version and level (ast or lexical) and, through dependencies,
-- the exact file contents it was checked against. Scope 'artifact'
-- certifies one artifact; scope 'need' binds the artifact certificates that
-- answered a need (its members), so the same need can be answered again
-- exactly while every member is still fresh.
CREATE TABLE certificates (
	certificate_id TEXT PRIMARY KEY
		CHECK (length(certificate_id) = 67 AND substr(certificate_id, 1, 3) = 'b3:'),
	root TEXT NOT NULL,
	scope TEXT NOT NULL CHECK (scope IN ('artifact', 'need')),
	artifact_id TEXT REFERENCES artifacts (artifact_id),
	need_id TEXT REFERENCES needs (need_id),
	validator_version TEXT NOT NULL,
	level TEXT NOT NULL CHECK (level IN ('ast', 'lexical', 'bundle')),
	body TEXT NOT NULL CHECK (json_valid(body)),
	created_at TEXT NOT NULL,
	CHECK ((scope = 'artifact') = (artifact_id IS NOT NULL)),
	CHECK ((scope = 'need') = (need_id IS NOT NULL))
) STRICT;

CREATE INDEX certificates_artifact ON certificates (artifact_id);
CREATE INDEX certificates_need ON certificates (root, need_id);

-- The artifact certificates a need certificate binds.
CREATE TABLE certificate_members (
	certificate_id TEXT NOT NULL REFERENCES certificates (certificate_id),
	member_id TEXT NOT NULL REFERENCES certificates (certificate_id),
	PRIMARY KEY (certificate_id, member_id)
) STRICT;

-- What a certificate depends on: a file's content digest, or (for
-- exhaustive or negative evidence) a directory listing's digest. Fresh ⇔
-- every dependency digest is unchanged in the current source.
CREATE TABLE dependencies (
	certificate_id TEXT NOT NULL REFERENCES certificates (certificate_id),
	kind TEXT NOT NULL CHECK (kind IN ('file', 'dir')),
	path TEXT NOT NULL,
	digest TEXT NOT NULL,
	PRIMARY KEY (certificate_id, kind, path)
) STRICT;

-- Claims are atomic facts extracted from certified artifacts ("Run is
-- declared in cmd.go", "step 1 calls step 2"). Their ids do not depend on
-- line numbers, so a replayed certificate links the same claims at new lines.
CREATE TABLE claims (
	claim_id TEXT PRIMARY KEY
		CHECK (length(claim_id) = 67 AND substr(claim_id, 1, 3) = 'b3:'),
	kind TEXT NOT NULL,
	subject_kind TEXT NOT NULL,
	subject_name TEXT NOT NULL,
	body TEXT NOT NULL CHECK (json_valid(body)),
	created_at TEXT NOT NULL
) STRICT;

CREATE INDEX claims_subject ON claims (subject_kind, subject_name);

-- Where a certificate found each claim.
CREATE TABLE certificate_claims (
	certificate_id TEXT NOT NULL REFERENCES certificates (certificate_id),
	claim_id TEXT NOT NULL REFERENCES claims (claim_id),
	path TEXT NOT NULL,
	start_line INTEGER NOT NULL,
	end_line INTEGER NOT NULL,
	PRIMARY KEY (certificate_id, claim_id)
) STRICT;

-- Every validation of a proposal, certified or rejected, with the reasons.
-- A rejected proposal exists only here: it is never served.
CREATE TABLE attempts (
	attempt_id INTEGER PRIMARY KEY,
	root TEXT NOT NULL,
	need_id TEXT REFERENCES needs (need_id),
	source TEXT NOT NULL CHECK (source IN ('operator', 'worker', 'replay')),
	proposal TEXT NOT NULL,
	status TEXT NOT NULL CHECK (status IN ('certified', 'rejected')),
	reasons TEXT NOT NULL CHECK (json_type(reasons) = 'array'),
	artifact_id TEXT REFERENCES artifacts (artifact_id),
	certificate_id TEXT REFERENCES certificates (certificate_id),
	created_at TEXT NOT NULL
) STRICT;

-- Every answer to a need: the structured result exactly as returned.
CREATE TABLE resolutions (
	resolution_id INTEGER PRIMARY KEY,
	root TEXT NOT NULL,
	session_id TEXT REFERENCES sessions (session_id),
	ordinal INTEGER,
	need_id TEXT NOT NULL REFERENCES needs (need_id),
	kind TEXT NOT NULL,
	certificate_id TEXT REFERENCES certificates (certificate_id),
	plan_id TEXT NOT NULL,
	plan TEXT NOT NULL CHECK (json_valid(plan)),
	result TEXT NOT NULL CHECK (json_valid(result)),
	result_digest TEXT NOT NULL,
	worker_spawned INTEGER NOT NULL CHECK (worker_spawned IN (0, 1)),
	created_at TEXT NOT NULL
) STRICT;

CREATE INDEX resolutions_need ON resolutions (need_id);

-- Observed cost of plan operators, for economic selection among valid plans.
CREATE TABLE observations (
	observation_id INTEGER PRIMARY KEY,
	operator TEXT NOT NULL CHECK (operator IN ('reuse', 'replay', 'worker')),
	tokens INTEGER NOT NULL CHECK (tokens >= 0),
	cost_usd REAL NOT NULL CHECK (cost_usd >= 0),
	latency_ms REAL NOT NULL CHECK (latency_ms >= 0),
	created_at TEXT NOT NULL
) STRICT;

-- The persistent stat cache: (size, mtime, ctime, inode) -> content digest
-- per repository file, trusted only when it is not racily clean.
CREATE TABLE file_stats (
	root TEXT NOT NULL,
	path TEXT NOT NULL,
	size INTEGER NOT NULL,
	mtime_ns INTEGER NOT NULL,
	ctime_ns INTEGER NOT NULL,
	inode INTEGER NOT NULL,
	digest TEXT NOT NULL,
	recorded_ns INTEGER NOT NULL,
	PRIMARY KEY (root, path)
) STRICT;
