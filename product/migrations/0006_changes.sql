-- 0006_changes: supervised changes — the immutable request, the patches a
-- patch worker produced, and the verdicts of independent verifiers.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- A change: the prepare_change request as canonical JSON, frozen with the
-- source snapshot the patch is based on and the session's role profile.
-- Only the projection (status, current patch revision, repairs used)
-- moves; a trigger keeps the rest immutable.
CREATE TABLE changes (
	change_id TEXT PRIMARY KEY
		CHECK (length(change_id) = 28 AND substr(change_id, 1, 4) = 'chg_'),
	session_id TEXT NOT NULL REFERENCES sessions (session_id),
	root TEXT NOT NULL,
	request_id TEXT NOT NULL,
	request TEXT NOT NULL CHECK (json_valid(request)),
	base_snapshot TEXT NOT NULL,
	profile_id TEXT NOT NULL,
	profile_revision INTEGER NOT NULL,
	status TEXT NOT NULL CHECK (status IN ('prepared', 'rejected', 'failed',
		'verified', 'verification_rejected', 'repairable', 'inconclusive')),
	current_revision INTEGER NOT NULL DEFAULT 0 CHECK (current_revision BETWEEN 0 AND 2),
	repairs_used INTEGER NOT NULL DEFAULT 0 CHECK (repairs_used BETWEEN 0 AND 1),
	created_at TEXT NOT NULL,
	FOREIGN KEY (profile_id, profile_revision) REFERENCES profile_revisions (profile_id, revision)
) STRICT;

CREATE TRIGGER changes_immutable BEFORE UPDATE OF change_id, session_id, root, request_id, request,
	base_snapshot, profile_id, profile_revision, created_at ON changes
BEGIN
	SELECT RAISE(ABORT, 'changes: the request is immutable');
END;

CREATE TRIGGER changes_no_delete BEFORE DELETE ON changes
BEGIN
	SELECT RAISE(ABORT, 'changes: rows are never deleted');
END;

-- The projection only moves forward: a consumed repair is never given back
-- and the patch in force never goes back to an earlier revision.
CREATE TRIGGER changes_forward BEFORE UPDATE OF repairs_used, current_revision ON changes
	WHEN NEW.repairs_used < OLD.repairs_used OR NEW.current_revision < OLD.current_revision
BEGIN
	SELECT RAISE(ABORT, 'changes: repairs and revisions only move forward');
END;

-- One patch attempt of a change: revision 1 from prepare_change, 2 from
-- the one repair. operations holds every file's full new content (the
-- blobs); raw_output is the worker's final message. A rejected attempt is
-- kept with its reasons and no patch_id.
CREATE TABLE patches (
	change_id TEXT NOT NULL REFERENCES changes (change_id),
	revision INTEGER NOT NULL CHECK (revision IN (1, 2)),
	status TEXT NOT NULL CHECK (status IN ('accepted', 'rejected', 'failed')),
	patch_id TEXT CHECK (patch_id IS NULL OR (length(patch_id) = 67 AND substr(patch_id, 1, 3) = 'b3:')),
	operations TEXT NOT NULL CHECK (json_type(operations) = 'array'),
	report TEXT NOT NULL CHECK (json_valid(report)),
	reasons TEXT NOT NULL CHECK (json_type(reasons) = 'array'),
	raw_output TEXT NOT NULL,
	invocation TEXT NOT NULL,
	usage TEXT NOT NULL CHECK (json_valid(usage)),
	created_at TEXT NOT NULL,
	PRIMARY KEY (change_id, revision),
	CHECK ((status = 'accepted') = (patch_id IS NOT NULL))
) STRICT;

CREATE TRIGGER patches_immutable BEFORE UPDATE ON patches
BEGIN
	SELECT RAISE(ABORT, 'patches: rows are immutable');
END;

CREATE TRIGGER patches_no_delete BEFORE DELETE ON patches
BEGIN
	SELECT RAISE(ABORT, 'patches: rows are never deleted');
END;

-- A verification of one patch revision by an independent read-only
-- verifier: at most two per change (the first, and the one after the
-- repair).
CREATE TABLE verifications (
	change_id TEXT NOT NULL REFERENCES changes (change_id),
	ordinal INTEGER NOT NULL CHECK (ordinal IN (1, 2)),
	patch_revision INTEGER NOT NULL,
	verdict TEXT NOT NULL CHECK (verdict IN ('verified', 'rejected', 'repairable', 'inconclusive')),
	body TEXT NOT NULL CHECK (json_valid(body)),
	raw_output TEXT NOT NULL,
	invocation TEXT NOT NULL,
	usage TEXT NOT NULL CHECK (json_valid(usage)),
	created_at TEXT NOT NULL,
	PRIMARY KEY (change_id, ordinal),
	FOREIGN KEY (change_id, patch_revision) REFERENCES patches (change_id, revision)
) STRICT;

CREATE TRIGGER verifications_immutable BEFORE UPDATE ON verifications
BEGIN
	SELECT RAISE(ABORT, 'verifications: rows are immutable');
END;

CREATE TRIGGER verifications_no_delete BEFORE DELETE ON verifications
BEGIN
	SELECT RAISE(ABORT, 'verifications: rows are never deleted');
END;
