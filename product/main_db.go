package product

import (
	"fmt"
	"path/filepath"
)

const usageDBCheck = `Usage: needle db check [--data-dir DIR]

Open the Needle store DIR/needle.db, creating it or applying pending
migrations, verify its PRAGMAs (WAL, foreign keys, busy timeout), its
application_id and the digest of every applied migration against this
binary, and print the schema version.

A database whose applied migration text no longer matches this binary, or
that is newer than this binary, is refused (exit 1) and left unchanged.
`

func (c *cli) dbCheck(args []string) int {
	fs := c.flags("db check")
	dataDir := fs.String("data-dir", "", "")
	if code, ok := c.parse(fs, usageDBCheck, args); !ok {
		return code
	}
	if *dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle db check: --data-dir DIR is required and takes no arguments\n\n%s", usageDBCheck)
		return 2
	}
	h, release, err := c.openDataHome(*dataDir)
	if err != nil {
		return c.fail("db check", err)
	}
	defer release()
	rep, err := h.Check(c.ctx)
	if err != nil {
		return c.fail("db check", err)
	}
	fmt.Fprintf(c.stdout, "store %s\nschema version %d (head %d)\njournal_mode %s, foreign_keys %v\n",
		filepath.Join(*dataDir, storeFileName), rep.SchemaVersion, rep.HeadVersion, rep.JournalMode, rep.ForeignKeys)
	for _, m := range rep.Migrations {
		fmt.Fprintf(c.stdout, "migration %04d %s %s verified\n", m.Version, m.Name, m.Digest)
	}
	return 0
}
