//go:build contract

package contract

// README.md's "Quick start: your own repository", played line by line as a
// new user would, with the real pinned codex (or Claude Code) as the coding
// client and loopback fakes as the main model and the workers' model
// (issue 25: "from a fresh clone, the quick start reaches a certified hit
// in your own repository").

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmtext "github.com/yuin/goldmark/text"

	"github.com/needle-dev/needle/product/internal/fakeanthropic"
	"github.com/needle-dev/needle/product/internal/fakemodel"
	"github.com/needle-dev/needle/product/testenv"
)

// quickStartHeading is the README section the tests play.
const quickStartHeading = "Quick start: your own repository"

// quickStart is what README.md tells a new user to run.
type quickStart struct {
	lines     []string // the sh block's lines, as written
	claudeAdd string   // the Claude Code registration the paragraphs after it name
}

var claudeAddLine = regexp.MustCompile("`(claude mcp add [^`]+)`")

// readQuickStart finds the quick start in the repository's README.md: the
// first sh block under its heading, and the `claude mcp add …` a paragraph
// of the section names.
func readQuickStart(t *testing.T) quickStart {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := goldmark.New().Parser().Parse(gmtext.NewReader(src))
	var q quickStart
	in := false
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			in = !in && string(n.Lines().Value(src)) == quickStartHeading
		case *ast.FencedCodeBlock:
			if in && q.lines == nil && string(n.Language(src)) == "sh" {
				for _, l := range strings.Split(string(n.Lines().Value(src)), "\n") {
					if strings.TrimSpace(l) != "" {
						q.lines = append(q.lines, l)
					}
				}
			}
		case *ast.Paragraph:
			p := strings.Join(strings.Fields(string(n.Lines().Value(src))), " ") // reflowing changes nothing
			if m := claudeAddLine.FindStringSubmatch(p); in && q.claudeAdd == "" && m != nil {
				q.claudeAdd = m[1]
			}
		}
	}
	if len(q.lines) == 0 || q.claudeAdd == "" {
		t.Fatalf("README.md: no quick start under %q (sh block of %d lines, claude mcp add %q)", quickStartHeading, len(q.lines), q.claudeAdd)
	}
	return q
}

// shellLine is a README line without its trailing comment.
func shellLine(line string) string {
	if i := strings.Index(line, " #"); i >= 0 && strings.Count(line[:i], `"`)%2 == 0 && strings.Count(line[:i], "'")%2 == 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// quickRepo is the new user's own repository: a small Go module whose
// command has a --verbose flag, in cmd/notes/main.go, asked about from
// internal/archive.
var quickRepo = map[string]string{
	"go.mod": "module example.com/notes\n\ngo 1.22\n",
	"cmd/notes/main.go": `// Command notes archives notes.
package main

import (
	"flag"
	"fmt"
	"os"

	"example.com/notes/internal/archive"
)

func main() {
	verbose := flag.Bool("verbose", false, "say what is archived")
	flag.Parse()
	n, err := archive.Move(flag.Args(), "archive", *verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(n, "archived")
}
`,
	"internal/archive/archive.go": `// Package archive moves notes into an archive directory.
package archive

import (
	"fmt"
	"os"
	"path/filepath"
)

// Move moves the notes into dir and returns how many it moved.
func Move(notes []string, dir string, verbose bool) (int, error) {
	for i, n := range notes {
		if verbose {
			fmt.Println("archiving", n)
		}
		if err := os.Rename(n, filepath.Join(dir, filepath.Base(n))); err != nil {
			return i, err
		}
	}
	return len(notes), nil
}
`,
}

const (
	// The --verbose flag is defined at cmd/notes/main.go:13.
	quickFlagFile = "cmd/notes/main.go"
	quickFlagLine = 13
	// quickNeed is the need the main model writes for the README's
	// question, as models write it.
	quickNeed = `{"route":"locate.implementation","subject":{"kind":"cli_option","name":"--verbose"},"task":"Where is the --verbose flag handled?"}`
	// quickProposal is what the worker's model answers.
	quickProposal = `{"kind":"implementation_location","subject":{"kind":"cli_option","name":"--verbose"},"path":"cmd/notes/main.go","start_line":13,"end_line":13}`
	// workerMarker is in every request of an evidence worker.
	workerMarker = "You are a Needle evidence worker"
)

// quickLocated matches Needle's location of --verbose in an answer.
var quickLocated = regexp.QuoteMeta(quickFlagFile) + `:\d+(-\d+)?`

// quickStep is one command of the quick start and how long it took.
type quickStep struct {
	line string
	took time.Duration
}

// quickUser is the new user: a scratch HOME with a repository of their own
// and the tools they installed on PATH, without NEEDLE_DATA_DIR or
// XDG_DATA_HOME.
type quickUser struct {
	t      *testing.T
	root   string // the clone of this repository
	home   string
	repo   string
	sub    string // the repository's subdirectory they work in
	tools  string // what they installed besides: codex, claude, a browser
	opened string // where the browser writes the URL it was asked to open
	env    []string
	steps  []quickStep
}

// newQuickUser makes the user's HOME, repository and tools.
func newQuickUser(t *testing.T) *quickUser {
	t.Helper()
	scratch := t.TempDir()
	u := &quickUser{t: t, root: testenv.ModuleRoot(t), home: filepath.Join(scratch, "home"),
		tools: filepath.Join(scratch, "tools"), opened: filepath.Join(scratch, "opened-url")}
	u.repo = filepath.Join(u.home, "src", "notes")
	u.sub = filepath.Join(u.repo, "internal", "archive")
	if err := os.MkdirAll(u.tools, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range quickRepo {
		p := filepath.Join(u.repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitCommit(t, u.repo)
	if err := os.Symlink(codexBin(t), filepath.Join(u.tools, "codex")); err != nil {
		t.Fatal(err)
	}
	// The browser needle ui --open opens: it writes the URL down.
	browser := filepath.Join(u.tools, "browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\" > "+u.opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	u.env = []string{
		"HOME=" + u.home,
		"PATH=" + filepath.Join(u.home, "go", "bin") + string(os.PathListSeparator) + u.tools + string(os.PathListSeparator) + os.Getenv("PATH"),
		"LC_ALL=C.UTF-8",
		"BROWSER=" + browser,
		// The user's Go caches, not cold ones, and no network: go install
		// builds from the module cache.
		"GOCACHE=" + goEnv("GOCACHE"), "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOPROXY=off", "GOTOOLCHAIN=local",
	}
	return u
}

// codexConfig writes the user's ~/.codex/config.toml: their model is the
// fake at url (for the main model, or only for Needle's workers through
// the worker home, which defaults to ~/.codex).
func (u *quickUser) codexConfig(url string) {
	u.t.Helper()
	dir := filepath.Join(u.home, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		u.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(fakemodel.ConfigTOML(url)), 0o600); err != nil {
		u.t.Fatal(err)
	}
}

// run runs line with sh in dir, as the user's shell would, and returns
// its stdout; a non-zero exit fails the test.
func (u *quickUser) run(dir, line string, extraEnv ...string) string {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), u.env...), extraEnv...)
	cmd.Stdin = nil // /dev/null
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	u.steps = append(u.steps, quickStep{line, took})
	if err != nil {
		u.t.Fatalf("%s (in %s): %v\nstdout:\n%s\nstderr:\n%s", line, dir, err, stdout.String(), stderr.String())
	}
	u.t.Logf("$ %s  (%s, in %s)\n%s%s", line, took.Round(10*time.Millisecond), dir, stdout.String(), stderr.String())
	return stdout.String()
}

// serve starts line (needle serve, without its &) in dir and returns once
// it printed its readiness line, the socket it listens on; stop sends it
// the Ctrl-C and waits for it to exit 0.
func (u *quickUser) serve(dir, line string) (stop func()) {
	u.t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+line)
	cmd.Dir = dir
	cmd.Env = u.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		u.t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		u.t.Fatal(err)
	}
	ready := make(chan string, 1)
	var printed bytes.Buffer // written before ready is sent or closed
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			printed.WriteString(lines.Text() + "\n")
			if sock, ok := strings.CutPrefix(lines.Text(), "ipc: "); ok {
				ready <- sock
				break
			}
		}
		close(ready)
		for lines.Scan() {
		}
	}()
	timeout := time.NewTimer(2 * time.Minute)
	defer timeout.Stop()
	select {
	case sock, ok := <-ready:
		if !ok {
			err := cmd.Wait()
			u.t.Fatalf("%s ended before it was ready: %v\nstdout:\n%s\nstderr:\n%s", line, err, printed.String(), stderr.String())
		}
		u.steps = append(u.steps, quickStep{line + " & (until it printed its socket)", time.Since(start)})
		u.t.Logf("$ %s &\n%s", line, printed.String())
		if want := filepath.Join(u.home, ".local", "share", "needle", "needle.sock"); sock != want {
			u.t.Errorf("needle serve listens on %s; want the one of the XDG default data directory, %s", sock, want)
		}
	case <-timeout.C:
		cmd.Process.Kill()
		cmd.Wait()
		u.t.Fatalf("%s printed no socket within 2m\nstdout:\n%s\nstderr:\n%s", line, printed.String(), stderr.String())
	}
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		start := time.Now()
		cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			u.t.Errorf("%s: after Ctrl-C: %v\nstderr:\n%s", line, err, stderr.String())
		}
		u.steps = append(u.steps, quickStep{"Ctrl-C " + line, time.Since(start)})
	}
}

// quickClient is the coding client the user registers Needle with and asks.
type quickClient struct {
	mainModel string // the --main-model of its registration
	// register is the registration the user runs for the README's codex
	// mcp add line.
	register func(line string) string
	// ask asks prompt (as the README quotes it) in two sessions, the
	// first answered by a worker, the second by a hit, and checks what
	// the user saw; it returns what the model read of need_context.
	ask func(u *quickUser, quoted string) []string
}

// playQuickStart runs the README's quick start with client in u's HOME:
// go install in the clone, everything else in a subdirectory of the
// repository; needle serve & runs until the end. Then it checks what the
// store, the UI and needle stats say.
func playQuickStart(t *testing.T, u *quickUser, q quickStart, client quickClient) {
	var stopServe func()
	defer func() {
		if stopServe != nil {
			stopServe()
		}
	}()
	var outputs []string
	var registered bool
	for _, raw := range q.lines {
		line := shellLine(raw)
		switch {
		case strings.HasPrefix(line, "go install "):
			u.run(u.root, line) // "in the clone"
		case strings.HasSuffix(line, "&"):
			if stopServe != nil {
				t.Fatalf("README.md: a second command in the background: %s", raw)
			}
			stopServe = u.serve(u.sub, strings.TrimSpace(strings.TrimSuffix(line, "&")))
		case strings.HasPrefix(line, `codex "`):
			outputs = client.ask(u, strings.TrimPrefix(line, "codex "))
		case strings.HasPrefix(line, "codex mcp add "):
			u.run(u.sub, client.register(line))
			registered = true
		default:
			u.run(u.sub, line)
		}
	}
	if stopServe == nil || outputs == nil || !registered {
		t.Fatalf("README.md's quick start lacks needle serve &, the codex question or codex mcp add:\n%s", strings.Join(q.lines, "\n"))
	}
	// Needle answered for this repository: its location of --verbose,
	// certified, first by a worker, then from that evidence.
	for i, o := range outputs {
		t.Logf("session %d: need_context answered:\n%s", i+1, o)
		if !strings.Contains(o, fmt.Sprintf("implementation_location: %s:%d-%d [artifact b3:", quickFlagFile, quickFlagLine, quickFlagLine)) {
			t.Errorf("session %d: need_context's answer does not cite %s:%d from an artifact", i+1, quickFlagFile, quickFlagLine)
		}
		want := []string{"resolution miss (worker)", "resolution exact_hit (hit)"}[min(i, 1)]
		if !strings.Contains(o, want) {
			t.Errorf("session %d: need_context's answer is not %q", i+1, want)
		}
	}

	// needle ui --open opened a login URL: the browser logs in with it,
	// and the need feed lists every answer.
	url, err := os.ReadFile(u.opened)
	if err != nil {
		t.Fatalf("needle ui --open opened nothing with $BROWSER: %v", err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: time.Minute}
	resp, err := browser.Get(strings.TrimSpace(string(url)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the login URL answered %s", resp.Status)
	}
	resp, err = browser.Get(resp.Request.URL.Scheme + "://" + resp.Request.URL.Host + "/api/v1/needs")
	if err != nil {
		t.Fatal(err)
	}
	var feed struct {
		Items []struct {
			Kind          string `json:"kind"`
			WorkerSpawned bool   `json:"worker_spawned"`
		} `json:"items"`
	}
	err = json.NewDecoder(resp.Body).Decode(&feed)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the UI's need feed: %s, %v", resp.Status, err)
	}
	if len(feed.Items) != len(outputs) {
		t.Errorf("the UI's need feed lists %d answers (%+v); want the %d sessions'", len(feed.Items), feed.Items, len(outputs))
	}

	// The user stops needle serve; the store is in the XDG default data
	// directory, and nowhere else.
	stopServe()
	data := filepath.Join(u.home, ".local", "share", "needle")
	if _, err := os.Stat(filepath.Join(data, "needle.db")); err != nil {
		t.Fatalf("no store in the default data directory: %v", err)
	}
	for _, stray := range []string{filepath.Join(u.home, ".needle"), filepath.Join(u.repo, ".needle"), filepath.Join(u.sub, ".needle")} {
		if _, err := os.Stat(stray); err == nil {
			t.Errorf("a data directory appeared at %s", stray)
		}
	}
	var compiled struct {
		NeedID string `json:"need_id"`
	}
	if err := json.Unmarshal([]byte(u.run(u.sub, "echo '"+quickNeed+"' | needle need compile -")), &compiled); err != nil {
		t.Fatal(err)
	}
	got := claudeResolutions(t, data, compiled.NeedID)
	want := []string{"mcp " + client.mainModel + " miss certified=true"}
	for range outputs[1:] {
		want = append(want, "mcp "+client.mainModel+" exact_hit certified=true")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the store's answers to the need: %q; want %q", got, want)
	}
	var stats struct {
		Answers    int64 `json:"answers"`
		Hits       int64 `json:"hits"`
		WorkerRuns int64 `json:"worker_runs"`
	}
	if err := json.Unmarshal([]byte(u.run(u.sub, "needle stats --json")), &stats); err != nil {
		t.Fatal(err)
	}
	if n := int64(len(outputs)); stats.Answers != n || stats.Hits != n-1 || stats.WorkerRuns != 1 {
		t.Errorf("needle stats: %d answers, %d hits, %d worker runs; want %d, %d, 1", stats.Answers, stats.Hits, stats.WorkerRuns, n, n-1)
	}

	var total time.Duration
	var b strings.Builder
	for _, s := range u.steps {
		total += s.took
		fmt.Fprintf(&b, "%8s  %s\n", s.took.Round(10*time.Millisecond), s.line)
	}
	t.Logf("the quick start: %d commands, %s in all\n%s", len(u.steps), total.Round(10*time.Millisecond), b.String())
}

// TestQuickStart_Codex plays README.md's quick start as written with the
// real codex: the README's own codex mcp add (no --repository, no
// --data-dir: needle takes the git top level of the directory codex
// starts it in and the data directory under $HOME), and the README's
// question through codex exec (the non-interactive codex "…"), whose
// model, the fake, asks need_context and answers with what Needle said.
// The first session's answer comes from a worker (the real codex App
// Server of the registration's --codex codex, with the default worker home
// ~/.codex, its model the same fake)
// and is certified; a second session asks again from the same
// subdirectory and a third with codex -C from outside the repository
// (codex starts MCP servers in the session's directory, not its own):
// both are hits, with no worker. needle stats then counts the hits.
func TestQuickStart_Codex(t *testing.T) {
	q := readQuickStart(t)
	u := newQuickUser(t)
	for _, kv := range u.env {
		if strings.HasPrefix(kv, "NEEDLE_") || strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "CODEX_HOME=") {
			t.Fatalf("the user's environment sets %s", kv)
		}
	}
	asks := func() fakemodel.Response {
		r := namespacedCall("call_needle", "mcp__needle", "need_context", quickNeed)
		r.Match = []string{"Where is the --verbose flag handled?"}
		return r
	}
	answers := func() fakemodel.Response {
		r := fakemodel.Message("", "", "Needle says --verbose is handled at NEEDLE_LOCATION.", fakemodel.Usage{Input: 200, Output: 12})
		r.Match = []string{`"function_call_output"`, `"call_needle"`}
		r.Read = map[string]string{"NEEDLE_LOCATION": quickLocated}
		return r
	}
	worker := fakemodel.Message("", "", quickProposal, fakemodel.Usage{Input: 300, Output: 40})
	worker.Match = []string{workerMarker}
	// Keyed responses: the first unused one that matches answers. The
	// worker's prompt quotes the question too, and a request after the
	// call holds the question as well as the call's output.
	model, err := fakemodel.Start(fakemodel.Script{Responses: []fakemodel.Response{
		worker, answers(), answers(), answers(), asks(), asks(), asks(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	u.codexConfig(model.URL())

	var sessions [][]byte
	playQuickStart(t, u, q, quickClient{
		mainModel: "gpt-5-codex",
		register:  func(line string) string { return line },
		ask: func(u *quickUser, quoted string) []string {
			line := "codex exec --json " + quoted
			sessions = append(sessions, []byte(u.run(u.sub, line)), []byte(u.run(u.sub, line)),
				[]byte(u.run(u.home, "codex exec --json -C "+u.sub+" "+quoted)))
			var outputs []string
			for _, r := range model.Requests() {
				if bytes.Contains(r.Body, []byte(`"function_call_output"`)) && !bytes.Contains(r.Body, []byte(workerMarker)) {
					outputs = append(outputs, callOutput(t, r.Body, "call_needle"))
				}
			}
			return outputs
		},
	})

	// What codex mcp add registered: the README's command, as written.
	var cfg struct {
		Servers map[string]map[string]any `toml:"mcp_servers"`
	}
	if _, err := toml.DecodeFile(filepath.Join(u.home, ".codex", "config.toml"), &cfg); err != nil {
		t.Fatal(err)
	}
	var want string
	for _, line := range readQuickStart(t).lines {
		if words := strings.Fields(shellLine(line)); len(words) > 5 && strings.Join(words[:5], " ") == "codex mcp add needle --" {
			want = fmt.Sprintf("map[args:%v command:%s]", words[6:], words[5])
		}
	}
	if got := fmt.Sprint(cfg.Servers["needle"]); want == "" || got != want {
		t.Errorf("codex mcp add registered %s; the README's line registers %s", got, want)
	}
	// What the user saw: codex's final answer quotes Needle's location.
	final := regexp.MustCompile("^Needle says --verbose is handled at " + quickLocated + `\.$`)
	for i, out := range sessions {
		call := toolCallItem(t, out, "needle", "need_context")
		if call.Status != "completed" || call.Error != nil {
			t.Errorf("session %d: need_context: status %q, error %s; want completed", i+1, call.Status, call.Error)
		}
		if msg := agentMessage(out); !final.MatchString(msg) {
			t.Errorf("session %d: codex's final message is %q; want Needle's location of --verbose in %s", i+1, msg, quickFlagFile)
		}
	}
	// The one worker was not offered need_context: its home is the
	// user's ~/.codex (the default), whose [mcp_servers.needle] a worker must not start.
	var workers int
	for _, r := range model.Requests() {
		if bytes.Contains(r.Body, []byte(workerMarker)) {
			workers++
			if offersTool(r.Body, "mcp__needle", "need_context") {
				t.Errorf("the worker's model was offered need_context")
			}
		}
	}
	if workers != 1 {
		t.Errorf("workers asked the model %d times; want once (the first session; the others are hits)", workers)
	}
}

// agentMessage is the text of codex exec's last agent_message item.
func agentMessage(jsonl []byte) string {
	var text string
	for _, line := range bytes.Split(jsonl, []byte("\n")) {
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
		}
		if json.Unmarshal(line, &ev) == nil && ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
			text = ev.Item.Text
		}
	}
	return text
}

// TestQuickStart_ClaudeCode plays the quick start with Claude Code: the
// README's claude mcp add instead of codex mcp add, and the question
// through claude -p with the tool allowed by the flag docs/mcp.md gives,
// twice, its model the fake Anthropic API; Needle's worker is codex as
// for Codex users.
func TestQuickStart_ClaudeCode(t *testing.T) {
	q := readQuickStart(t)
	readme := readClaudeReadme(t)
	claude := claudeBin(t)
	u := newQuickUser(t)
	if err := os.Symlink(claude, filepath.Join(u.tools, "claude")); err != nil {
		t.Fatal(err)
	}
	worker := fakemodel.Message("", "", quickProposal, fakemodel.Usage{Input: 300, Output: 40})
	worker.Match = []string{workerMarker}
	workers, err := fakemodel.Start(fakemodel.Script{Responses: []fakemodel.Response{worker}})
	if err != nil {
		t.Fatal(err)
	}
	defer workers.Close()
	u.codexConfig(workers.URL())
	// No traffic but the model's (as runClaude).
	u.env = append(u.env, "ANTHROPIC_API_KEY=sk-ant-fake-contract-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1", "DISABLE_BUG_COMMAND=1", "NO_PROXY=127.0.0.1,localhost")

	said := "Needle says --verbose is handled at %s."
	playQuickStart(t, u, q, quickClient{
		mainModel: "claude-sonnet",
		register:  func(string) string { return q.claudeAdd },
		ask: func(u *quickUser, quoted string) []string {
			var outputs []string
			for i := range 2 {
				model := &claudeModel{need: quickNeed, quote: regexp.MustCompile(quickLocated), say: said}
				server, err := fakeanthropic.Start(model.answer)
				if err != nil {
					t.Fatal(err)
				}
				defer server.Close()
				out := u.run(u.sub, "claude -p "+quoted+" "+strings.Join(readme.headless, " "),
					"ANTHROPIC_BASE_URL="+server.URL(), "HTTPS_PROXY=http://"+server.Addr(), "HTTP_PROXY=http://"+server.Addr())
				for _, f := range server.Failures() {
					t.Errorf("session %d: fake model: %v", i+1, f)
				}
				_, called, res := model.state()
				if !called || res == nil || res.IsError {
					t.Fatalf("session %d: the model called %s (%t) and got a result without error (%v)\n%s", i+1, needleTool, called, res, out)
				}
				if !regexp.MustCompile(`Needle says --verbose is handled at ` + quickLocated + `\.`).MatchString(out) {
					t.Errorf("session %d: claude -p printed %q; want Needle's location of --verbose in %s", i+1, out, quickFlagFile)
				}
				outputs = append(outputs, res.ResultText())
			}
			return outputs
		},
	})
	if n := len(workers.Requests()); n == 0 {
		t.Errorf("no worker asked its model")
	}
}
