package product

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

const usageNeedResolve = `Usage: needle need resolve --repository DIR --data-dir DIR [--cache-only] [--codex CMD] [--routes LIST] FILE|-

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
  --repository DIR   the repository root (a git work tree or a plain directory)
  --data-dir DIR     the Needle data directory (holds needle.db)
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
	routes := AllRoutes()
	if *routeList != "" {
		var err error
		if routes, err = ParseRouteSet(*routeList); err != nil {
			return c.fail("need resolve", err)
		}
	}
	data, err := c.readInput(fs.Arg(0), MaxRequestBytes)
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
		if cfg.Codex, err = codexConfig(c.ctx, *dataDir, *codex); err != nil {
			return c.fail("need resolve", err)
		}
	}
	eng, err := Open(c.ctx, cfg)
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

// newSessionID returns a fresh session id with a readable prefix.
func newSessionID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return prefix + "-" + hex.EncodeToString(b[:])
}

const usageEvidenceSchema = `Usage: needle evidence schema KIND

Print the strict JSON Schema of a proposal of KIND (implementation_location,
runtime_flow or focused_tests): every property required and
additionalProperties false at every level, usable as a Codex outputSchema.
`

func (c *cli) evidenceSchema(args []string) int {
	fs := c.flags("evidence schema")
	if code, ok := c.parse(fs, usageEvidenceSchema, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(c.stderr, "needle evidence schema: want one KIND\n\n%s", usageEvidenceSchema)
		return 2
	}
	kind, ok := ParseCapabilityKind(fs.Arg(0))
	if !ok {
		return c.fail("evidence schema", invalidf("evidence.schema", "kind", "unknown proposal kind %q; want %s", fs.Arg(0), enumList(allCapabilities)))
	}
	schema, err := ProposalSchema(kind)
	if err != nil {
		return c.fail("evidence schema", err)
	}
	fmt.Fprintf(c.stdout, "%s\n", schema)
	return 0
}

const usageEvidencePropose = `Usage: needle evidence propose --repository DIR --data-dir DIR FILE|-

Validate a proposal (JSON; - for stdin) against the current source of the
repository with Needle's trusted validators (code, never a model), store the
attempt, and print one JSON object:
  {"status": "certified"|"rejected", "artifact_id", "certificate_id", "reasons": [...]}

A certified proposal becomes evidence that later needs can reuse while it
stays fresh. A rejected one is stored with its reasons and never served.

Proposal shapes (see 'needle evidence schema KIND'):
  {"kind":"implementation_location","subject":{...},"path":"cmd.go","start_line":10,"end_line":20}
  {"kind":"runtime_flow","subject":{...},"scenario":"default","steps":[{"path","start_line","end_line","summary"}]}
  {"kind":"focused_tests","subject":{...},"tests":[{"path","name","command"}]}

Exit status: 0 certified, 1 rejected or failure, 2 invalid input.
`

func (c *cli) evidencePropose(args []string) int {
	fs := c.flags("evidence propose")
	repo := fs.String("repository", "", "")
	dataDir := fs.String("data-dir", "", "")
	if code, ok := c.parse(fs, usageEvidencePropose, args); !ok {
		return code
	}
	if *repo == "" || *dataDir == "" || fs.NArg() != 1 {
		fmt.Fprintf(c.stderr, "needle evidence propose: --repository, --data-dir and one FILE are required\n\n%s", usageEvidencePropose)
		return 2
	}
	data, err := c.readInput(fs.Arg(0), MaxProposalBytes)
	if err != nil {
		return c.fail("evidence propose", err)
	}
	if _, err := DecodeProposal(data); err != nil {
		return c.fail("evidence propose", err)
	}
	eng, err := Open(c.ctx, Config{DataDir: *dataDir, Repository: *repo, Transport: "cli"})
	if err != nil {
		return c.fail("evidence propose", err)
	}
	defer eng.Close()
	res, err := eng.Propose(c.ctx, data)
	if err != nil {
		return c.fail("evidence propose", err)
	}
	if code := c.writeJSON(res); code != 0 || res.Status != "certified" {
		return 1
	}
	return 0
}
