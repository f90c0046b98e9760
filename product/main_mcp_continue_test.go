package product

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCP_WorkerContinue: by default (no worker.continue set), the trace of --crlf
// after its location, on the same MCP connection, continues the first
// worker's thread — the App Server is the replay server holding only the
// continued session, so a fresh thread would fail the worker — and the
// kept worker, checkout and home go when the connection ends.
func TestMCP_WorkerContinue(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) { testMCPWorkerContinue(t, mode) })
	}
}

func testMCPWorkerContinue(t *testing.T, mode string) {
	frozen, err := filepath.Abs(filepath.Join("..", "frozen", "continue", "continued"))
	if err != nil {
		t.Fatal(err)
	}
	repo := MustFixtureRepo(t, "grepx", false)
	data := t.TempDir()
	t.Cleanup(mcpMode(t, mode, data))
	cmd := needleCommand(t, "mcp", "serve", "--data-dir", data, "--repository", repo, "--main-model", "sdk-test",
		"--role-profile", "default", "--codex", strings.Join(MustReplayCommand(t, frozen), " "))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "needle-test", Version: "0.0.1"}, nil)
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	call := func(need string) map[string]any {
		t.Helper()
		var args map[string]any
		_ = json.Unmarshal([]byte(need), &args)
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "need_context", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("need_context: %+v, %v\n%s", res, err, stderr.String())
		}
		return roundTrip(t, res.StructuredContent).(map[string]any)
	}
	first := call(needLocateCRLF)
	if first["status"] != "worker" {
		t.Errorf("first need: %v", first)
	}
	if !hasEntries(filepath.Join(data, "checkouts")) {
		t.Error("no worker kept between the needs of the connection")
	}
	second := call(needTraceCRLF)
	ctx, _ := second["context"].(string)
	if second["status"] != "worker" || !strings.Contains(ctx, "options.go:11-18") || len(second["missing"].([]any)) != 0 {
		t.Errorf("second need: %v", second)
	}
	if err := s.Close(); err != nil {
		t.Errorf("the server did not exit cleanly on stdin EOF: %v\n%s", err, stderr.String())
	}
	if mode == "Resident" {
		// The session's command ends in the runtime after its stdin does:
		// its engine, and with it the kept worker, is closed once the
		// runtime has served it; the connection closing is what waits for it.
		waitNoEntries(t, filepath.Join(data, "checkouts"))
	}
	for _, dir := range []string{"checkouts", "codex-homes"} {
		if hasEntries(filepath.Join(data, dir)) {
			t.Errorf("%s left behind after the connection ended", dir)
		}
	}
}

// waitNoEntries waits until dir is empty or absent.
func waitNoEntries(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for hasEntries(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never emptied", dir)
		}
		runtimeYield()
	}
}
