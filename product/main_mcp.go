package product

import (
	"bytes"
	"encoding/json"
	"fmt"
)

const usageMCPServe = `Usage: needle mcp serve --data-dir DIR --repository DIR --main-model NAME --role-profile ID [--cache-only] [--codex CMD]

Serve the Model Context Protocol on stdin/stdout (newline-delimited JSON-RPC,
protocol versions 2025-06-18 and 2024-11-05) for one client connection. The
tool need_context resolves typed needs against the repository; its result is
the structured result of 'needle need resolve', with the context as text.

The connection freezes the repository, the role-profile revision, the
enabled routes, the semantic definition, the main model and the worker
policy, and records them with the session. --role-profile is required; the
built-in profile "default" always exists (see 'needle profile'). Stdout
carries protocol only; diagnostics go to stderr. The server exits when stdin
closes.

Flags:
  --data-dir DIR        the Needle data directory (holds needle.db)
  --repository DIR      the repository root needs are resolved against
  --main-model NAME     the main model connecting (recorded with the session)
  --role-profile ID     the role profile whose newest revision the session freezes
  --cache-only          never spawn a worker; misses are typed bypasses
  --codex CMD           the App Server command (overrides the codex.command setting)
`

func (c *cli) mcpServe(args []string) int {
	fs := c.flags("mcp serve")
	dataDir := fs.String("data-dir", "", "")
	repo := fs.String("repository", "", "")
	mainModel := fs.String("main-model", "", "")
	profileID := fs.String("role-profile", "", "")
	cacheOnly := fs.Bool("cache-only", false, "")
	codex := fs.String("codex", "", "")
	if code, ok := c.parse(fs, usageMCPServe, args); !ok {
		return code
	}
	if *dataDir == "" || *repo == "" || *mainModel == "" || *profileID == "" || fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle mcp serve: --data-dir, --repository, --main-model and --role-profile are required\n\n%s", usageMCPServe)
		return 2
	}
	cfg := Config{DataDir: *dataDir, Repository: *repo, CacheOnly: *cacheOnly, Transport: "mcp", MainModel: *mainModel}
	var err error
	if !*cacheOnly {
		if cfg.Codex, err = codexConfig(c.ctx, *dataDir, *codex); err != nil {
			return c.fail("mcp serve", err)
		}
	}
	eng, err := Open(c.ctx, cfg)
	if err != nil {
		return c.fail("mcp serve", err)
	}
	defer eng.Close()
	rev, err := eng.Profile(c.ctx, *profileID)
	if err != nil {
		return c.fail("mcp serve", err)
	}
	eng.cfg.Limits = Limits{Needs: rev.Profile.Limits.Needs, Workers: rev.Profile.Limits.Workers}.clamp()
	err = ServeMCP(c.ctx, MCPConfig{Engine: eng, Repository: *repo, MainModel: *mainModel, Profile: rev,
		CacheOnly: *cacheOnly, WorkerReady: cfg.Codex != nil, Log: c.stderr}, c.stdin, c.stdout)
	if err != nil {
		return c.fail("mcp serve", err)
	}
	return 0
}

const usageProfile = `Usage: needle profile list --data-dir DIR
       needle profile show --data-dir DIR ID
       needle profile create --data-dir DIR ID FILE|-

Manage role profiles: how workers run for a session (worker model, effort,
session limits, sandbox per role). A profile is versioned by immutable
revisions: create appends a revision, and a session freezes the newest
revision when it connects. The built-in profile "default" exists from the
first start. A profile body is JSON:
  {"worker_model":"","effort":"","limits":{"needs":3,"workers":3},
   "sandbox":{"evidence":"read-only","patch":"workspace-write","verifier":"read-only"}}
`

func (c *cli) profileCmd(args []string) int {
	verb, dataDir, rest, code, ok := c.verbArgs("profile", usageProfile, map[string]int{"list": 0, "show": 1, "create": 2}, args)
	if !ok {
		return code
	}
	var body Profile
	if verb == "create" {
		data, err := c.readInput(rest[1], 64<<10)
		if err == nil {
			err = decodeProfile(data, &body)
		}
		if err != nil {
			return c.fail("profile create", err)
		}
	}
	st, err := OpenStore(c.ctx, dataDir)
	if err != nil {
		return c.fail("profile "+verb, err)
	}
	defer st.Close()
	if err := st.ensureDefaultProfile(c.ctx); err != nil {
		return c.fail("profile "+verb, err)
	}
	var out any
	switch verb {
	case "list":
		out, err = st.profiles(c.ctx)
	case "show":
		out, err = st.profile(c.ctx, rest[0])
	case "create":
		out, err = st.putProfileRevision(c.ctx, rest[0], body, false)
	}
	if err != nil {
		return c.fail("profile "+verb, err)
	}
	return c.writeJSON(out)
}

// decodeProfile decodes a profile body strictly: unknown fields are errors.
func decodeProfile(data []byte, p *Profile) error {
	if _, err := parseJSONTree(data); err != nil { // duplicate keys, trailing data, …
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return invalidf("profile", "$", "%v", err)
	}
	return checkProfile(*p)
}
