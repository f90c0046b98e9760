package product

import (
	"fmt"
	"io"
)

const usageDoctor = `Usage: needle doctor [--data-dir DIR] [--repository DIR] [--json]

Check what Needle depends on, where the commands that use it look for it,
and print one line per part: ok, warn (Needle works, with less) or fail (a
command that needs the part fails), with the command that fixes it.

  go          the go command on PATH (go env GOVERSION)
  git         git on PATH (git --version)
  repository  with --repository: a git work tree
  data-dir    DIR exists, is yours, is not inside the repository; the
              store's files are 0600 and DIR is not open to others
  store       DIR/needle.db opens and verifies (as needle db check: a
              pending migration is applied)
  codex       the workers' App Server command: codex.command, else codex on
              PATH (which no command uses until it is configured); --version
  test-cache  tests.cache (default DIR/testrun): absolute, writable or can be
              made
  sandbox     the codex sandbox passes the self-test every test run needs
              (no network, writes confined)
  runtime     a resident runtime answers on DIR/needle.sock (needle serve)
  mcp-codex   $CODEX_HOME/config.toml (~/.codex/config.toml) has an
              [mcp_servers.NAME] running needle mcp serve for DIR (one
              without --data-dir serves the default of what codex passes
              it: HOME, not $NEEDLE_DATA_DIR or $XDG_DATA_HOME)
  mcp-claude  Claude Code starts needle mcp serve for DIR: the repository's
              .mcp.json, or ~/.claude.json
  stop-hook   Needle's Codex Stop hook is in $CODEX_HOME/hooks.json (or the
              repository's .codex/hooks.json) and trusted in config.toml

The hosts' files are read, never the hosts run. Flags:
  --data-dir DIR     the Needle data directory (default: see needle help)
  --repository DIR   the repository (checked; its .mcp.json and .codex/hooks.json;
                     default: the git top level of the working directory)
  --json             print the checks as a JSON array of
                     {"check","status","detail","fix"} (no fix when ok)

Exit status: 0 when no check fails, 1 when one fails, 2 a usage error.
`

func (c *cli) doctor(args []string) int {
	fs := c.flags("doctor")
	dataDir := fs.String("data-dir", "", "")
	repo := fs.String("repository", "", "")
	asJSON := fs.Bool("json", false, "")
	if code, ok := c.parse(fs, usageDoctor, args); !ok {
		return code
	}
	if *dataDir == "" || fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle doctor: --data-dir DIR is required and takes no arguments\n\n%s", usageDoctor)
		return 2
	}
	checks := c.runDoctor(c.absPath(*dataDir), c.absPath(*repo))
	code := 0
	for _, ch := range checks {
		if ch.Status == doctorFail {
			code = 1
		}
	}
	if *asJSON {
		if c.writeJSON(checks) != 0 {
			return 1
		}
		return code
	}
	writeDoctor(c.stdout, checks)
	return code
}

// writeDoctor prints one line per check, its fix indented below it, and a
// count.
func writeDoctor(w io.Writer, checks []doctorCheck) {
	count := map[doctorStatus]int{}
	for _, ch := range checks {
		count[ch.Status]++
		fmt.Fprintf(w, "%-4s  %-10s  %s\n", ch.Status, ch.Check, ch.Detail)
		if ch.Fix != "" {
			fmt.Fprintf(w, "      %-10s  fix: %s\n", "", ch.Fix)
		}
	}
	fmt.Fprintf(w, "%d ok, %d warn, %d fail\n", count[doctorOK], count[doctorWarn], count[doctorFail])
}
