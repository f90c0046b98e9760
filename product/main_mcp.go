package product

import (
	"context"
	"errors"
	"fmt"
	"time"
)

const usageMCPServe = `Usage: needle mcp serve [--data-dir DIR] [--repository DIR] --main-model NAME --role-profile ID [--cache-only] [--codex CMD] [--routes LIST] [--refresh-interval DUR]

Serve the Model Context Protocol on stdin/stdout (newline-delimited JSON-RPC,
protocol versions 2025-06-18 and 2024-11-05) for one client connection. The
tool need_context resolves typed needs against the repository; its result is
the structured result of 'needle need resolve', with the context as text.

The connection freezes the repository, the role-profile revision, the
enabled routes, the semantic definition, the main model and the worker
policy, and records them with the session. --role-profile is required; the
built-in profile "default" always exists (see 'needle profile'). initialize
is answered while the store and the profile open; if they cannot be opened,
tools/list and tools/call fail with that error and the server exits with
status 1 once stdin closes. Stdout
carries protocol only; diagnostics go to stderr. The server exits with
status 0 when stdin closes (once every accepted request is answered) and on
SIGTERM or SIGINT (once running requests are cancelled and their workers
cleaned up).

In the background the server keeps the repository's evidence fresh, as
'needle evidence refresh' does: one --refresh-interval after it starts, and
again whenever a file the evidence depends on changed (polled every
--refresh-interval: the lstat of those files, nothing read), it compares
the evidence's file digests and, where one no longer holds, re-proves the
evidence and renews the need certificates, so that the next need is an
exact hit instead of a proof replay; then the session readies its memory
for the renewed needs (one at a time, between requests). It runs beside
the session on its own connection to the store, at a lower CPU priority,
never spawns a worker and never makes a need wait; a refresh that
re-proved or renewed something logs one line on stderr, and one that
failed logs why and is tried again at the next change.

Flags:
  --data-dir DIR        the Needle data directory (holds needle.db; default: see needle help)
  --repository DIR      the repository root needs are resolved against (default: the
                        git top level of the working directory)
  --main-model NAME     the main model connecting (recorded with the session)
  --role-profile ID     the role profile whose newest revision the session freezes
  --cache-only          never spawn a worker; misses are typed bypasses
  --codex CMD           the App Server command (overrides the codex.command setting)
  --routes LIST         comma-separated enabled routes (default: all); need_context
                        advertises only these and refuses the others (-32602)
  --refresh-interval DUR
                        how often the background refresher looks for change
                        (default 2s; 0 turns it off)
`

func (c *cli) mcpServe(args []string) int {
	fs := c.flags("mcp serve")
	dataDir := fs.String("data-dir", "", "")
	repo := fs.String("repository", "", "")
	mainModel := fs.String("main-model", "", "")
	profileID := fs.String("role-profile", "", "")
	cacheOnly := fs.Bool("cache-only", false, "")
	codex := fs.String("codex", "", "")
	routeList := fs.String("routes", "", "")
	refreshEvery := fs.Duration("refresh-interval", defaultRefreshInterval, "")
	if code, ok := c.parse(fs, usageMCPServe, args); !ok {
		return code
	}
	if *dataDir == "" || *repo == "" || *mainModel == "" || *profileID == "" || fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle mcp serve: --data-dir, --repository, --main-model and --role-profile are required\n\n%s", usageMCPServe)
		return 2
	}
	if *refreshEvery < 0 {
		fmt.Fprintf(c.stderr, "needle mcp serve: --refresh-interval %s is negative (0 turns the refresher off)\n\n%s", *refreshEvery, usageMCPServe)
		return 2
	}
	routes, err := routesFlag(*routeList)
	if err != nil {
		return c.fail("mcp serve", err)
	}
	cfg := Config{DataDir: *dataDir, Repository: *repo, Routes: routes, CacheOnly: *cacheOnly, Transport: "mcp", MainModel: *mainModel,
		RoleProfile: *profileID}
	// The engine opens while the connection starts: initialize is answered
	// at once, and what needs the store waits for it (serveMCP). A store,
	// profile or setting that fails fails those requests with its error,
	// and the command with it once the client closes stdin.
	base := MCPConfig{Repository: c.absPath(*repo), MainModel: *mainModel, CacheOnly: *cacheOnly, Log: c.stderr}
	opening := c.mcpServeOpening(cfg, base, *codex)
	stopBackground := c.mcpServeBackground(*refreshEvery, opening)
	err = serveMCP(c.ctx, c.stderr, opening, c.stdin, c.stdout)
	// The session is over: a refresh under way is cancelled (a test it
	// runs is killed) and the refresher's engine closed before anything
	// else closes; so is the warm-up.
	stopBackground()
	open, openErr := opening.wait(context.WithoutCancel(c.ctx))
	if open.Engine != nil {
		defer open.Engine.Close()
	}
	// A stop requested while the engine was still opening cut the open
	// short: a shutdown too.
	if openErr != nil && !(c.stopping() && errors.Is(openErr, context.Canceled)) {
		return c.fail("mcp serve", openErr)
	}
	if err != nil && !c.stopping() {
		return c.fail("mcp serve", err)
	}
	// stdin closed or a stop requested (hosts close stdin and send SIGTERM
	// together): a shutdown, not a failure. serveMCP has answered or
	// cancelled every request and waited for its workers' cleanup; the
	// deferred Close closes the store.
	return 0
}

// mcpServeOpening opens the session's engine in the background, with the
// workers' and tests' settings of the store, so that initialize never
// waits for it.
func (c *cli) mcpServeOpening(cfg Config, base MCPConfig, codex string) *mcpOpening {
	return openMCP(func() (MCPConfig, error) {
		eng, err := c.openEngineSettings(cfg, func(settings map[string]string, cfg *Config) error {
			var err error
			if !cfg.CacheOnly {
				if cfg.Codex, err = c.codexSettings(settings, codex); err != nil {
					return err
				}
			}
			cfg.Tests, err = c.testsSettings(settings, cfg.Codex)
			return err
		})
		if err != nil {
			return base, err
		}
		open := base
		open.Engine, open.Profile, open.WorkerReady = eng, eng.RoleProfile(), eng.cfg.Codex != nil
		return open, nil
	})
}

// mcpServeRefresher starts the background refresher beside the session
// and returns its stop.
func (c *cli) mcpServeRefresher(every time.Duration, opening *mcpOpening) (stop func()) {
	// After a refresh that renewed need certificates, the serving engine
	// readies its memory for those needs, one need per turn.
	warm := func(ctx context.Context) (int, error) {
		open, err := opening.wait(ctx)
		if err != nil {
			return 0, nil
		}
		return open.Engine.Warm(ctx)
	}
	return startRefresher(c.ctx, refresher{every: every, log: c.stderr, prefix: "needle mcp serve: ", warm: warm},
		func(ctx context.Context) (*Engine, error) { return c.refreshEngine(ctx, opening) })
}

// mcpServeBackground starts what runs beside the session: the warm-up
// (mcpServeWarm) and, unless every is 0, the refresher. Its stop stops both.
func (c *cli) mcpServeBackground(every time.Duration, opening *mcpOpening) (stop func()) {
	stopWarm, stopRefresher := c.mcpServeWarm(opening), func() {}
	if every > 0 {
		stopRefresher = c.mcpServeRefresher(every, opening)
	}
	return func() {
		stopWarm()
		stopRefresher()
	}
}

// mcpServeWarm readies the serving engine once it is open (Engine.WarmOpen),
// in the background, each step under the engine's turn, so that the first
// hit of the connection finds what a later one finds. It runs at normal
// priority: at a lower one, under load, it was starved while it held the
// turn, and a first call waited longer. It returns its stop,
// which cancels it and waits for it. A failure costs the first hit its
// reads, never an answer: it is logged and nothing else.
func (c *cli) mcpServeWarm(opening *mcpOpening) (stop func()) {
	ctx, cancel := context.WithCancel(c.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		open, err := opening.wait(ctx)
		if err != nil || open.Engine == nil {
			return // the session fails with that error
		}
		if _, err := open.Engine.WarmOpen(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(c.stderr, "needle mcp serve: readying the session: %v\n", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// defaultRefreshInterval is how often mcp serve's refresher polls for
// change: a stat per dependency file and one indexed read each time.
const defaultRefreshInterval = 2 * time.Second

// refreshEngine opens the refresher's engine once the serving engine is
// open (nothing of it delays initialize): another engine of the same data
// directory and repository with the same tests configuration, which never
// spawns a worker; none when the serving engine could not be opened.
// Standalone it opens a store connection of its own; in
// the resident runtime it shares the runtime's store, and it stops with the
// session's stream either way.
func (c *cli) refreshEngine(ctx context.Context, opening *mcpOpening) (*Engine, error) {
	open, err := opening.wait(ctx)
	if err != nil {
		return nil, nil // the session fails with that error; nothing to refresh
	}
	serving := open.Engine.cfg
	rc := *c
	rc.ctx = ctx
	return rc.openEngine(Config{DataDir: serving.DataDir, Repository: serving.Repository, Routes: serving.Routes,
		CacheOnly: true, Transport: serving.Transport, Tests: serving.Tests})
}
