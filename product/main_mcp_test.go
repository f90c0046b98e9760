package product

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/needle-dev/needle/product/testenv"
)

// The official Go SDK client is the peer here: a real MCP client driving
// the needle command (this test binary as needle, see TestMain) over stdio.
// Each test runs twice: standalone (the command opens the store) and
// resident (a runtime serves the data directory and the command runs
// there over IPC).

// mcpModes are the two ways needle mcp serve runs.
var mcpModes = []string{"Standalone", "Resident"}

// mcpMode starts the resident runtime of data in mode Resident; it returns
// a check, run at the end, that the session really ran in it.
func mcpMode(t *testing.T, mode, data string) (check func()) {
	t.Helper()
	if mode != "Resident" {
		return func() {}
	}
	rt := mustRuntime(t, data)
	return func() {
		t.Helper()
		if rt.mustStatus(t).CommandsServed == 0 {
			t.Error("the MCP session did not run in the resident runtime")
		}
	}
}

func sdkSession(t *testing.T, te *testEngine, version, mode string) *mcp.ClientSession {
	t.Helper()
	te.Close() // the command opens the same data directory
	t.Cleanup(mcpMode(t, mode, te.data))
	cmd := needleCommand(t, "mcp", "serve", "--data-dir", te.data, "--repository", te.repo,
		"--main-model", "sdk-test", "--role-profile", "default", "--cache-only")
	client := mcp.NewClient(&mcp.Implementation{Name: "needle-test", Version: "0.0.1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (%s): %v", version, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMCP_GoSDKClient(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) { testMCPGoSDKClient(t, mode) })
	}
}

func testMCPGoSDKClient(t *testing.T, mode string) {
	for _, version := range []string{"", "2025-06-18", "2024-11-05"} {
		name := version
		if name == "" {
			name = "SDKDefault"
		}
		t.Run(name, func(t *testing.T) {
			te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
			te.mustCertify(locNewSearcher)
			s := sdkSession(t, te, version, mode)
			ctx := context.Background()
			want := version
			if want == "" {
				want = "2025-06-18" // the SDK asks for a newer version; the server answers its latest
			}
			if got := s.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("negotiated %s, want %s", got, want)
			}
			tools, err := s.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "need_context" {
				t.Fatalf("tools/list: %+v, %v", tools, err)
			}
			var args map[string]any
			_ = json.Unmarshal([]byte(needLocateNewSearcher), &args)
			res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "need_context", Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("need_context: %+v, %v", res, err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !strings.Contains(text, "search.go:15-17") || !strings.Contains(text, "coverage_hit") {
				t.Errorf("context %q", text)
			}
			if want == "2024-11-05" {
				if res.StructuredContent != nil {
					t.Errorf("structuredContent on 2024-11-05: %v", res.StructuredContent)
				}
				return
			}
			schema := compileSchema(t, roundTrip(t, tools.Tools[0].OutputSchema))
			sc := roundTrip(t, res.StructuredContent)
			if err := schema.Validate(sc); err != nil {
				t.Errorf("structuredContent does not validate against the advertised outputSchema: %v", err)
			}
			if sc.(map[string]any)["context"] != text {
				t.Error("content[0].text != structuredContent.context")
			}
			// Invalid arguments are a protocol error (-32602), not a tool result.
			_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "need_context", Arguments: map[string]any{"route": "locate.implementation"}})
			if err == nil || !strings.Contains(err.Error(), "subject") {
				t.Errorf("invalid arguments: %v", err)
			}
		})
	}
}

// roundTrip turns a value into plain JSON data (maps, slices, float64).
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMCP_GoSDKCancel cancels an in-flight need_context from the SDK
// client: the server interrupts the App Server turn, kills its process
// tree, cleans the checkout up and records the run. The App Server is the
// replay server serving a worker session cut right after its turn started,
// so the turn never ends by itself.
func TestMCP_GoSDKCancel(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) { testMCPGoSDKCancel(t, mode) })
	}
}

func testMCPGoSDKCancel(t *testing.T, mode string) {
	held := filepath.Join(t.TempDir(), "held")
	src := string(MustReadFile(t, filepath.Join("..", "frozen", "worker", "grepx", "86e95f3d8225eb2c06a5c0f3bb71cb94.jsonl")))
	MustWriteFile(t, filepath.Join(held, "session.jsonl"), heldSession(t, src))

	repo := MustFixtureRepo(t, "grepx", false)
	data := t.TempDir()
	t.Cleanup(mcpMode(t, mode, data))
	cmd := needleCommand(t, "mcp", "serve", "--data-dir", data, "--repository", repo, "--main-model", "sdk-test",
		"--role-profile", "default", "--codex", strings.Join(MustReplayCommand(t, held), " "))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "needle-test", Version: "0.0.1"}, nil)
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var args map[string]any
	_ = json.Unmarshal(MustReadFile(t, "../fixtures/worker/newsearcher.need.json"), &args)
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "need_context", Arguments: args})
		result <- err
	}()
	// The worker is running once its checkout exists.
	deadline := time.Now().Add(30 * time.Second)
	for !hasEntries(filepath.Join(data, "checkouts")) {
		if time.Now().After(deadline) {
			t.Fatal("the worker never started")
		}
		runtimeYield()
	}
	cancel()
	if err := <-result; err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	// The SDK sends notifications/cancelled asynchronously: the server
	// has acted on it once the worker's checkout is gone.
	deadline = time.Now().Add(30 * time.Second)
	for hasEntries(filepath.Join(data, "checkouts")) {
		if time.Now().After(deadline) {
			t.Fatalf("the cancellation never reached the worker\n%s", stderr.String())
		}
		runtimeYield()
	}
	if err := s.Close(); err != nil {
		t.Errorf("the server did not exit cleanly on stdin EOF: %v\n%s", err, stderr.String())
	}
	st, err := OpenStore(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var status, msg string
	if err := st.db.QueryRow(`SELECT status, error FROM worker_runs`).Scan(&status, &msg); err != nil || status != "failed" {
		t.Errorf("the cancelled run was not recorded as failed: %q %q %v", status, msg, err)
	}
	for _, dir := range []string{"checkouts", "codex-homes"} {
		if hasEntries(filepath.Join(data, dir)) {
			t.Errorf("%s left behind after cancellation", dir)
		}
	}
}

func hasEntries(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) > 0
}

// runtimeYield lets other goroutines and processes run between polls of a
// condition that only the file system shows.
func runtimeYield() { runtime.Gosched() }

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

// seedChangeTests readies a data directory for an MCP change the way a
// user does, with the needle binary: the test phase runs in the real
// codex sandbox, and the scenario's focused_tests proposals are certified
// (prepare_change finds them beside the scoped file).
func seedChangeTests(t *testing.T, repo, data, scenario string) {
	t.Helper()
	needleRun(t, "", "config", "set", "--data-dir", data, "tests.codex", MustSandbox(t))
	needleRun(t, "", "config", "set", "--data-dir", data, "tests.cache", testenv.Cache(t, "testrun-lifecycle"))
	needleRun(t, "", "config", "set", "--data-dir", data, "tests.deadline", "10m")
	for i, raw := range mustChangeScenario(t, scenario).TestPlans {
		plan := filepath.Join(t.TempDir(), fmt.Sprintf("plan%d.json", i))
		MustWriteFile(t, plan, string(raw))
		if out := needleRun(t, "", "evidence", "propose", "--repository", repo, "--data-dir", data, plan); !strings.Contains(out, "certified") {
			t.Fatalf("needle evidence propose %s: %s", raw, out)
		}
	}
}

// TestMCP_GoSDKChange drives prepare_change and verify_change on the built
// binary with the official SDK client, on both protocol versions, the App
// Server being the replay of the repair scenario: tools/list offers all
// three tools, results validate against the advertised outputSchemas and
// content[0].text is the context.
func TestMCP_GoSDKChange(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) { testMCPGoSDKChange(t, mode) })
	}
}

func testMCPGoSDKChange(t *testing.T, mode string) {
	frozen, err := filepath.Abs(filepath.Join("..", "frozen", "changes", "repair"))
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"2025-06-18", "2024-11-05"} {
		t.Run(version, func(t *testing.T) {
			repo := MustFixtureRepo(t, "grepx", true)
			before := treeDigest(t, repo)
			data := t.TempDir()
			t.Cleanup(mcpMode(t, mode, data))
			seedChangeTests(t, repo, data, "repair")
			cmd := needleCommand(t, "mcp", "serve", "--data-dir", data, "--repository", repo, "--main-model", "sdk-test",
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
			if !changeIDPattern.MatchString(id) || !strings.Contains(text, "prepared") || !strings.Contains(text, "verification: not_requested") {
				t.Fatalf("prepare_change context %q", text)
			}
			ver := call("verify_change", map[string]any{"change_id": id})
			if text := ver["context"].(string); !strings.Contains(text, ": verified (patch") || !strings.Contains(text, "repair: applied") ||
				!strings.Contains(text, "test TestCRLF: passed") {
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
