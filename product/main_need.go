package product

import "fmt"

const usageNeedCompile = `Usage: needle need compile [--marker] [--routes LIST] FILE|-

Compile a need request and print one JSON object on stdout:
  {"need_id": "b3:…", "ir": {…}, "task": "…", "definition_id": "b3:…"}

The input (FILE, or - for stdin) is a need_context request as JSON, or with
--marker a message holding exactly one @@need marker line. The need_id is a
content address of the canonical IR: key order, white space and the task
wording do not change it; any change of meaning does.

Flags:
  --marker        read a @@need marker instead of JSON
  --routes LIST   comma-separated enabled routes (default: all of
                  locate.implementation,trace.state-flow,tests.relevant)

Invalid input prints nothing on stdout, one line naming the JSON path of the
problem on stderr, and exits 2.
`

func (c *cli) needCompile(args []string) int {
	fs := c.flags("need compile")
	marker := fs.Bool("marker", false, "")
	routeList := fs.String("routes", "", "")
	if code, ok := c.parse(fs, usageNeedCompile, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(c.stderr, "needle need compile: want one FILE or -, got %d arguments\n\n%s", fs.NArg(), usageNeedCompile)
		return 2
	}
	routes, err := routesFlag(*routeList)
	if err != nil {
		return c.fail("need compile", err)
	}
	limit := maxRequestBytes
	if *marker {
		limit = 1 << 20 // a whole message may surround the marker line
	}
	data, err := c.readInput(fs.Arg(0), limit)
	if err != nil {
		return c.fail("need compile", err)
	}
	var need compiledNeed
	if *marker {
		var line string
		if line, err = findMarker(string(data)); err == nil {
			need, err = compileMarker(line, routes)
		}
	} else {
		need, err = compileJSON(data, routes)
	}
	if err != nil {
		return c.fail("need compile", err)
	}
	return c.writeJSON(need)
}

const usageNeedResolve = `Usage: needle need resolve [--repository DIR] [--data-dir DIR] [--cache-only] [--codex CMD] [--routes LIST] FILE|-

Resolve a need_context request (JSON; - for stdin) against the certified
evidence of the repository DIR, stored in the data directory, and print the
structured result as one JSON object: status, route, subject, need_id, step,
satisfied, missing, resolution {kind, artifact_ids, certificate_id, plan_id},
reuse_unit, claim_ids, cache_hit, worker_spawned, result_digest and context
(the bounded FrontierView text).

Evidence is served only when it is proven fresh for the current source:
every file it depends on is unchanged, or its cited text is intact and it
re-validates at the new lines. Stale, rejected, ambiguous or contradicted
evidence is never returned.

When the evidence cannot answer, a read-only Codex App Server worker runs in a
disposable checkout for the missing obligations only, and what it proposes is
validated before it is served. The App Server command comes from --codex or
the codex.command setting (needle config); with neither, or with
--cache-only, such a need is a typed bypass.

Flags:
  --repository DIR   the repository root (a git work tree or a plain directory;
                     default: the git top level of the working directory)
  --data-dir DIR     the Needle data directory (holds needle.db; default: see needle help)
  --cache-only       never spawn a worker; a miss becomes a bypass
  --codex CMD        the App Server command, argv before "app-server" split at
                     blanks (overrides the codex.command setting)
  --routes LIST      comma-separated enabled routes (default: all)

Exit status: 0 for every resolution kind, 2 for invalid input, 1 for failure.
`

func (c *cli) needResolve(args []string) int {
	fs := c.flags("need resolve")
	repo := fs.String("repository", "", "")
	dataDir := fs.String("data-dir", "", "")
	cacheOnly := fs.Bool("cache-only", false, "")
	codex := fs.String("codex", "", "")
	routeList := fs.String("routes", "", "")
	if code, ok := c.parse(fs, usageNeedResolve, args); !ok {
		return code
	}
	if *repo == "" || *dataDir == "" || fs.NArg() != 1 {
		fmt.Fprintf(c.stderr, "needle need resolve: --repository, --data-dir and one FILE are required\n\n%s", usageNeedResolve)
		return 2
	}
	routes, err := routesFlag(*routeList)
	if err != nil {
		return c.fail("need resolve", err)
	}
	data, err := c.readInput(fs.Arg(0), maxRequestBytes)
	if err != nil {
		return c.fail("need resolve", err)
	}
	req, err := DecodeNeedRequest(data)
	if err == nil {
		_, err = Compile(req, routes) // invalid input changes nothing, not even the store
	}
	if err != nil {
		return c.fail("need resolve", err)
	}
	cfg := Config{DataDir: *dataDir, Repository: *repo, Routes: routes, CacheOnly: *cacheOnly, Transport: "cli"}
	if !*cacheOnly {
		if cfg.Codex, err = c.codexConfig(*dataDir, *codex); err != nil {
			return c.fail("need resolve", err)
		}
	}
	if cfg.Tests, err = c.testsConfig(*dataDir, cfg.Codex); err != nil {
		return c.fail("need resolve", err)
	}
	eng, err := c.openEngine(cfg)
	if err != nil {
		return c.fail("need resolve", err)
	}
	defer eng.Close()
	res, err := eng.NeedContext(c.ctx, newSessionID("cli"), req)
	if err != nil {
		return c.fail("need resolve", err)
	}
	return c.writeJSON(res)
}
