-- 0001_foundation: semantic definitions and settings.
--
-- Shipped migrations are immutable: the store records this file's digest and
-- refuses to open a database whose applied text differs. Change the schema by
-- adding a new numbered file.

-- A semantic definition (route table, grammar, compiler rules) that needs and
-- sessions were compiled under, addressed by the content id of its canonical
-- JSON body.
CREATE TABLE definitions (
	definition_id TEXT PRIMARY KEY
		CHECK (length(definition_id) = 67
			AND substr(definition_id, 1, 3) = 'b3:'
			AND NOT substr(definition_id, 4) GLOB '*[^0-9a-f]*'),
	compiler_version TEXT NOT NULL,
	body TEXT NOT NULL CHECK (json_valid(body)),
	created_at TEXT NOT NULL
) STRICT;

-- Profile-wide settings, one value per key.
CREATE TABLE settings (
	key TEXT PRIMARY KEY,
	value TEXT NOT NULL,
	updated_at TEXT NOT NULL
) STRICT;
