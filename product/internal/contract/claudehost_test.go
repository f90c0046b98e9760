//go:build contract

package contract

// The real-host contract of issue 12 for Claude Code: the real `claude`
// (the pinned NEEDLE_CLAUDE_BIN) runs headless as the MCP host of `needle
// mcp serve`, configured with docs/mcp.md's own .mcp.json and
// .claude/settings.json (parsed out of docs/mcp.md, only paths substituted)
// and its headless flag, with a loopback fake Anthropic Messages
// API playing the main model (`make test-contract` runs it).

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmtext "github.com/yuin/goldmark/text"
	_ "modernc.org/sqlite"

	"github.com/needle-dev/needle/product/internal/fakeanthropic"
)

// claudeVersion is what the pinned Claude Code prints for --version.
const claudeVersion = "2.1.332 (Claude Code)"

// needleTool is the name Claude Code gives Needle's need_context: mcp__
// <server as named in .mcp.json>__<tool>.
const needleTool = "mcp__needle__need_context"

func claudeBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("NEEDLE_CLAUDE_BIN")
	if bin == "" {
		t.Fatal("NEEDLE_CLAUDE_BIN is not set: run make test-contract, which installs the pinned Claude Code")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != claudeVersion {
		t.Fatalf("%s --version = %q, %v; want %s", bin, out, err, claudeVersion)
	}
	return bin
}

// claudeReadme is what docs/mcp.md tells a Claude Code user to write and run.
type claudeReadme struct {
	mcpJSON  string   // .mcp.json at the repository root
	settings string   // .claude/settings.json
	headless []string // the flags `claude -p` needs
}

var headlessFlags = regexp.MustCompile("headless, pass `([^`]+)`")

// readClaudeReadme finds the Claude Code configuration in the repository's
// docs/mcp.md: the first json code block after the paragraph that names
// `.mcp.json`, the first after the one that names `.claude/settings.json`,
// and the flags of "headless, pass `…`".
func readClaudeReadme(t *testing.T) claudeReadme {
	t.Helper()
	src, err := os.ReadFile("../../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := goldmark.New().Parser().Parse(gmtext.NewReader(src))
	var r claudeReadme
	var want *string
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Paragraph:
			p := strings.Join(strings.Fields(string(n.Lines().Value(src))), " ") // reflowing changes nothing
			switch {
			case strings.HasPrefix(p, "Claude Code (`.mcp.json`"):
				want = &r.mcpJSON
			case strings.Contains(p, "Allow Needle's tools by name in `.claude/settings.json`"):
				want = &r.settings
			}
			if m := headlessFlags.FindStringSubmatch(p); m != nil && r.settings != "" {
				r.headless = strings.Fields(m[1])
			}
		case *ast.FencedCodeBlock:
			if want != nil && *want == "" && string(n.Language(src)) == "json" {
				*want = string(n.Lines().Value(src))
				want = nil
			}
		}
	}
	if r.mcpJSON == "" || r.settings == "" || len(r.headless) == 0 {
		t.Fatalf("docs/mcp.md: no Claude Code configuration found (.mcp.json %t, settings %t, headless flags %q)",
			r.mcpJSON != "", r.settings != "", r.headless)
	}
	for _, block := range []string{r.mcpJSON, r.settings} {
		if !json.Valid([]byte(block)) {
			t.Fatalf("docs/mcp.md: a Claude Code block is not JSON:\n%s", block)
		}
	}
	return r
}

// claudeModel is the fake main model. It plays what a model does with
// Claude Code's prompt: when need_context is offered only by name, as a
// deferred tool (Claude Code's MCP tool search), it first loads the tool's
// schema with ToolSearch; then it calls need_context with need, checked
// against the input schema Claude Code gave for it; once the tool's result
// comes back it answers with a sentence quoting it. Requests without tools
// (Claude Code's side calls) get a short text answer; a main request that
// offers the tool in no way is a failure.
type claudeModel struct {
	need string
	// quote picks out of Needle's answer what the final text quotes, said
	// as say (a format of one %s); nil and "" mean quotePattern and the
	// sentence about Open.
	quote *regexp.Regexp
	say   string

	mu       sync.Mutex
	searched bool                 // the model loaded need_context with ToolSearch
	called   bool                 // the model called need_context
	result   *fakeanthropic.Block // the tool_result Claude Code sent back
}

const (
	claudeCallID   = "toolu_needle_1"
	claudeSearchID = "toolu_search_1"
)

// quotePattern picks out of Needle's answer what only Needle could know:
// where Open is, path:start-end.
var quotePattern = regexp.MustCompile(`store\.go:\d+-\d+`)

func (m *claudeModel) answer(req fakeanthropic.MessagesRequest) (fakeanthropic.Reply, error) {
	if len(req.Tools) == 0 {
		return fakeanthropic.Say("Needle lookup"), nil
	}
	if res, ok := req.ToolResult(claudeCallID); ok {
		m.mu.Lock()
		m.result = &res
		m.mu.Unlock()
		if res.IsError {
			return fakeanthropic.Say("Needle was not available: " + res.ResultText()), nil
		}
		pattern, say := cmp.Or(m.quote, quotePattern), cmp.Or(m.say, "Needle says Open is implemented at %s.")
		quote := pattern.FindString(res.ResultText())
		if quote == "" {
			return fakeanthropic.Reply{}, fmt.Errorf("Needle's answer holds nothing %s matches: %s", pattern, clip(res.ResultText()))
		}
		return fakeanthropic.Say(fmt.Sprintf(say, quote)), nil
	}
	tool, offered := req.Tool(needleTool)
	search, searchable := req.Tool("ToolSearch")
	loaded := offered && !tool.DeferLoading
	if res, ok := req.ToolResult(claudeSearchID); ok && offered {
		// ToolSearch answers with a tool_reference, which the API expands
		// into the deferred tool's definition from the tools list: from
		// here on the model sees its schema.
		for _, b := range res.ResultBlocks() {
			loaded = loaded || b.Type == "tool_reference" && b.ToolName == needleTool
		}
		if !loaded {
			return fakeanthropic.Reply{}, fmt.Errorf("ToolSearch did not load %s: %s", needleTool, clip(string(res.Content)))
		}
	}
	switch {
	case loaded:
	case searchable && (offered || mentions(req, needleTool)):
		query := `{"query":"select:` + needleTool + `"}`
		if err := checkInput(search.InputSchema, query); err != nil {
			return fakeanthropic.Reply{}, fmt.Errorf("ToolSearch: %w", err)
		}
		m.mu.Lock()
		m.searched = true
		m.mu.Unlock()
		return fakeanthropic.Call("", claudeSearchID, "ToolSearch", json.RawMessage(query)), nil
	default:
		names := make([]string, len(req.Tools))
		for i, tl := range req.Tools {
			names[i] = tl.Name
		}
		return fakeanthropic.Reply{}, fmt.Errorf("the main model was not offered %s, loaded or deferred; tools: %s", needleTool, strings.Join(names, ", "))
	}
	if err := checkInput(tool.InputSchema, m.need); err != nil {
		return fakeanthropic.Reply{}, fmt.Errorf("%s: %w", needleTool, err)
	}
	m.mu.Lock()
	m.called = true
	m.mu.Unlock()
	return fakeanthropic.Call("Let me ask Needle.", claudeCallID, needleTool, json.RawMessage(m.need)), nil
}

// mentions reports whether a line of the request's messages is name (how
// Claude Code lists deferred tools).
func mentions(req fakeanthropic.MessagesRequest, name string) bool {
	for _, msg := range req.Messages {
		for _, b := range msg.Content {
			for _, line := range strings.Split(b.Text, "\n") {
				if strings.TrimSpace(line) == name {
					return true
				}
			}
		}
	}
	return false
}

// state returns what the model did.
func (m *claudeModel) state() (searched, called bool, result *fakeanthropic.Block) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.searched, m.called, m.result
}

// checkInput validates a tool input against the JSON Schema the host sent.
func checkInput(schema json.RawMessage, input string) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("input_schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("tool.json", doc); err != nil {
		return err
	}
	sch, err := c.Compile("tool.json")
	if err != nil {
		return fmt.Errorf("input_schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(input))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// claudeRun is one headless Claude Code session against the fake model.
type claudeRun struct {
	stdout, stderr string
	err            error
	requests       []fakeanthropic.Request
	failures       []error
}

// Where runClaude writes docs/mcp.md's settings.json.
const (
	noSettings      = ""
	projectSettings = "project" // repo/.claude/settings.json
	trustedProject  = "trusted" // the same, in a workspace the user trusted
	userSettings    = "user"    // ~/.claude/settings.json
)

// runClaude writes docs/mcp.md's .mcp.json into repo and its settings.json
// where settings says, and runs `claude -p prompt` in repo with flags.
func runClaude(t *testing.T, claude, needle, repo, data string, readme claudeReadme, model *claudeModel, settings string, flags ...string) claudeRun {
	t.Helper()
	mcpJSON := strings.ReplaceAll(readme.mcpJSON, "/home/you/.needle", data)
	if mcpJSON == readme.mcpJSON {
		t.Fatalf("docs/mcp.md's .mcp.json has no /home/you/.needle to substitute:\n%s", readme.mcpJSON)
	}
	if err := os.WriteFile(filepath.Join(repo, ".mcp.json"), []byte(mcpJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	dir := map[string]string{projectSettings: repo, trustedProject: repo, userSettings: home}[settings]
	if dir != "" {
		if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(readme.settings), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if settings == trustedProject {
		// What Claude Code records in its global config when the user
		// accepts its "trust this folder" prompt, which only an
		// interactive session shows.
		trust, _ := json.Marshal(map[string]any{"projects": map[string]any{repo: map[string]any{"hasTrustDialogAccepted": true}}})
		if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".claude", ".claude.json"), trust, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	server, err := fakeanthropic.Start(model.answer)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"-p", "Where is Open implemented in this repository?"}, flags...)
	cmd := exec.CommandContext(ctx, claude, args...)
	cmd.Dir = repo
	cmd.Stdin = nil // /dev/null
	cmd.Env = []string{
		// "needle" as docs/mcp.md writes it: found on PATH.
		"PATH=" + filepath.Dir(needle) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"LC_ALL=C.UTF-8",
		"ANTHROPIC_BASE_URL=" + server.URL(),
		"ANTHROPIC_API_KEY=sk-ant-fake-contract-test",
		// No traffic but the model's: no telemetry, error reports,
		// update checks or other non-essential calls …
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_BUG_COMMAND=1",
		// … and whatever is left goes to the fake as a proxy, which refuses
		// and records it.
		"HTTPS_PROXY=http://" + server.Addr(),
		"HTTP_PROXY=http://" + server.Addr(),
		"NO_PROXY=127.0.0.1,localhost",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	run := claudeRun{stdout: stdout.String(), stderr: stderr.String(), err: err,
		requests: server.Requests(), failures: server.Failures()}
	for _, r := range run.requests {
		t.Logf("claude sent %s %s (%d bytes)", r.Method, r.Path, len(r.Body))
	}
	for _, f := range run.failures {
		t.Errorf("fake model: %v", f)
	}
	for _, r := range run.requests {
		if r.Method == "CONNECT" || !strings.HasPrefix(r.Path, "/v1/messages") {
			t.Errorf("claude tried to reach %s %s: only the model's /v1/messages is expected", r.Method, r.Path)
		}
	}
	return run
}

// claudeResolutions are the store's answers to needID: the session's main
// model, the resolution kind and whether a certificate backs it.
func claudeResolutions(t *testing.T, data, needID string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "needle.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT s.transport, s.main_model, r.kind, r.certificate_id IS NOT NULL
		FROM resolutions r JOIN sessions s USING (session_id) WHERE r.need_id = ? ORDER BY r.resolution_id`, needID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var transport, mainModel, kind string
		var certified bool
		if err := rows.Scan(&transport, &mainModel, &kind, &certified); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %s certified=%t", transport, mainModel, kind, certified))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// claudeSetup is the shared start of both tests: the binaries, docs/mcp.md's
// configuration, a repository with certified evidence for Open and the
// need's id.
func claudeSetup(t *testing.T) (claude, needle, repo, data string, readme claudeReadme, need, needID, artifactID string) {
	t.Helper()
	claude = claudeBin(t)
	readme = readClaudeReadme(t)
	needle = needleBin(t)
	repo, data = hostRepo(t)
	var certified struct {
		Status     string `json:"status"`
		ArtifactID string `json:"artifact_id"`
	}
	out := runNeedle(t, needle, `{"kind":"implementation_location","subject":{"kind":"symbol","name":"Open"},"path":"store.go","start_line":4,"end_line":7}`,
		"evidence", "propose", "--repository", repo, "--data-dir", data, "-")
	if err := json.Unmarshal([]byte(out), &certified); err != nil || certified.Status != "certified" {
		t.Fatalf("evidence propose: %s (%v)", out, err)
	}
	need = `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Open"}}`
	var compiled struct {
		NeedID string `json:"need_id"`
	}
	if err := json.Unmarshal([]byte(runNeedle(t, needle, need, "need", "compile", "-")), &compiled); err != nil {
		t.Fatal(err)
	}
	return claude, needle, repo, data, readme, need, compiled.NeedID, certified.ArtifactID
}

// TestContract_ClaudeCodeHostCallsNeedContext is docs/mcp.md's Claude Code
// configuration, run by the real Claude Code headless, with the tool
// allowed each way docs/mcp.md gives — the permissions entry of the
// project's .claude/settings.json once the workspace is trusted, the same
// in ~/.claude/settings.json, or the headless flag: the model's
// need_context call reaches Needle, Needle resolves it from the certified
// evidence, the model's next request carries Needle's answer and Claude
// Code prints the model's final text.
func TestContract_ClaudeCodeHostCallsNeedContext(t *testing.T) {
	for _, allow := range []string{trustedProject, userSettings, "flag"} {
		t.Run(allow, func(t *testing.T) {
			claude, needle, repo, data, readme, need, needID, artifactID := claudeSetup(t)
			model := &claudeModel{need: need}
			var run claudeRun
			if allow == "flag" {
				run = runClaude(t, claude, needle, repo, data, readme, model, noSettings, readme.headless...)
			} else {
				run = runClaude(t, claude, needle, repo, data, readme, model, allow)
			}
			if run.err != nil {
				t.Fatalf("claude -p: %v\nstdout:\n%s\nstderr:\n%s", run.err, run.stdout, run.stderr)
			}
			searched, called, res := model.state()
			t.Logf("%s was deferred and loaded with ToolSearch: %t", needleTool, searched)
			if !called || res == nil {
				t.Fatalf("the model called %s (%t) and got its result (%t); want both\nstdout:\n%s\nstderr:\n%s",
					needleTool, called, res != nil, run.stdout, run.stderr)
			}
			result := res.ResultText()
			if res.IsError {
				t.Fatalf("Claude Code answered the call with an error: %s", clip(result))
			}
			// What the model saw: Needle's certified context, which only
			// Needle could give — the location and the artifact it comes
			// from.
			for _, want := range []string{"store.go:4-7", artifactID} {
				if !strings.Contains(result, want) {
					t.Errorf("the tool_result is %q; want it to hold %q", clip(result), want)
				}
			}
			// What the user saw: the model's final text, quoting Needle.
			if want := "Needle says Open is implemented at store.go:4-7."; !strings.Contains(run.stdout, want) {
				t.Errorf("claude -p printed %q; want %q\nstderr:\n%s", run.stdout, want, run.stderr)
			}
			t.Logf("claude -p printed: %s", strings.TrimSpace(run.stdout))
			// What Needle recorded: an MCP session of docs/mcp.md's main
			// model that answered the need from the certified evidence.
			got := claudeResolutions(t, data, needID)
			if len(got) != 1 || got[0] != "mcp claude-sonnet coverage_hit certified=true" {
				t.Errorf("Needle's resolutions of the need: %q; want one MCP coverage_hit from certified evidence for main model claude-sonnet", got)
			}
		})
	}
}

// TestContract_ClaudeCodeRefusesUnallowedNeedle is docs/mcp.md's warning:
// headless, without the tool allowed (no permissions entry, no
// --allowedTools), Claude Code refuses the call and Needle never answers
// it; and the project's .claude/settings.json does not allow it in a
// workspace never trusted (Claude Code drops project-scoped allow entries
// there).
func TestContract_ClaudeCodeRefusesUnallowedNeedle(t *testing.T) {
	for _, settings := range []string{noSettings, projectSettings} {
		t.Run("settings="+cmp.Or(settings, "none"), func(t *testing.T) {
			claude, needle, repo, data, readme, need, needID, artifactID := claudeSetup(t)
			model := &claudeModel{need: need}
			run := runClaude(t, claude, needle, repo, data, readme, model, settings)
			if run.err != nil {
				t.Fatalf("claude -p: %v\nstdout:\n%s\nstderr:\n%s", run.err, run.stdout, run.stderr)
			}
			_, called, res := model.state()
			if !called || res == nil {
				t.Fatalf("the model called %s (%t) and got a result (%t); want both, the result a refusal\nstdout:\n%s\nstderr:\n%s",
					needleTool, called, res != nil, run.stdout, run.stderr)
			}
			result := res.ResultText()
			if !res.IsError || strings.Contains(result, artifactID) || strings.Contains(result, "store.go:4-7") {
				t.Errorf("the tool_result (is_error %t) is %q; want a refusal without Needle's context", res.IsError, clip(result))
			}
			if got := claudeResolutions(t, data, needID); len(got) != 0 {
				t.Errorf("Needle answered the refused call: %q", got)
			}
			t.Logf("refused with: %s", clip(result))
		})
	}
}
