package testscripts

// Issue 12's regression tests of the MCP stdio session, run against the
// real needle command (see process_test.go): what a host, a gateway or an
// attacker sends on stdin, and what Needle answers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Issue 12 item 2: a request the client cancelled is never answered with
// success. A worker that never answers is started for a miss; once it runs,
// the client cancels the call and closes stdin: the reply for that id, if
// any, is the -32800 error, never a (bypass) result.
func TestHarden_CancelledCallIsNotAnsweredWithSuccess(t *testing.T) {
	repo, data := storeRepo(t)
	started := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	// The stand-in App Server announces itself on the FIFO, then reads its
	// stdin forever: the worker is running and will never answer.
	codex := workerScript(t, filepath.Join(t.TempDir(), "log"), "echo up > "+shellQuote(started)+"\nexec cat > /dev/null")
	p := startMCP(t, needlePath(t), serveArgs(repo, data, "--codex", codex)...)
	p.initialize()
	p.sendLine(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"need_context","arguments":{"route":"locate.implementation","subject":{"kind":"symbol","name":"Close"}}}}`)
	up := make(chan error, 1)
	go func() {
		f, err := os.Open(started) // blocks until the worker process opens it
		if err == nil {
			_, err = f.Read(make([]byte, 3))
			f.Close()
		}
		up <- err
	}()
	select {
	case err := <-up:
		if err != nil {
			t.Fatalf("the worker did not start: %v", err)
		}
	case <-time.After(awaitLimit):
		t.Fatalf("no worker started within %v; stderr:\n%s", awaitLimit, p.stderr.String())
	}
	p.sendLine(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user stopped"}}`)
	code, lines := p.finish()
	if code != 0 {
		t.Errorf("exit %d after stdin EOF; stderr:\n%s", code, p.stderr.String())
	}
	for _, l := range lines {
		r := parseReply(t, l)
		if string(r.ID) != "7" {
			continue
		}
		if r.Error == nil || r.Error.Code != -32800 {
			t.Errorf("cancelled request 7 was answered %s; want no reply or error -32800", short(l))
		}
	}
}

// Issue 12 item 3: hosts stop a server by closing its stdin and sending
// SIGTERM; a requested shutdown exits 0 after cleanup, whichever comes first.
// With stdin left open, only the signal can end the server: the test waits
// for that exit before it closes stdin.
func TestHarden_SIGTERMIsACleanShutdown(t *testing.T) {
	bin := buildNeedle(t)
	for _, closeStdin := range []bool{false, true} {
		t.Run(fmt.Sprintf("closeStdin=%v", closeStdin), func(t *testing.T) {
			repo, data := storeRepo(t)
			p := startMCP(t, bin, serveArgs(repo, data, "--cache-only")...)
			p.initialize()
			if closeStdin {
				p.stdin.Close()
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			var code int
			if closeStdin {
				code, _ = p.finish()
			} else {
				code = p.wait() // stdin stays open: only the signal ends it
				p.stdin.Close()
			}
			if code != 0 || strings.Contains(p.stderr.String(), "context canceled") {
				t.Errorf("SIGTERM: exit %d, stderr %q; want exit 0 and no error", code, p.stderr.String())
			}
		})
	}
}

// toolNames lists the tools a tools/list reply offers.
func toolNames(t *testing.T, r rpcReply) []string {
	t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if r.Error != nil {
		t.Fatalf("tools/list: %+v", r.Error)
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// Issue 12 item 5: only tools that can run are listed. Without a worker
// backend (no --codex, no codex.command) the change tools cannot run; with a
// role profile whose patch sandbox is read-only, prepare_change cannot.
func TestHarden_OnlyRunnableToolsAreListed(t *testing.T) {
	t.Run("NoBackend", func(t *testing.T) {
		repo, data := storeRepo(t)
		p := startMCP(t, needlePath(t), serveArgs(repo, data)...)
		p.initialize()
		p.sendLine(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if got := toolNames(t, p.await("1")); !slices.Equal(got, []string{"need_context"}) {
			t.Errorf("tools without a worker backend: %v; want [need_context]", got)
		}
	})
	t.Run("ReadOnlyPatchSandbox", func(t *testing.T) {
		repo, data := storeRepo(t)
		profile := `{"worker_model":"","effort":"","limits":{"needs":3,"workers":3},"sandbox":{"evidence":"read-only","patch":"read-only","verifier":"read-only"}}`
		if r := run(t, profile, "profile", "create", "--data-dir", data, "ro", "-"); r.code != 0 {
			t.Fatalf("profile create: %d %s", r.code, r.stderr)
		}
		codex := workerScript(t, filepath.Join(t.TempDir(), "log"), "exit 1")
		args := serveArgs(repo, data, "--codex", codex)
		args[len(args)-3] = "ro" // --role-profile ro
		p := startMCP(t, needlePath(t), args...)
		p.initialize()
		p.sendLine(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if got := toolNames(t, p.await("1")); slices.Contains(got, "prepare_change") {
			t.Errorf("tools under a read-only patch sandbox: %v; prepare_change cannot run there", got)
		}
	})
}

// Issue 12 item 6 (second half): `needle mcp serve --routes LIST` freezes
// the connection's enabled routes, like `need resolve --routes`.
func TestHarden_MCPServeRoutes(t *testing.T) {
	repo, data := storeRepo(t)
	p := startMCP(t, needlePath(t), serveArgs(repo, data, "--cache-only", "--routes", "locate.implementation")...)
	p.initialize()
	p.sendLine(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	r := p.await("1")
	var res struct {
		Tools []struct {
			InputSchema struct {
				Properties struct {
					Route struct {
						Enum []string `json:"enum"`
					} `json:"route"`
				} `json:"properties"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Tools) == 0 {
		t.Fatalf("tools/list: %s (%v)", short(r.raw), err)
	}
	if got := res.Tools[0].InputSchema.Properties.Route.Enum; !slices.Equal(got, []string{"locate.implementation"}) {
		t.Errorf("advertised routes %v; want [locate.implementation]", got)
	}
	r = p.call(2, "need_context", `{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Open"}}`)
	if r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("a disabled route was answered %s; want -32602", short(r.raw))
	}
}

// Issue 12 item 14: methods that need an answer do nothing when sent as
// notifications (no id): nothing runs, nothing is written.
func TestHarden_RequestsSentAsNotificationsDoNothing(t *testing.T) {
	t.Run("Initialize", func(t *testing.T) {
		repo, data := storeRepo(t)
		p := startMCP(t, needlePath(t), serveArgs(repo, data, "--cache-only")...)
		// Today the notification and the request race to freeze the same
		// session: whichever loses fails, so one of the two checks below
		// fails on every run.
		p.sendLine(`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"n","version":"1"}}}`)
		p.sendLine(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"n","version":"1"}}}`)
		if r := p.await("1"); r.Error != nil {
			t.Errorf("the real initialize after an initialize notification failed: %s", short(r.raw))
		}
		p.finish()
		if strings.Contains(p.stderr.String(), "constraint failed") {
			t.Errorf("the initialize notification ran and wrote the session:\n%s", p.stderr.String())
		}
		if n := queryInt(t, data, `SELECT count(*) FROM session_freezes`); n != 1 {
			t.Errorf("%d sessions frozen; only the initialize request may freeze one", n)
		}
	})
	t.Run("ToolsCall", func(t *testing.T) {
		repo, data := storeRepo(t)
		if out, r := propose(t, repo, data, openLocation); out.Status != "certified" {
			t.Fatalf("propose: %+v %s", out, r.stderr)
		}
		p := startMCP(t, needlePath(t), serveArgs(repo, data, "--cache-only")...)
		p.initialize()
		// tools/call is served in arrival order, so the notification is
		// handled (or dropped) before request 2 runs.
		p.sendLine(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"need_context","arguments":` + needOpen + `}}`)
		res := structured(t, p.call(2, "need_context", needOpen))
		if res.Step.Ordinal != 1 || res.Step.Relation == "repeat" {
			t.Errorf("the first answered call is step %d (%s): the tools/call notification ran", res.Step.Ordinal, res.Step.Relation)
		}
		p.finish()
		if n := queryInt(t, data, `SELECT count(*) FROM resolutions`); n != 1 {
			t.Errorf("%d resolutions recorded; only the request's may be", n)
		}
	})
}

// Issue 12 item 15: envelope keys are matched exactly (no case or Unicode
// folding) and a duplicate key is refused, as in tool arguments: what a
// gateway reads in the envelope is what Needle runs.
func TestHarden_EnvelopeKeysAreExact(t *testing.T) {
	repo, data := storeRepo(t)
	if out, r := propose(t, repo, data, openLocation); out.Status != "certified" {
		t.Fatalf("propose: %+v %s", out, r.stderr)
	}
	p := startMCP(t, needlePath(t), serveArgs(repo, data, "--cache-only")...)
	p.sendLine(`{"jsonrpc":"2.0","id":"v","method":"initialize","params":{"protocolVersion":"2024-11-05","PROTOCOLVERSION":"2025-06-18","capabilities":{},"clientInfo":{"name":"n","version":"1"}}}`)
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if r := p.await(`"v"`); r.Error != nil || json.Unmarshal(r.Result, &init) != nil || init.ProtocolVersion != "2024-11-05" {
		t.Errorf("initialize with protocolVersion 2024-11-05 and PROTOCOLVERSION 2025-06-18 negotiated %s", short(r.raw))
	}
	p.sendLine(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	p.sendLine(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"need_context","NAME":"nope","arguments":` + needOpen + `}}`)
	if r := p.await("1"); r.Error != nil && strings.Contains(r.Error.Message, "nope") {
		t.Errorf(`"NAME" was read as the tool name: %s`, short(r.raw))
	}
	p.sendLine(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","name":"need_context","arguments":` + needOpen + `}}`)
	if r := p.await("2"); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("a duplicate \"name\" was answered %s; want -32602", short(r.raw))
	}
	p.sendLine(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"need_context","argumentſ":` + needOpen + `}}`)
	if r := p.await("3"); r.Error == nil {
		t.Errorf(`"argumentſ" (long s) was read as "arguments": %s`, short(r.raw))
	}
	p.sendLine(`{"jsonrpc":"2.0","id":4,"method":"ping","method":"tools/list"}`)
	if r := p.await("4"); r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("a duplicate \"method\" was answered %s; want -32600", short(r.raw))
	}
	p.sendLine(`{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}`)
	for _, l := range allLines(p) {
		if r := parseReply(t, l); string(r.ID) == "6" && r.Error == nil {
			t.Errorf("a duplicate \"id\" was answered %s; want -32600", short(l))
		}
	}
}

// allLines closes the session and returns everything it wrote.
func allLines(p *mcpProc) [][]byte {
	_, lines := p.finish()
	return lines
}

// Issue 12 item 16: one canonical id rule. An id is a string of valid
// Unicode (identity: its value) or an integer within ±(2^53−1) (identity:
// its value, so 7 and 7.0, 0 and -0 are one id); anything else is -32600
// with id null, and the output stays valid UTF-8.
func TestHarden_CanonicalRequestIDs(t *testing.T) {
	repo, data := storeRepo(t)
	p := startMCP(t, needlePath(t), serveArgs(repo, data, "--cache-only")...)
	p.initialize()
	ping := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }
	p.sendLine(ping(`"a` + "\xff" + `"`)) // invalid UTF-8
	p.sendLine(ping(`"a` + "\xfe" + `"`))
	p.sendLine(ping(`"\ud800"`)) // a lone surrogate
	p.sendLine(ping(`1e400`))
	p.sendLine(ping(`9007199254740993`))
	p.sendLine(ping(`7.5`))
	p.sendLine(ping(`7`))
	p.sendLine(ping(`7.0`))
	p.sendLine(ping(`0`))
	p.sendLine(ping(`-0`))
	p.sendLine(`{"jsonrpc":"2.0","id":"m","method":null}`)
	_, lines := p.finish()
	var out bytes.Buffer
	var successes []string
	for _, l := range lines {
		out.Write(l)
		r := parseReply(t, l)
		if r.Error == nil {
			successes = append(successes, string(r.ID))
		}
		if string(r.ID) == `"m"` && (r.Error == nil || r.Error.Code != -32600) {
			t.Errorf(`"method": null was answered %s; want -32600`, short(l))
		}
	}
	if !utf8.Valid(out.Bytes()) {
		t.Errorf("stdout is not valid UTF-8:\n%q", out.Bytes())
	}
	// Only the handshake, the first 7 and the first 0 may succeed.
	want := []string{`"init"`, `0`, `7`}
	slices.Sort(successes)
	if !slices.Equal(successes, want) {
		t.Errorf("requests answered with success, by id: %v; want %v", successes, want)
	}
}

// Issue 12 item 18 (the unit of a bound): the arguments schema Needle
// advertises and the bounds it enforces agree. Whatever the advertised
// inputSchema accepts (JSON Schema counts string length in code points) is
// not refused for its length, and what Needle refuses the schema refuses.
func TestHarden_AdvertisedBoundsAreEnforcedInTheSameUnit(t *testing.T) {
	repo, data := storeRepo(t)
	p := startMCP(t, needlePath(t), serveArgs(repo, data, "--cache-only")...)
	p.initialize()
	p.sendLine(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(p.await("1").Result, &list); err != nil || len(list.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(list.Tools[0].InputSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("need_context.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("need_context.json")
	if err != nil {
		t.Fatal(err)
	}
	wide := func(n int) string { return strings.Repeat("界", n) } // 3 bytes, 1 code point
	cases := []struct{ name, args string }{
		{"SubjectName200CodePoints", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"` + wide(200) + `"}}`},
		{"Task2000CodePoints", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Open"},"task":"` + wide(2000) + `"}`},
		{"SubjectName300CodePoints", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"` + wide(300) + `"}}`},
	}
	for i, tc := range cases {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		schemaOK := schema.Validate(inst) == nil
		r := p.call(10+i, "need_context", tc.args)
		needleOK := r.Error == nil
		if schemaOK != needleOK {
			msg := "accepted"
			if r.Error != nil {
				msg = r.Error.Message
			}
			t.Errorf("%s: the advertised schema says valid=%v, Needle says %s", tc.name, schemaOK, msg)
		}
	}
}

// Issue 12 item 20 (ledger, over MCP): a need the ledger classifies as
// incompatible with an earlier one of the connection is not resolved as if
// it were independent, and repeats are bounded too: one connection's ledger
// cannot grow without limit.
func TestHarden_LedgerOverMCP(t *testing.T) {
	t.Run("IncompatibleIsNotResolved", func(t *testing.T) {
		repo, data := storeRepo(t)
		if out, r := propose(t, repo, data, openLocation); out.Status != "certified" {
			t.Fatalf("propose: %+v %s", out, r.stderr)
		}
		p := startMCP(t, needlePath(t), serveArgs(repo, data, "--cache-only")...)
		p.initialize()
		structured(t, p.call(1, "need_context", `{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Open"}}`))
		// Same subject, a runtime_flow of another scenario: the two needs
		// cannot both hold.
		res := structured(t, p.call(2, "need_context", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Open"},"preferred":[{"kind":"runtime_flow","scenario":"on-error"}]}`))
		if res.Step.Relation != "incompatible" {
			t.Fatalf("relation %q; the fixture expects incompatible", res.Step.Relation)
		}
		if res.Status != "bypass" {
			t.Errorf("an incompatible need was resolved normally: %s %s\n%s", res.Status, res.Resolution.Kind, res.Context)
		}
	})
	t.Run("RepeatsAreBounded", func(t *testing.T) {
		repo, data := storeRepo(t)
		if out, r := propose(t, repo, data, openLocation); out.Status != "certified" {
			t.Fatalf("propose: %+v %s", out, r.stderr)
		}
		p := startMCP(t, needlePath(t), serveArgs(repo, data, "--cache-only")...)
		p.initialize()
		const calls = 200
		for i := 1; i <= calls; i++ {
			res := structured(t, p.call(i, "need_context", needOpen))
			if res.Status == "bypass" && strings.Contains(res.Context, "limit") {
				return // the connection's ledger is bounded
			}
		}
		t.Errorf("%d repeats of one need on one connection were all resolved: the ledger has no bound", calls)
	})
}

// Issue 12 item 21: scopes and change text refuse every alias of .git on the
// file systems checkouts live on (HFS+ ignorable code points, NTFS streams
// and 8.3 names), control characters, bidi marks and NUL. A valid request
// reaches the (failing) worker and is a tool error; a hostile one is -32602
// before anything runs.
func TestHarden_HostileScopesAndChangeText(t *testing.T) {
	repo, data := storeRepo(t)
	log := filepath.Join(t.TempDir(), "log")
	codex := workerScript(t, log, "exit 1")
	p := startMCP(t, needlePath(t), serveArgs(repo, data, "--codex", codex)...)
	p.initialize()
	change := func(task, criterion, scope string) string {
		b, _ := json.Marshal(map[string]any{"task": task, "acceptance_criteria": []string{criterion},
			"scopes": []any{map[string]string{"path": scope, "kind": "exact"}}})
		return string(b)
	}
	// The control passes every check of its text and stops at the next
	// one: the repository has no certified test to run a change on.
	const noTest = "no certified test to run"
	r := p.call(1, "prepare_change", change("Rename Open.", "Open is renamed.", "store.go"))
	if r.Error == nil || !strings.Contains(r.Error.Message, noTest) {
		t.Fatalf("the valid control request was answered %s; want the refusal for want of a certified test", short(r.raw))
	}
	hostile := []struct{ name, task, criterion, scope string }{
		{"ZeroWidthJoiner", "t", "c", ".git\u200d/config"},
		{"ZeroWidthNonJoiner", "t", "c", ".g\u200cit/config"},
		{"ByteOrderMark", "t", "c", "\ufeff.git/config"},
		{"RightToLeftMarkInGit", "t", "c", ".git\u200f/hooks/pre-commit"},
		{"NTFSIndexAllocation", "t", "c", ".git::$INDEX_ALLOCATION/config"},
		{"NTFSDataStream", "t", "c", ".git:$DATA"},
		{"ShortNameGIT2", "t", "c", "GIT~2/config"},
		{"ControlCharacterInScope", "t", "c", "a\u0007b.go"},
		{"BidiOverrideInScope", "t", "c", "a\u202eog.txt"},
		{"NULInTask", "fix\u0000 it", "c", "store.go"},
		{"BidiOverrideInTask", "fix \u202eit", "c", "store.go"},
		{"EscapeInCriterion", "t", "\u001b[31mred\u001b[0m", "store.go"},
	}
	for i, h := range hostile {
		r := p.call(100+i, "prepare_change", change(h.task, h.criterion, h.scope))
		if r.Error == nil || r.Error.Code != -32602 || strings.Contains(r.Error.Message, noTest) {
			t.Errorf("%s: %q / %q / %q was answered %s; want -32602 for its text", h.name, h.task, h.criterion, h.scope, short(r.raw))
		}
	}
	p.finish()
	// Refused before anything runs: no change, no lifecycle, and none of
	// the hostile text is stored.
	if n := queryInt(t, data, `SELECT count(*) FROM changes`) + queryInt(t, data, `SELECT count(*) FROM change_lifecycles`); n != 0 {
		t.Errorf("%d changes or lifecycles stored by refused requests", n)
	}
	text := storeText(t, data)
	for _, h := range hostile {
		for _, s := range []string{h.task, h.criterion, h.scope} {
			if s != "t" && s != "c" && s != "store.go" && strings.Contains(text, s) {
				t.Errorf("%s: the store holds %q", h.name, s)
			}
		}
	}
}
