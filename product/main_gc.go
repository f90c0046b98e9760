package product

import "fmt"

const usageGC = `Usage: needle gc [--data-dir DIR] [--dry-run]

Remove what no process, certificate, lifecycle, approval or runtime needs
from DIR: the disposable checkouts (DIR/checkouts), evidence workers'
codex homes (DIR/codex-homes), test-run scratch (DIR/testrun/*/runs) and
kept test binaries (DIR/testrun/*/bins) left by processes that are gone. Anything whose creator may still run is
kept, and so are the store, the shared build cache and the settings.
Print each item and how much was freed (bytes, files); --dry-run removes
nothing and prints what would go.

gc refuses (exit 1) while a runtime (needle serve) serves DIR, and holds
its lock while it works, so none starts meanwhile.
`

func (c *cli) gc(args []string) int {
	fs := c.flags("gc")
	dataDir := fs.String("data-dir", "", "")
	dryRun := fs.Bool("dry-run", false, "")
	if code, ok := c.parse(fs, usageGC, args); !ok {
		return code
	}
	if *dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle gc: --data-dir DIR is required and takes no arguments\n\n%s", usageGC)
		return 2
	}
	rep, err := collectGarbage(c.ctx, c.absPath(*dataDir), *dryRun)
	verb, total := "removed", "freed"
	if *dryRun {
		verb, total = "would remove", "would free"
	}
	for _, it := range rep.Items {
		fmt.Fprintf(c.stdout, "%s %s %s (%d bytes, %d files)\n", verb, it.Kind, it.Path, it.Bytes, it.Files)
	}
	if err != nil {
		return c.fail("gc", err)
	}
	fmt.Fprintf(c.stdout, "%s %d bytes in %d files (%d items)\n", total, rep.Bytes, rep.Files, len(rep.Items))
	return 0
}
