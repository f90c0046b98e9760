-- 0013_current_artifacts: which artifact of a replay's lineage speaks for
-- it, whichever way the source moved.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- A proof replay whose cited text moved certifies a new artifact with the
-- old one as its origin; the old one then no longer answers a need. Until
-- now "superseded" was read off artifacts.origin_artifact_id, which records
-- lineage only forwards: when the source went back to where the old text
-- stood (a branch switched there and back), the replay certified the old
-- artifact again, which stayed superseded while its successor, stale, was
-- replayed by every need. A superseded artifact is now a row here, written
-- by the replay that supersedes it and removed when the artifact is proven
-- again.
CREATE TABLE superseded_artifacts (
	artifact_id TEXT PRIMARY KEY REFERENCES artifacts (artifact_id),
	by_artifact_id TEXT NOT NULL REFERENCES artifacts (artifact_id),
	CHECK (artifact_id <> by_artifact_id)
) STRICT;

-- What origins said so far, the newest successor last.
INSERT INTO superseded_artifacts (artifact_id, by_artifact_id)
	SELECT origin_artifact_id, artifact_id FROM artifacts
	WHERE origin_artifact_id IS NOT NULL AND origin_artifact_id <> artifact_id ORDER BY rowid
	ON CONFLICT (artifact_id) DO UPDATE SET by_artifact_id = excluded.by_artifact_id;
