package product

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// changeArgs is the prepare_change request of a change scenario as MCP
// arguments.
func changeArgs(t *testing.T, scenario string) map[string]any {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal(mustChangeScenario(t, scenario).Request, &args); err != nil {
		t.Fatal(err)
	}
	return args
}

// TestMCP_GoSDKChange drives prepare_change and verify_change on the built
// binary with the official SDK client, on both protocol versions, the App
// Server being the replay of the repair scenario: tools/list offers all
// three tools, results validate against the advertised outputSchemas and
// content[0].text is the context.
func TestMCP_GoSDKChange(t *testing.T) {
	frozen, err := filepath.Abs(filepath.Join("..", "frozen", "changes", "repair"))
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"2025-06-18", "2024-11-05"} {
		t.Run(version, func(t *testing.T) {
			repo := MustFixtureRepo(t, "grepx", true)
			before := treeDigest(t, repo)
			cmd := needleCommand(t, "mcp", "serve", "--data-dir", t.TempDir(), "--repository", repo, "--main-model", "sdk-test",
				"--role-profile", "default", "--codex", strings.Join(MustReplayCommand(t, frozen), " "))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "needle-test", Version: "0.0.1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tools, err := s.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*mcp.Tool{}
			for _, tool := range tools.Tools {
				byName[tool.Name] = tool
				if in := roundTrip(t, tool.InputSchema).(map[string]any); in["additionalProperties"] != false {
					t.Errorf("%s: inputSchema is not closed", tool.Name)
				}
				if (tool.OutputSchema != nil) != (version == "2025-06-18") {
					t.Errorf("%s: outputSchema present %v on %s", tool.Name, tool.OutputSchema != nil, version)
				}
			}
			if len(byName) != 3 || byName["need_context"] == nil || byName["prepare_change"] == nil || byName["verify_change"] == nil {
				t.Fatalf("tools/list: %v", byName)
			}
			call := func(name string, args any) map[string]any {
				t.Helper()
				res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil || res.IsError {
					t.Fatalf("%s: %+v, %v\n%s", name, res, err, stderr.String())
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if version == "2024-11-05" {
					if res.StructuredContent != nil {
						t.Errorf("%s: structuredContent on 2024-11-05", name)
					}
					return map[string]any{"context": text}
				}
				sc := roundTrip(t, res.StructuredContent).(map[string]any)
				if err := compileSchema(t, roundTrip(t, byName[name].OutputSchema)).Validate(sc); err != nil {
					t.Errorf("%s: structuredContent does not match the outputSchema: %v", name, err)
				}
				if sc["context"] != text {
					t.Errorf("%s: content[0].text != structuredContent.context", name)
				}
				return sc
			}
			prep := call("prepare_change", changeArgs(t, "repair"))
			text := prep["context"].(string)
			id := strings.Fields(strings.TrimPrefix(text, "change "))[0]
			id = strings.TrimSuffix(id, ":")
			if !ChangeIDPattern.MatchString(id) || !strings.Contains(text, "prepared") || !strings.Contains(text, "verification: not_requested") {
				t.Fatalf("prepare_change context %q", text)
			}
			ver := call("verify_change", map[string]any{"change_id": id})
			if text := ver["context"].(string); !strings.Contains(text, ": verified (patch") || !strings.Contains(text, "repair: applied") {
				t.Errorf("verify_change context %q", text)
			}
			if version == "2025-06-18" && (ver["verdict"] != "verified" || ver["revision"] != float64(2)) {
				t.Errorf("verify_change = %v", ver)
			}
			if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "verify_change", Arguments: map[string]any{"change_id": "chg_nope"}}); err == nil || !strings.Contains(err.Error(), "change_id") {
				t.Errorf("malformed change id: %v", err)
			}
			if got := treeDigest(t, repo); got != before {
				t.Error("the active work tree changed")
			}
		})
	}
}

// TestMCP_ChangeInvalidParams: every invalid prepare_change and
// verify_change input is a -32602 naming the offending field, before any
// worker runs or anything is stored; under --cache-only the change tools
// are neither listed nor callable.
func TestMCP_ChangeInvalidParams(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), replayCodex(t, "verified"))
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
		{"oversizedTask", "prepare_change", `{"task":"` + strings.Repeat("x", MaxTaskBytes+1) + `","acceptance_criteria":["c"],"scopes":[{"path":"a","kind":"exact"}]}`, "task"},
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
// patch workers read-only cannot prepare a change; the call is a tool error
// and nothing runs or is stored.
func TestMCP_ChangeProfileReadOnly(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), replayCodex(t, "verified"))
	p := defaultProfile
	p.Sandbox.Patch = "read-only"
	rev, err := te.store.putProfileRevision(context.Background(), "cautious", p, false)
	if err != nil {
		t.Fatal(err)
	}
	peer := MustMCP(t, te, false, func(c *MCPConfig) { c.Profile = rev })
	peer.initialize("2025-06-18")
	args, _ := json.Marshal(changeArgs(t, "verified"))
	r := peer.call(1, "tools/call", `{"name":"prepare_change","arguments":`+string(args)+`}`)
	res, _ := r["result"].(map[string]any)
	if res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "cautious revision 1 runs patch workers read-only") {
		t.Errorf("prepare_change under a read-only patch profile: %v", r)
	}
	if n := count(t, te, `SELECT count(*) FROM changes`); n != 0 || hasEntries(filepath.Join(te.data, "checkouts")) {
		t.Errorf("%d changes stored", n)
	}
}
