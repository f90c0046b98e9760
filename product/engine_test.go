package product

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/testenv"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/needle-dev/needle/product/codextest"
	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
)

// MustFixtureRepo extracts fixtures/repos/NAME.txtar into a fresh directory
// and returns its path. With git set, the directory is a git repository with
// everything committed.
func MustFixtureRepo(tb testing.TB, name string, git bool) string {
	tb.Helper()
	ar, err := txtar.ParseFile(filepath.Join("..", "fixtures", "repos", name+".txtar"))
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(tb.TempDir(), name)
	for _, f := range ar.Files {
		MustWriteFile(tb, filepath.Join(dir, f.Name), string(f.Data))
	}
	if git {
		MustRun(tb, dir, "git", "init", "-q")
		MustRun(tb, dir, "git", "add", "-A")
		MustRun(tb, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "fixture")
	}
	return dir
}

func MustWriteFile(tb testing.TB, name, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func MustRun(tb testing.TB, dir, name string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// testEngine is an engine over a fixture repository with its own store.
type testEngine struct {
	*Engine
	tb   testing.TB
	repo string
	data string
}

// MustSandbox returns the pinned codex whose sandbox runs the tests Needle
// certifies: $NEEDLE_CODEX_BIN, or the one `make codex` installs. The tests
// need it and fail, never skip, without it.
func MustSandbox(tb testing.TB) string {
	tb.Helper()
	return testenv.Codex(tb)
}

// MustTestsConfig is how the tests run focused_tests: in the pinned codex's
// sandbox, with a build cache shared by the validators' test processes (the
// repository's ignored .cache/testrun-validators, which bench's real-module
// tests share), so that only the first run on a machine compiles the
// standard library. product/internal/testrun's tests keep .cache/testrun to
// themselves: they check that no scratch is left in it.
func MustTestsConfig(tb testing.TB) TestsConfig {
	tb.Helper()
	return TestsConfig{Codex: MustSandbox(tb), CacheDir: testenv.Cache(tb, "testrun-validators")}
}

// privateTestsConfig is MustTestsConfig with a test cache of the test's
// own, whose GOCACHE is the tests' warm one: for a test that checks what
// lies in the cache's checkouts directory, which the shared cache holds
// for the engines of every test package running at once (bench's too).
func privateTestsConfig(tb testing.TB) TestsConfig {
	tb.Helper()
	tc := MustTestsConfig(tb)
	tc.CacheDir = tb.TempDir()
	warmGoBuild(tb, tc.CacheDir)
	return tc
}

// warmGoBuild makes the GOCACHE of the test cache directory cache (a
// default one, which the test under way checks is where the product puts
// it) a symlink to the tests' warm one, so that the test does not compile
// the standard library again: what it checks is where the cache lies and
// that its runs work, not a cold build (testrun's and bench's tests time
// and check those).
// Call it before the test changes directory: the tests' cache is found
// from the working directory.
func warmGoBuild(tb testing.TB, cache string) {
	tb.Helper()
	cache, err := filepath.Abs(cache)
	if err == nil {
		err = testenv.LinkGoBuild(cache, filepath.Join(MustTestsConfig(tb).CacheDir, "go-build"))
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// withoutSandbox configures an engine that can run no test.
func withoutSandbox(c *Config) { c.Tests = TestsConfig{} }

func MustEngine(tb testing.TB, repo string, mutate ...func(*Config)) *testEngine {
	tb.Helper()
	te := &testEngine{tb: tb, repo: repo, data: tb.TempDir()}
	te.reopen(mutate...)
	return te
}

// reopen closes the engine and opens a new one on the same store: a new
// process, with no in-memory state.
func (te *testEngine) reopen(mutate ...func(*Config)) {
	te.tb.Helper()
	if te.Engine != nil {
		te.Close()
	}
	cfg := Config{DataDir: te.data, Repository: te.repo, Tests: MustTestsConfig(te.tb)}
	for _, m := range mutate {
		m(&cfg)
	}
	e, err := Open(context.Background(), cfg)
	if err != nil {
		te.tb.Fatal(err)
	}
	te.Engine = e
	te.tb.Cleanup(func() { e.Close() })
}

// propose stores an operator proposal and returns the result.
func (te *testEngine) propose(p string) ProposeResult {
	te.tb.Helper()
	res, err := te.Propose(context.Background(), []byte(p))
	if err != nil {
		te.tb.Fatalf("Propose(%s): %v", p, err)
	}
	return res
}

// mustCertify proposes p and fails unless it is certified.
func (te *testEngine) mustCertify(p string) ProposeResult {
	te.tb.Helper()
	res := te.propose(p)
	if res.Status != "certified" {
		te.tb.Fatalf("proposal rejected: %v\n%s", res.Reasons, p)
	}
	return res
}

// need resolves a need in a fresh session.
func (te *testEngine) need(src string) NeedResult {
	te.tb.Helper()
	return te.needIn(newSessionID("test"), src)
}

func (te *testEngine) needIn(session, src string) NeedResult {
	te.tb.Helper()
	req, err := DecodeNeedRequest([]byte(src))
	if err != nil {
		te.tb.Fatal(err)
	}
	r, err := te.NeedContext(context.Background(), session, req)
	if err != nil {
		te.tb.Fatalf("NeedContext(%s): %v", src, err)
	}
	checkResultInvariants(te.tb, r)
	te.checkServedFresh(r)
	return r
}

// checkServedFresh verifies, independently of the resolver and the stat
// cache, that every artifact a result serves is backed by a certificate
// whose file dependencies match the bytes on disk now (stale evidence is
// never served), and that the context cites nothing but the served
// artifacts' locations and claims.
func (te *testEngine) checkServedFresh(r NeedResult) {
	te.tb.Helper()
	allowed := map[string]bool{}
	for _, id := range r.Resolution.ArtifactIDs {
		var body string
		if err := te.store.db.QueryRow(`SELECT body FROM artifacts WHERE artifact_id = ?`, id).Scan(&body); err != nil {
			te.tb.Fatal(err)
		}
		var p proposal
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			te.tb.Fatal(err)
		}
		allowed[fmt.Sprintf("%s:%d-%d", p.Path, p.StartLine, p.EndLine)] = true
		for _, s := range p.Steps {
			allowed[fmt.Sprintf("%s:%d-%d", s.Path, s.StartLine, s.EndLine)] = true
		}
	}
	for _, id := range r.ClaimIDs {
		rows, err := te.store.db.Query(`SELECT path, start_line, end_line FROM certificate_claims WHERE claim_id = ?`, id)
		if err != nil {
			te.tb.Fatal(err)
		}
		for rows.Next() {
			var path string
			var start, end int
			if err := rows.Scan(&path, &start, &end); err != nil {
				te.tb.Fatal(err)
			}
			allowed[fmt.Sprintf("%s:%d-%d", path, start, end)] = true
		}
		rows.Close()
	}
	for _, cited := range citation.FindAllString(r.Context, -1) {
		if !allowed[cited] {
			te.tb.Errorf("context cites %s, which no served artifact or claim holds:\n%s", cited, r.Context)
		}
	}
	for _, id := range r.Resolution.ArtifactIDs {
		rows, err := te.store.db.Query(`SELECT d.path, d.digest FROM dependencies d
			JOIN certificates c ON c.certificate_id = d.certificate_id
			WHERE c.artifact_id = ? AND d.kind = 'file'
			  AND c.rowid = (SELECT max(rowid) FROM certificates WHERE artifact_id = ?)`, id, id)
		if err != nil {
			te.tb.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var path, digest string
			if err := rows.Scan(&path, &digest); err != nil {
				te.tb.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(te.Root(), filepath.FromSlash(path)))
			if err != nil || contentid.OfBytes(snapshot.FileTag, data) != digest {
				te.tb.Errorf("served artifact %s depends on %s, which changed on disk (%v)", id, path, err)
			}
			n++
		}
		rows.Close()
		if n == 0 {
			te.tb.Errorf("served artifact %s has no file dependencies", id)
		}
	}
}

// checkResultInvariants holds for every result: unsafe and bypass results
// carry no evidence and no citation; hits cite every artifact they name.
func checkResultInvariants(tb testing.TB, r NeedResult) {
	tb.Helper()
	if r.Resolution.Kind.unsafe() || r.Resolution.Kind == resolutionBypass {
		if len(r.Resolution.ArtifactIDs) > 0 || len(r.ClaimIDs) > 0 || len(r.Satisfied) > 0 || r.CacheHit {
			tb.Errorf("%s result carries evidence: %+v", r.Resolution.Kind, r)
		}
		if !strings.Contains(r.Context, "no reusable context") || strings.Contains(r.Context, "artifact b3:") || citation.MatchString(r.Context) {
			tb.Errorf("%s context is not a bare reason:\n%s", r.Resolution.Kind, r.Context)
		}
	}
	for _, id := range r.Resolution.ArtifactIDs {
		if !strings.Contains(r.Context, id) {
			tb.Errorf("context does not cite artifact %s:\n%s", id, r.Context)
		}
	}
	want := r
	want.ResultDigest = ""
	if got := mustID("needle.result.v1", want); got != r.ResultDigest {
		tb.Errorf("result_digest %s, want %s", r.ResultDigest, got)
	}
}

// citation matches a path:start-end citation in a context.
var citation = regexp.MustCompile(`[\w./-]+:\d+-\d+`)

const (
	needLocateNewSearcher = `{"route":"locate.implementation","subject":{"kind":"symbol","name":"NewSearcher"}}`
	needTraceCRLF         = `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},"task":"trace --crlf"}`
	needLocateCRLF        = `{"route":"locate.implementation","subject":{"kind":"cli_option","name":"--crlf"}}`
	needTestsCRLF         = `{"route":"tests.relevant","subject":{"kind":"cli_option","name":"--crlf"}}`

	locNewSearcher = `{"kind":"implementation_location","subject":{"kind":"symbol","name":"NewSearcher"},"path":"search.go","start_line":15,"end_line":17}`
	locCRLF        = `{"kind":"implementation_location","subject":{"kind":"cli_option","name":"--crlf"},"path":"flags.go","start_line":6,"end_line":14}`
	flowCRLF       = `{"kind":"runtime_flow","subject":{"kind":"cli_option","name":"--crlf"},"scenario":"default","steps":[
		{"path":"flags.go","start_line":6,"end_line":14,"summary":"the --crlf flag is parsed"},
		{"path":"options.go","start_line":11,"end_line":18,"summary":"CRLF is kept unless NUL data wins"}]}`
	testsCRLF = `{"kind":"focused_tests","subject":{"kind":"cli_option","name":"--crlf"},"tests":[
		{"path":"search_test.go","name":"TestCRLF","command":"go test . -run '^TestCRLF$'"}]}`
)

func kindOf(tb testing.TB, r NeedResult, want ResolutionKind) {
	tb.Helper()
	if r.Resolution.Kind != want {
		tb.Fatalf("resolution %s, want %s\n%s", r.Resolution.Kind, want, r.Context)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// cites reports whether the context cites path:start-end.
func cites(r NeedResult, path string, start, end int) bool {
	return strings.Contains(r.Context, fmt.Sprintf("%s:%d-%d", path, start, end))
}

func TestFIFO(t *testing.T) {
	var f fifo
	ctx := context.Background()
	if err := f.lock(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.lock(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			f.unlock()
		}()
		waitQueued(t, &f, i+1)
	}
	// A waiter that gives up leaves the queue without taking a turn.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- f.lock(cctx) }()
	waitQueued(t, &f, 6)
	cancel()
	if err := <-done; err == nil {
		t.Error("a cancelled waiter got the lock")
	}
	f.unlock()
	wg.Wait()
	if got := order; len(got) != 5 || got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 3 || got[4] != 4 {
		t.Errorf("turn order %v, want arrival order", got)
	}
	if f.busy || len(f.queue) != 0 {
		t.Errorf("lock not released: busy %v, queue %d", f.busy, len(f.queue))
	}
}

// waitQueued waits until n lockers are queued, polling the queue length
// (the only observable sign that a goroutine is waiting).
func waitQueued(t *testing.T, f *fifo, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		got := len(f.queue)
		f.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued, want %d", got, n)
		}
		runtime.Gosched()
	}
}

// MustReadFile returns the content of the file at path (relative paths
// start in the package directory: "../fixtures/…" is under the repository
// root).
func MustReadFile(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// TestMain lets this test binary stand in for the commands the tests
// drive, so that no test builds a binary: started by MustReplayCommand it is
// codex app-server serving frozen transcripts, started by needleCommand it
// is the needle command (cmd/needle: Main, cancelled by SIGINT and SIGTERM).
func TestMain(m *testing.M) {
	codextest.ServeIfReplay()
	if len(os.Args) > 2 && os.Args[1] == compactRelayArg {
		os.Exit(serveCompactRelay(os.Args[2:]))
	}
	args, asNeedle := os.Args[1:], os.Getenv(asNeedleEnv) == "1"
	if len(args) > 0 && args[0] == needleArg {
		args, asNeedle = args[1:], true
	}
	if asNeedle {
		armCrashChild()
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, args, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	// A command a test runs without --data-dir must not reach the
	// developer's ~/.local/share/needle: the default points nowhere.
	os.Setenv(envDataDir, "/dev/null/needle-tests-name-their-data-dir")
	// Nor does a worker copy the developer's own codex home by default.
	os.Setenv("CODEX_HOME", "/dev/null/needle-tests-have-no-codex-home")
	os.Exit(m.Run())
}

// needleArg is the first argument of this test binary started as needle.
const needleArg = "product-test-needle"

// asNeedleEnv=1 in its environment makes this test binary the needle
// command with its arguments as they are: how a hook command line that
// needle hook install wrote for this binary runs it.
const asNeedleEnv = "NEEDLE_PRODUCT_TEST_AS_NEEDLE"

// needleCommand runs the needle command with args: this test binary.
func needleCommand(tb testing.TB, args ...string) *exec.Cmd {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return exec.Command(exe, append([]string{needleArg}, args...)...)
}

// MustReplayCommand is the App Server command of a replay server (this
// test binary) serving the transcript files or directories at paths.
func MustReplayCommand(tb testing.TB, paths ...string) []string {
	tb.Helper()
	cmd, err := codextest.ReplayCommand(paths...)
	if err != nil {
		tb.Fatal(err)
	}
	if strings.ContainsAny(strings.Join(cmd, ""), " \t") {
		tb.Fatalf("replay command %q holds a blank: --codex splits at blanks", cmd)
	}
	return cmd
}

// replayTranscripts makes the engine's App Server the replay server serving
// the transcript files or directories at paths.
func replayTranscripts(tb testing.TB, paths ...string) func(*Config) {
	cmd := MustReplayCommand(tb, paths...)
	return func(c *Config) { c.Codex = &CodexConfig{Command: cmd, Deadline: time.Minute} }
}
