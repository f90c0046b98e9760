package product

import (
	"fmt"
)

const usageMCPServe = `Usage: needle mcp serve --data-dir DIR --repository DIR --main-model NAME --role-profile ID [--cache-only] [--codex CMD] [--routes LIST]

Serve the Model Context Protocol on stdin/stdout (newline-delimited JSON-RPC,
protocol versions 2025-06-18 and 2024-11-05) for one client connection. The
tool need_context resolves typed needs against the repository; its result is
the structured result of 'needle need resolve', with the context as text.

The connection freezes the repository, the role-profile revision, the
enabled routes, the semantic definition, the main model and the worker
policy, and records them with the session. --role-profile is required; the
built-in profile "default" always exists (see 'needle profile'). Stdout
carries protocol only; diagnostics go to stderr. The server exits with
status 0 when stdin closes (once every accepted request is answered) and on
SIGTERM or SIGINT (once running requests are cancelled and their workers
cleaned up).

Flags:
  --data-dir DIR        the Needle data directory (holds needle.db)
  --repository DIR      the repository root needs are resolved against
  --main-model NAME     the main model connecting (recorded with the session)
  --role-profile ID     the role profile whose newest revision the session freezes
  --cache-only          never spawn a worker; misses are typed bypasses
  --codex CMD           the App Server command (overrides the codex.command setting)
  --routes LIST         comma-separated enabled routes (default: all); need_context
                        advertises only these and refuses the others (-32602)
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
	if code, ok := c.parse(fs, usageMCPServe, args); !ok {
		return code
	}
	if *dataDir == "" || *repo == "" || *mainModel == "" || *profileID == "" || fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle mcp serve: --data-dir, --repository, --main-model and --role-profile are required\n\n%s", usageMCPServe)
		return 2
	}
	routes, err := routesFlag(*routeList)
	if err != nil {
		return c.fail("mcp serve", err)
	}
	cfg := Config{DataDir: *dataDir, Repository: *repo, Routes: routes, CacheOnly: *cacheOnly, Transport: "mcp", MainModel: *mainModel,
		RoleProfile: *profileID}
	if !*cacheOnly {
		if cfg.Codex, err = c.codexConfig(*dataDir, *codex); err != nil {
			return c.fail("mcp serve", err)
		}
	}
	if cfg.Tests, err = c.testsConfig(*dataDir, cfg.Codex); err != nil {
		return c.fail("mcp serve", err)
	}
	eng, err := c.openEngine(cfg)
	if err != nil {
		return c.fail("mcp serve", err)
	}
	defer eng.Close()
	err = ServeMCP(c.ctx, MCPConfig{Engine: eng, Repository: c.path(*repo), MainModel: *mainModel, Profile: eng.RoleProfile(),
		CacheOnly: *cacheOnly, WorkerReady: cfg.Codex != nil, Log: c.stderr}, c.stdin, c.stdout)
	if err != nil && !c.stopping() {
		return c.fail("mcp serve", err)
	}
	// stdin closed or a stop requested (hosts close stdin and send SIGTERM
	// together): a shutdown, not a failure. ServeMCP has answered or
	// cancelled every request and waited for its workers' cleanup; the
	// deferred Close closes the store.
	return 0
}
