package product

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official Go SDK client is the peer here: a real MCP client driving
// the built needle binary over stdio.

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// MustNeedleBinary builds cmd/needle once per test run.
func MustNeedleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "needle-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "needle")
		out, err := exec.Command("go", "build", "-o", builtBin, "../cmd/needle").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func sdkSession(t *testing.T, te *testEngine, version string) *mcp.ClientSession {
	t.Helper()
	bin := MustNeedleBinary(t)
	te.Close() // the binary opens the same data directory
	cmd := exec.Command(bin, "mcp", "serve", "--data-dir", te.data, "--repository", te.repo,
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
	for _, version := range []string{"", "2025-06-18", "2024-11-05"} {
		name := version
		if name == "" {
			name = "SDKDefault"
		}
		t.Run(name, func(t *testing.T) {
			te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
			te.mustCertify(locNewSearcher)
			s := sdkSession(t, te, version)
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
