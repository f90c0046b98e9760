package product

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestMCP_ChangeInvalidParams: every invalid prepare_change and
// verify_change input is a -32602 naming the offending field, before any
// worker runs or anything is stored; under --cache-only the change tools
// are neither listed nor callable.
func TestMCP_ChangeInvalidParams(t *testing.T) {
	te, _ := changeEngine(t, MustFixtureRepo(t, "grepx", false), "verified")
	p := MustMCP(t, te, false)
	p.initialize("2025-06-18")
	list := p.call(1, "tools/list", `{}`)
	if n := len(list["result"].(map[string]any)["tools"].([]any)); n != 3 {
		t.Errorf("%d tools listed, want 3", n)
	}
	valid := `"task":"t","acceptance_criteria":["c"],"scopes":[{"path":"options.go","kind":"exact"}]`
	cases := []struct{ name, tool, args, path string }{
		{"notObject", "prepare_change", `[]`, "$"},
		{"missingTask", "prepare_change", `{"acceptance_criteria":["c"],"scopes":[{"path":"a","kind":"exact"}]}`, "task"},
		{"blankTask", "prepare_change", `{"task":"  ","acceptance_criteria":["c"],"scopes":[{"path":"a","kind":"exact"}]}`, "task"},
		{"oversizedTask", "prepare_change", `{"task":"` + strings.Repeat("x", maxTaskChars+1) + `","acceptance_criteria":["c"],"scopes":[{"path":"a","kind":"exact"}]}`, "task"},
		{"noCriteria", "prepare_change", `{"task":"t","acceptance_criteria":[],"scopes":[{"path":"a","kind":"exact"}]}`, "acceptance_criteria"},
		{"nineCriteria", "prepare_change", `{"task":"t","acceptance_criteria":["1","2","3","4","5","6","7","8","9"],"scopes":[{"path":"a","kind":"exact"}]}`, "acceptance_criteria"},
		{"criterionType", "prepare_change", `{"task":"t","acceptance_criteria":[1],"scopes":[{"path":"a","kind":"exact"}]}`, "acceptance_criteria[0]"},
		{"noScopes", "prepare_change", `{"task":"t","acceptance_criteria":["c"],"scopes":[]}`, "scopes"},
		{"seventeenScopes", "prepare_change", `{"task":"t","acceptance_criteria":["c"],"scopes":[` + strings.Repeat(`{"path":"a","kind":"exact"},`, 16) + `{"path":"a","kind":"exact"}]}`, "scopes"},
		{"absolutePath", "prepare_change", `{"task":"t","acceptance_criteria":["c"],"scopes":[{"path":"/etc/passwd","kind":"exact"}]}`, "scopes[0].path"},
		{"parentPath", "prepare_change", `{"task":"t","acceptance_criteria":["c"],"scopes":[{"path":"../x","kind":"subtree"}]}`, "scopes[0].path"},
		{"gitPath", "prepare_change", `{"task":"t","acceptance_criteria":["c"],"scopes":[{"path":"a/.git/config","kind":"exact"}]}`, "scopes[0].path"},
		{"dotExact", "prepare_change", `{"task":"t","acceptance_criteria":["c"],"scopes":[{"path":".","kind":"exact"}]}`, "scopes[0].path"},
		{"scopeKind", "prepare_change", `{"task":"t","acceptance_criteria":["c"],"scopes":[{"path":"a","kind":"glob"}]}`, "scopes[0].kind"},
		{"scopeField", "prepare_change", `{"task":"t","acceptance_criteria":["c"],"scopes":[{"path":"a","kind":"exact","mode":"w"}]}`, "scopes[0].mode"},
		{"unknownField", "prepare_change", `{` + valid + `,"apply":true}`, "apply"},
		{"duplicateKey", "prepare_change", `{` + valid + `,"task":"again"}`, "task"},
		{"badArtifact", "prepare_change", `{` + valid + `,"artifact_ids":["b3:zz"]}`, "artifact_ids[0]"},
		{"unknownArtifact", "prepare_change", `{` + valid + `,"artifact_ids":["b3:` + strings.Repeat("0", 64) + `"]}`, "artifact_ids[0]"},
		{"unknownClaim", "prepare_change", `{` + valid + `,"claim_ids":["b3:` + strings.Repeat("1", 64) + `"]}`, "claim_ids[0]"},
		{"maxFilesZero", "prepare_change", `{` + valid + `,"constraints":{"max_files":0}}`, "constraints.max_files"},
		{"maxFilesBig", "prepare_change", `{` + valid + `,"constraints":{"max_files":17}}`, "constraints.max_files"},
		{"maxBytesFraction", "prepare_change", `{` + valid + `,"constraints":{"max_bytes":1.5}}`, "constraints.max_bytes"},
		{"tooManyNotes", "prepare_change", `{` + valid + `,"constraints":{"notes":["a","b","c","d","e"]}}`, "constraints.notes"},
		{"verifyMissing", "verify_change", `{}`, "change_id"},
		{"verifyMalformed", "verify_change", `{"change_id":"chg_123"}`, "change_id"},
		{"verifyExtra", "verify_change", `{"change_id":"chg_` + strings.Repeat("a", 24) + `","force":true}`, "force"},
		{"verifyUnknown", "verify_change", `{"change_id":"chg_` + strings.Repeat("a", 24) + `"}`, "change_id"},
	}
	for i, tc := range cases {
		r := p.call(10+i, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tc.tool, tc.args))
		e, _ := r["error"].(map[string]any)
		if errCode(r) != -32602 || !strings.Contains(fmt.Sprint(e["message"]), tc.path) {
			t.Errorf("%s: reply %v, want -32602 naming %s", tc.name, r, tc.path)
		}
	}
	if n := count(t, te, `SELECT count(*) FROM changes`); n != 0 {
		t.Errorf("invalid calls stored %d changes", n)
	}
	if hasEntries(filepath.Join(te.data, "checkouts")) {
		t.Error("an invalid call made a checkout")
	}

	q := MustMCP(t, te, true)
	q.initialize("2025-06-18")
	tools := q.call(1, "tools/list", `{}`)["result"].(map[string]any)["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "need_context" {
		t.Errorf("--cache-only lists %v", tools)
	}
	for i, tool := range []string{"prepare_change", "verify_change"} {
		r := q.call(2+i, "tools/call", `{"name":"`+tool+`","arguments":{`+valid+`}}`)
		if errCode(r) != -32602 || !strings.Contains(fmt.Sprint(r["error"]), "unknown tool") {
			t.Errorf("%s under --cache-only: %v", tool, r)
		}
	}
}

// TestMCP_ChangeProfileReadOnly: a session whose frozen role profile runs
// patch workers read-only cannot prepare a change, so prepare_change is not
// listed and calling it is an unknown tool (-32602); nothing runs or is
// stored. verify_change, whose verifier is read-only, stays.
func TestMCP_ChangeProfileReadOnly(t *testing.T) {
	te, _ := changeEngine(t, MustFixtureRepo(t, "grepx", false), "verified")
	p := defaultProfile
	p.Sandbox.Patch = "read-only"
	rev, err := te.store.putProfileRevision(context.Background(), "cautious", p, false)
	if err != nil {
		t.Fatal(err)
	}
	peer := MustMCP(t, te, false, func(c *MCPConfig) { c.Profile = rev })
	peer.initialize("2025-06-18")
	var names []string
	for _, tool := range peer.call(1, "tools/list", `{}`)["result"].(map[string]any)["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if want := []string{"need_context", "verify_change"}; !slices.Equal(names, want) {
		t.Errorf("tools under a read-only patch profile: %v; want %v", names, want)
	}
	args, _ := json.Marshal(changeArgs(t, "verified"))
	r := peer.call(2, "tools/call", `{"name":"prepare_change","arguments":`+string(args)+`}`)
	if errCode(r) != -32602 || !strings.Contains(fmt.Sprint(r["error"]), `unknown tool "prepare_change"`) {
		t.Errorf("prepare_change under a read-only patch profile: %v", r)
	}
	if n := count(t, te, `SELECT count(*) FROM changes`); n != 0 || hasEntries(filepath.Join(te.data, "checkouts")) {
		t.Errorf("%d changes stored", n)
	}
}

// TestMCP_ToolAnnotations: every tool states every hint, honestly: none
// writes the user's work tree or reaches an open world; need_context only
// reads and answers the same need the same way; prepare_change makes a new
// change each call; verify_change returns the recorded verdict when asked
// again. Under Codex's approval rule (a tool that is read-only, or neither
// destructive nor open-world, needs no approval) all three run unprompted.
func TestMCP_ToolAnnotations(t *testing.T) {
	te, _ := changeEngine(t, MustFixtureRepo(t, "grepx", false), "verified")
	p := MustMCP(t, te, false)
	p.initialize("2025-06-18")
	want := map[string]map[string]any{
		"need_context":   {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
		"prepare_change": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
		"verify_change":  {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
	}
	tools := p.call(1, "tools/list", `{}`)["result"].(map[string]any)["tools"].([]any)
	if len(tools) != len(want) {
		t.Fatalf("%d tools listed, want %d", len(tools), len(want))
	}
	for _, tool := range tools {
		m := tool.(map[string]any)
		got, _ := m["annotations"].(map[string]any)
		if diff := cmp.Diff(want[m["name"].(string)], got); diff != "" {
			t.Errorf("%s annotations (-want +got):\n%s", m["name"], diff)
		}
		codexAsks := got["destructiveHint"] == true || got["readOnlyHint"] != true && got["openWorldHint"] != false
		if codexAsks {
			t.Errorf("%s would need an approval in Codex", m["name"])
		}
	}
}

func TestMCP_NeedContext(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	te.mustCertify(locNewSearcher)
	for _, version := range []string{"2025-06-18", "2024-11-05"} {
		t.Run(version, func(t *testing.T) {
			p := MustMCP(t, te, true)
			p.initialize(version)
			list := p.call(1, "tools/list", `{}`)
			tools := list["result"].(map[string]any)["tools"].([]any)
			tool := tools[0].(map[string]any)
			if len(tools) != 1 || tool["name"] != "need_context" {
				t.Fatalf("tools %v", tools)
			}
			_, hasOut := tool["outputSchema"]
			if hasOut != (version == "2025-06-18") {
				t.Errorf("outputSchema present %v on %s", hasOut, version)
			}
			r := p.call(2, "tools/call", `{"name":"need_context","arguments":`+needLocateNewSearcher+`}`)
			res := r["result"].(map[string]any)
			text := res["content"].([]any)[0].(map[string]any)["text"].(string)
			if !strings.Contains(text, "search.go:15-17") {
				t.Errorf("context %q", text)
			}
			sc, structured := res["structuredContent"].(map[string]any)
			if structured != (version == "2025-06-18") {
				t.Fatalf("structuredContent present %v on %s", structured, version)
			}
			if structured {
				if sc["context"] != text {
					t.Error("content[0].text != structuredContent.context")
				}
				schema := compileSchema(t, tool["outputSchema"])
				if err := schema.Validate(sc); err != nil {
					t.Errorf("structuredContent does not match the outputSchema: %v", err)
				}
			}
		})
	}
}

func TestMCP_InvalidParams(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Routes = routeSet{routeLocateImplementation, routeTraceStateFlow} })
	p := MustMCP(t, te, true)
	p.initialize("2025-06-18")
	id := 10
	for _, tt := range invalidCases {
		if !json.Valid([]byte(tt.src)) || !utf8.ValidString(tt.src) || !strings.HasPrefix(strings.TrimSpace(tt.src), "{") || len(tt.src) > 32<<10 {
			continue // not an arguments object in JSON text: the JSON-RPC layer rejects it first
		}
		id++
		r := p.call(id, "tools/call", `{"name":"need_context","arguments":`+tt.src+`}`)
		e, _ := r["error"].(map[string]any)
		if errCode(r) != -32602 || !strings.Contains(fmt.Sprint(e["message"]), tt.path) {
			t.Errorf("%s: reply %v, want -32602 naming %s", tt.name, r, tt.path)
		}
	}
	var n int
	if err := te.store.db.QueryRow(`SELECT count(*) FROM resolutions`).Scan(&n); err != nil || n != 0 {
		t.Errorf("invalid calls resolved %d needs (%v)", n, err)
	}
}

func compileSchema(t *testing.T, schema any) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://schema.json", schema); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCompiledArgs: a connection's memory of compiled needs answers the
// same bytes with the same need, hands each caller a need of its own, and
// never remembers a failure.
func TestCompiledArgs(t *testing.T) {
	var c compiledArgs
	calls := 0
	compile := func(src string) func() (compiledNeed, error) {
		return func() (compiledNeed, error) {
			calls++
			req, err := DecodeNeedRequest([]byte(src))
			if err != nil {
				return compiledNeed{}, err
			}
			return Compile(req, AllRoutes())
		}
	}
	args := []byte(needTraceCRLF)
	first, err := c.compile(args, compile(needTraceCRLF))
	if err != nil {
		t.Fatal(err)
	}
	first.IR.Obligations[0].Kind = "mutated by the caller"
	first.IR.World.Features = append(first.IR.World.Features[:0], "mutated")
	again, err := c.compile(args, compile(needTraceCRLF))
	want, _ := compile(needTraceCRLF)()
	if err != nil || calls != 2 || !reflect.DeepEqual(again, want) {
		t.Errorf("remembered need %+v (%v, %d compiles), want %+v", again, err, calls, want)
	}
	bad := []byte(`{"route":"no.such.route"}`)
	for range 2 {
		if _, err := c.compile(bad, compile(string(bad))); err == nil {
			t.Fatal("an invalid need compiled")
		}
	}
	if calls != 4 {
		t.Errorf("%d compiles, want the invalid need compiled each time (4 in all)", calls)
	}
}
