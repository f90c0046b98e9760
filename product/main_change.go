package product

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// needle change: the user's side of the change lifecycle. MCP stays three
// tools; a lifecycle is started, run, approved and applied from here (or
// from the HTTP routes of needle serve, over the same engine methods).

// exitConflict is needle change's exit status for a conflict: the 409 of
// an apply whose base drifted (nothing written), an approval for older
// digests, another runner of the same lifecycle.
const exitConflict = 3

// changeExitCode is needle change's exit status for err: a conflict has
// its own code, a run without a worker is a usage error (2); everything
// else is as elsewhere.
func changeExitCode(err error) int {
	if KindOf(err) == kindConflict {
		return exitConflict
	}
	if errors.Is(err, errNoWorker) || errors.Is(err, errNoSandbox) {
		return 2 // a usage error: the run needs a part it was not given
	}
	return exitCodeOf(err)
}

// failChange reports err like fail, with needle change's exit status.
func (c *cli) failChange(cmd string, err error) int {
	c.fail(cmd, err)
	return changeExitCode(err)
}

// changeFlags are the flags every change subcommand takes.
type changeFlags struct {
	fs      *flag.FlagSet
	repo    *string
	dataDir *string
	json    *bool
}

func (c *cli) changeFlags(name string) changeFlags {
	fs := c.flags("change " + name)
	return changeFlags{fs: fs, repo: fs.String("repository", "", ""), dataDir: fs.String("data-dir", "", ""), json: fs.Bool("json", false, "")}
}

// parseChange parses a change subcommand's flags and checks the common ones
// and the number of arguments.
func (c *cli) parseChange(f changeFlags, name, usage string, args []string, nargs int) (int, bool) {
	if code, ok := c.parse(f.fs, usage, args); !ok {
		return code, false
	}
	if *f.repo == "" || *f.dataDir == "" || f.fs.NArg() != nargs {
		want := "--repository and --data-dir are required"
		if nargs == 1 {
			want += ", with one ID"
		}
		fmt.Fprintf(c.stderr, "needle change %s: %s\n\n%s", name, want, usage)
		return 2, false
	}
	return 0, true
}

// changeEngine opens the engine a change command runs on.
func (c *cli) changeEngine(f changeFlags, codexFlag string, workers bool) (*Engine, error) {
	cfg := Config{DataDir: *f.dataDir, Repository: *f.repo, Transport: "cli"}
	var err error
	if workers {
		if cfg.Codex, err = c.codexConfig(*f.dataDir, codexFlag); err != nil {
			return nil, err
		}
	}
	if cfg.Tests, err = c.testsConfig(*f.dataDir, cfg.Codex); err != nil {
		return nil, err
	}
	if changeConfigHook != nil {
		changeConfigHook(&cfg)
	}
	return c.openEngine(cfg)
}

// changeConfigHook, when set, edits the configuration of the change
// commands. Only the package's tests set it: the crash harness's child
// (this package's test binary run as needle) runs the lifecycle with
// working fake adapters.
var changeConfigHook func(*Config)

// settings reads the profile settings of dataDir (the runtime's store,
// inside it).
func (c *cli) settings(dataDir string) (map[string]string, error) {
	h, release, err := c.openDataHome(dataDir)
	if err != nil {
		return nil, err
	}
	defer release()
	return h.Settings(c.ctx)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
