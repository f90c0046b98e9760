package product

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

const usageExec = `Usage: needle exec [--coordination new-turn|continue-working] --codex CMD [--data-dir DIR] [flags] PROMPT

Run the main model as a Codex App Server thread ('CMD app-server'), like
'codex exec': PROMPT starts the first turn and the model's messages stream to
stdout. When a message holds a @@need marker line at its top level, Needle
resolves it in the thread's session (session "codex:<thread id>", the same
ledger and limits as MCP and the Stop hook) and gives the model its reply —
the FrontierView, a typed bypass, or for a marker that does not read the
problem — as plain text input:

  new-turn          (default) when the turn completes, the replies to its
                    markers start a new turn on the same thread
  continue-working  the turn goes on while one cancellable resolution runs;
                    its reply is steered into the active turn (turn/steer),
                    or starts a new turn when the turn is not steerable (a
                    compaction) or already over

A user turn gets at most 4 replies (the need limit plus one). The thread runs
with hooks off, so an installed Needle Stop hook does not answer the same
markers. An interrupt (Ctrl-C) cancels a running resolution (its worker's
turn is interrupted and its process group killed) and interrupts the turn.

Flags:
  --coordination MODE   new-turn (default) or continue-working
  --codex CMD           the main thread's App Server command, argv before "app-server"
  --data-dir DIR        the Needle data directory (holds needle.db; default: see needle help)
  --repository DIR      the repository, and the thread's working directory (default .)
  --role-profile ID     the role profile the session freezes (default "default")
  --cache-only          never spawn a worker; misses are typed bypasses
  --worker-codex CMD    the workers' App Server command (default: the codex.command
                        setting, else --codex)
  --sandbox MODE        the thread's sandbox: read-only (default), workspace-write,
                        danger-full-access
  --model NAME          the main model (default: codex's configuration)
  --record DIR          freeze the main thread's transcript into DIR/main.jsonl and
                        the workers' into DIR/workers (for the replay tier)

Exit status: 0 when the model is done, 1 on failure (a failed turn), 2 for
usage errors, 130 when interrupted.
`

func (c *cli) exec(args []string) int {
	fs := c.flags("exec")
	coordination := fs.String("coordination", string(coordinationNewTurn), "")
	codex := fs.String("codex", "", "")
	dataDir := fs.String("data-dir", "", "")
	repo := fs.String("repository", ".", "")
	profileID := fs.String("role-profile", DefaultProfileID, "")
	cacheOnly := fs.Bool("cache-only", false, "")
	workerCodex := fs.String("worker-codex", "", "")
	sandbox := fs.String("sandbox", "read-only", "")
	model := fs.String("model", "", "")
	record := fs.String("record", "", "")
	if code, ok := c.parse(fs, usageExec, args); !ok {
		return code
	}
	mode, err := parseCoordination(*coordination)
	if err != nil || *codex == "" || *dataDir == "" || fs.NArg() != 1 || strings.TrimSpace(fs.Arg(0)) == "" {
		fmt.Fprintf(c.stderr, "needle exec: --codex, --data-dir and one PROMPT are required; --coordination is new-turn or continue-working\n\n%s", usageExec)
		return 2
	}
	switch *sandbox {
	case "read-only", "workspace-write", "danger-full-access":
	default:
		fmt.Fprintf(c.stderr, "needle exec: unknown --sandbox %q\n\n%s", *sandbox, usageExec)
		return 2
	}
	main, err := commandArgv(*codex)
	if err != nil {
		return c.fail("exec", err)
	}
	cfg := Config{DataDir: c.absPath(*dataDir), Repository: *repo, CacheOnly: *cacheOnly, Transport: "codex-exec", RoleProfile: *profileID, MainModel: *model}
	if !*cacheOnly {
		if cfg.Codex, err = c.execWorkerCodex(*dataDir, *workerCodex, *codex, *record); err != nil {
			return c.fail("exec", err)
		}
	}
	eng, err := Open(c.ctx, cfg)
	if err != nil {
		return c.fail("exec", err)
	}
	defer eng.Close()
	res, err := runExec(c.ctx, execConfig{Engine: eng, Command: main, Coordination: mode, Prompt: fs.Arg(0),
		Sandbox: *sandbox, Model: *model, CacheOnly: *cacheOnly, Worker: cfg.Codex != nil, RecordDir: *record,
		Out: c.stdout, Log: c.stderr})
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(c.stderr, "needle exec: interrupted (thread %s)\n", res.ThreadID)
		return 130
	case err != nil:
		return c.fail("exec", err)
	}
	fmt.Fprintf(c.stderr, "needle exec: thread %s %s; replies %v, delivered %v\n", res.ThreadID, res.Status,
		nonNil(res.Replies), nonNil(res.Deliveries))
	return 0
}

// execWorkerCodex is the workers' App Server configuration: the
// --worker-codex command, else the codex.command setting, else the main
// thread's; with --record, the workers' transcripts go under DIR/workers.
func (c *cli) execWorkerCodex(dataDir, workerCodex, codex, record string) (*CodexConfig, error) {
	cc, err := c.codexConfig(dataDir, workerCodex)
	if err == nil && cc == nil {
		cc, err = c.codexConfig(dataDir, codex)
	}
	if err != nil {
		return nil, err
	}
	if cc != nil && record != "" {
		cc.RecordDir = filepath.Join(record, "workers")
	}
	return cc, nil
}

// commandArgv splits an App Server command at blanks and resolves its
// program against PATH now.
func commandArgv(command string) ([]string, error) {
	argv := strings.Fields(command)
	if len(argv) == 0 {
		return nil, invalidf("exec", "codex", "empty App Server command")
	}
	path, err := exec.LookPath(argv[0])
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return nil, invalidf("exec", "codex", "App Server command %q: %v", argv[0], err)
	}
	argv[0] = path
	return argv, nil
}
