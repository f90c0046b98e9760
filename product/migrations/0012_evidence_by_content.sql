-- 0012_evidence_by_content: evidence is looked up by what it is about,
-- never by where the repository that first certified it lives.
--
-- Shipped migrations are immutable; see 0001_foundation.sql.

-- Artifact, certificate and claim ids are content ids: the same evidence
-- certified in two clones of a repository is one row. Every checkout finds
-- it by subject (artifacts) and by need (need certificates) and checks its
-- freshness against its own files; artifacts.root and certificates.root
-- only record the checkout that stored the row first. Certificates stored
-- before this migration carry that root in their body (and so in their id);
-- they stay valid and are found like the others.
CREATE INDEX artifacts_about ON artifacts (subject_kind, subject_name, kind);
CREATE INDEX certificates_of_need ON certificates (need_id, scope);

-- The indexes that led with root serve no lookup any more.
DROP INDEX artifacts_subject;
DROP INDEX certificates_need;
