package product

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRefreshWatch: the change watcher sees an edit of a file the
// checkout's evidence depends on and a certificate stored since, and
// nothing else.
func TestRefreshWatch(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo)
	te.mustCertify(locCRLF)
	kindOf(t, te.need(needLocateCRLF), ResolutionCoverage)
	ctx := context.Background()
	// Stamped long after every file's last change: no racy stamp here
	// (snapshot's TestStamp covers those).
	later := time.Now().Add(time.Hour)
	w, err := te.watchRefresh(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	// The oracle: the dependencies the certificates themselves list.
	want := map[string]bool{}
	certs, err := te.store.refreshEvidence(ctx, te.root)
	if err != nil || len(certs) != 1 {
		t.Fatalf("evidence of the checkout: %v, %v", certs, err)
	}
	ev, err := te.store.evidenceByCertificate(ctx, certs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ev.Certificate.Dependencies {
		want[d.Path] = true
	}
	if !want["flags.go"] || w.stamp.Len() != len(want) {
		t.Fatalf("the watch stamps %d paths; the certificate depends on %v", w.stamp.Len(), want)
	}
	due := func() bool {
		t.Helper()
		d, err := te.refreshDue(ctx, w, later)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if due() {
		t.Fatal("due with nothing changed")
	}
	// A file no evidence depends on.
	MustWriteFile(t, filepath.Join(repo, "NOTES.txt"), "notes\n")
	if due() {
		t.Error("due after an edit of a file no evidence depends on")
	}
	editFile(t, filepath.Join(repo, "flags.go"), "import \"flag\"\n", "import \"flag\"\n\n// A comment.\n")
	if !due() {
		t.Error("not due after an edit of flags.go")
	}
	if w, err = te.watchRefresh(ctx, later); err != nil {
		t.Fatal(err)
	}
	if due() {
		t.Fatal("due right after a new watch")
	}
	// New evidence is proven on the current source: nothing to refresh,
	// but the watch moves to the new generation.
	gen := w.gen
	te.mustCertify(locNewSearcher)
	if due() || w.gen == gen {
		t.Errorf("after new evidence was certified: due, or the watch still at generation %d", gen)
	}
	falsifyNewSearcher(t, repo)
	if !due() {
		t.Error("not due after an edit of search.go")
	}
}

// TestRefreshOnce_LooksFirst: a look at an unchanged checkout compares
// digests and runs no Refresh; after a change it re-proves.
func TestRefreshOnce_LooksFirst(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true))
	te.mustCertify(locCRLF)
	kindOf(t, te.need(needLocateCRLF), ResolutionCoverage)
	ctx := context.Background()
	if stale, err := te.anyStale(ctx); err != nil || stale {
		t.Fatalf("anyStale on an unchanged checkout: %v, %v", stale, err)
	}
	if rep, w, err := te.refreshOnce(ctx, time.Now); err != nil || w == nil || rep.Evidence != 0 {
		t.Errorf("refreshOnce on an unchanged checkout: %+v, %v; want no Refresh", rep, err)
	}
	shiftCRLF(t, te.repo)
	if stale, err := te.anyStale(ctx); err != nil || !stale {
		t.Fatalf("anyStale after a change: %v, %v", stale, err)
	}
	if rep, _, err := te.refreshOnce(ctx, time.Now); err != nil || rep.Reproven != 1 || rep.Renewed != 1 {
		t.Errorf("refreshOnce after a change: %+v, %v", rep, err)
	}
	if stale, err := te.anyStale(ctx); err != nil || stale {
		t.Errorf("anyStale after the refresh: %v, %v", stale, err)
	}
}

// TestRefreshOnce_TakesTurns: a refresher finding the repository's
// refresh lock held refreshes nothing and says so; once it is free it
// refreshes.
func TestRefreshOnce_TakesTurns(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true))
	te.mustCertify(locCRLF)
	other, err := Open(context.Background(), Config{DataDir: te.data, Repository: te.repo, CacheOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	unlock, err := other.refreshLock()
	if err != nil {
		t.Fatal(err)
	}
	if _, w, err := te.refreshOnce(context.Background(), time.Now); !errors.Is(err, errRefreshBusy) || w != nil {
		t.Fatalf("refresh beside a held lock: %v, %v", w, err)
	}
	unlock()
	shiftCRLF(t, te.repo) // something to re-prove once the lock is free
	// A process forked meanwhile (the engines run git) shares the lock's
	// file description until it execs: the lock is free once it has.
	rep, w, err := te.refreshOnce(context.Background(), time.Now)
	for deadline := time.Now().Add(time.Minute); errors.Is(err, errRefreshBusy) && time.Now().Before(deadline); {
		runtime.Gosched()
		rep, w, err = te.refreshOnce(context.Background(), time.Now)
	}
	if err != nil || w == nil || rep.Evidence != 1 || rep.Reproven != 1 {
		t.Fatalf("refresh: %+v, %v, %v", rep, w, err)
	}
}

// lineWatch is a server's stderr, read as it comes: wait blocks until a
// line holding a substring arrives.
type lineWatch struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{} // closed and replaced at every write
}

func newLineWatch() *lineWatch { return &lineWatch{changed: make(chan struct{})} }

func (l *lineWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *lineWatch) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// wait returns the first complete line holding sub, failing the test when
// none came within limit (a guard against a hung server, not a timing
// assertion).
func (l *lineWatch) wait(t *testing.T, sub string, limit time.Duration) string {
	t.Helper()
	deadline := time.After(limit)
	for {
		l.mu.Lock()
		text, changed := l.buf.String(), l.changed
		l.mu.Unlock()
		for _, line := range strings.SplitAfter(text, "\n") {
			if strings.HasSuffix(line, "\n") && strings.Contains(line, sub) {
				return line
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no stderr line with %q; stderr:\n%s", sub, text)
		}
	}
}

// storeCount counts rows of the store, read through a connection of its
// own (read-only), not through the product's store.
func storeCount(t *testing.T, data, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "needle.db")+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// replayAttempts counts the proof replays the store recorded.
func replayAttempts(t *testing.T, data string) int {
	t.Helper()
	return storeCount(t, data, `SELECT count(*) FROM attempts WHERE source = 'replay'`)
}

// awaitNeedCertificate waits until the store holds a need certificate: the
// server records an answer's certificate after the answer, off the request
// path.
func awaitNeedCertificate(t *testing.T, data string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); storeCount(t, data, `SELECT count(*) FROM certificates WHERE scope = 'need'`) == 0; runtimeYield() {
		if time.Now().After(deadline) {
			t.Fatal("the first answer's need certificate was never stored")
		}
	}
}

// refreshSession starts needle mcp serve on te's store with args and
// connects the go-sdk client; the server's stderr is returned.
func refreshSession(t *testing.T, te *testEngine, mode string, args ...string) (*mcp.ClientSession, *lineWatch) {
	t.Helper()
	return refreshSessionTerm(t, te, mode, 30*time.Second, args...)
}

// refreshSessionTerm is refreshSession whose Close waits term for the
// server to exit by itself before it sends SIGTERM.
func refreshSessionTerm(t *testing.T, te *testEngine, mode string, term time.Duration, args ...string) (*mcp.ClientSession, *lineWatch) {
	t.Helper()
	te.Close() // the command opens the same data directory
	t.Cleanup(mcpMode(t, mode, te.data))
	cmd := needleCommand(t, append([]string{"mcp", "serve", "--data-dir", te.data, "--repository", te.repo,
		"--main-model", "sdk-test", "--role-profile", "default", "--cache-only"}, args...)...)
	stderr := newLineWatch()
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "needle-test", Version: "0.0.1"}, nil)
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: term}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, stderr
}

// askOver asks need over s and returns the resolution kind and the context.
func askOver(t *testing.T, s *mcp.ClientSession, need string) (kind, text string) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal([]byte(need), &args); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "need_context", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("need_context: %+v, %v", res, err)
	}
	sc, _ := roundTrip(t, res.StructuredContent).(map[string]any)
	resolution, _ := sc["resolution"].(map[string]any)
	kind, _ = resolution["kind"].(string)
	return kind, res.Content[0].(*mcp.TextContent).Text
}

// TestMCP_BackgroundRefresh: needle mcp serve, a real subprocess driven by
// the go-sdk client, re-proves evidence whose lines moved in the
// background and readies the session for the renewed need: once it logs
// both, the need is an exact hit citing the new lines and replays nothing
// when it is asked.
func TestMCP_BackgroundRefresh(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			te := MustEngine(t, MustFixtureRepo(t, "grepx", true))
			te.mustCertify(locCRLF)
			s, stderr := refreshSession(t, te, mode, "--refresh-interval", "50ms")
			if kind, text := askOver(t, s, needLocateCRLF); kind != string(ResolutionCoverage) || !strings.Contains(text, "flags.go:6-14") {
				t.Fatalf("first ask: %s\n%s", kind, text)
			}
			awaitNeedCertificate(t, te.data)
			before := replayAttempts(t, te.data)
			shiftCRLF(t, te.repo)
			line := stderr.wait(t, "1 of 1 need certificates renewed", 2*time.Minute)
			if !strings.HasPrefix(line, "needle mcp serve: evidence refresh: 1 of ") || !strings.Contains(line, "pieces of evidence re-proven (0 stale)") {
				t.Errorf("refresh line %q", line)
			}
			// Then the session readies its memory for the renewed need.
			stderr.wait(t, "evidence refresh: 1 needs readied", 2*time.Minute)
			refreshed := replayAttempts(t, te.data)
			if refreshed <= before {
				t.Errorf("the refresh logged, but the store holds %d replay attempts (before it: %d)", refreshed, before)
			}
			kind, text := askOver(t, s, needLocateCRLF)
			if kind != string(ResolutionExact) || !strings.Contains(text, "flags.go:9-17") || strings.Contains(text, "flags.go:6-14") {
				t.Errorf("after the refresh: %s\n%s", kind, text)
			}
			if after := replayAttempts(t, te.data); after != refreshed {
				t.Errorf("the need replayed at need time: %d replay attempts after it, %d before", after, refreshed)
			}
			if err := s.Close(); err != nil {
				t.Errorf("the server did not exit cleanly: %v\n%s", err, stderr)
			}
		})
	}
}

// TestMCP_BackgroundRefreshOff: --refresh-interval 0 turns the refresher
// off: the need after the change replays its proof at need time.
func TestMCP_BackgroundRefreshOff(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true))
	te.mustCertify(locCRLF)
	s, stderr := refreshSession(t, te, "Standalone", "--refresh-interval", "0")
	if kind, _ := askOver(t, s, needLocateCRLF); kind != string(ResolutionCoverage) {
		t.Fatalf("first ask: %s", kind)
	}
	awaitNeedCertificate(t, te.data)
	shiftCRLF(t, te.repo)
	before := replayAttempts(t, te.data)
	// The answer is the same exact hit at the new lines; only its proof
	// was replayed while the need waited.
	if kind, text := askOver(t, s, needLocateCRLF); kind != string(ResolutionExact) || !strings.Contains(text, "flags.go:9-17") {
		t.Errorf("after the change: %s\n%s", kind, text)
	}
	if after := replayAttempts(t, te.data); after != before+1 {
		t.Errorf("replay attempts during the need: %d → %d, want one", before, after)
	}
	if err := s.Close(); err != nil {
		t.Errorf("the server did not exit cleanly: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr.String(), "evidence refresh") {
		t.Errorf("a refresher ran with --refresh-interval 0:\n%s", stderr)
	}
}

// TestMCP_BackgroundRefreshCancelled: the session ends while the refresher
// runs a cited test again in the sandbox: the run is cancelled (its
// checkout removed), nothing is certified, and the server exits cleanly.
// The server exits by itself, once the cancelled refresh has cleaned up
// and said so: the test waits for that exit (SIGTERM only after ten
// minutes, a failsafe), never for a time.
func TestMCP_BackgroundRefreshCancelled(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true))
	te.mustCertify(testsCRLF)
	tests := privateTestsConfig(t) // the test checks its cache's checkouts directory
	for k, v := range map[string]string{"tests.codex": tests.Codex, "tests.cache": tests.CacheDir} {
		if err := te.store.SetSetting(context.Background(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	shiftCRLF(t, te.repo) // search_test.go's test binary compiles flags.go
	before := replayAttempts(t, te.data)
	s, stderr := refreshSessionTerm(t, te, "Standalone", 10*time.Minute, "--refresh-interval", "50ms")
	checkouts := filepath.Join(tests.CacheDir, testCheckouts) // the server's test checkouts
	for deadline := time.Now().Add(2 * time.Minute); !hasEntries(checkouts); runtimeYield() {
		if time.Now().After(deadline) {
			t.Fatalf("the refresher never ran the test; stderr:\n%s", stderr)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("the server did not exit cleanly on stdin EOF: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "needle mcp serve: evidence refresh: cancelled; what it ran was stopped and cleaned up\n") {
		t.Errorf("the cancelled refresh did not record its cleanup:\n%s", stderr)
	}
	if hasEntries(checkouts) {
		t.Error("the cancelled test run left its checkout behind")
	}
	if strings.Contains(stderr.String(), "re-proven") {
		t.Errorf("the refresh was not cancelled:\n%s", stderr)
	}
	if after := replayAttempts(t, te.data); after != before {
		t.Errorf("replay attempts %d → %d: the cancelled refresh recorded one", before, after)
	}
}

// TestRefresher_FailuresAreLoggedNotFatal: a refresher whose store fails
// logs the failure once (not at every poll), keeps polling, and stops when
// its context ends.
func TestRefresher_FailuresAreLoggedNotFatal(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true))
	te.mustCertify(locCRLF)
	e, err := Open(context.Background(), Config{DataDir: te.data, Repository: te.repo, CacheOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.store.Close(); err != nil { // every read and write of the refresher fails
		t.Fatal(err)
	}
	log := newLineWatch()
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := refresher{engine: e, log: log, prefix: "test: ", ticks: ticks}
		r.run(ctx)
	}()
	for range 3 {
		ticks <- time.Now() // received: the loop polled, or is about to
	}
	ticks <- time.Now() // the third poll is done
	cancel()
	<-done
	lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "test: evidence refresh: ") ||
		!strings.Contains(lines[0], "tried again at the next change") || !strings.HasPrefix(lines[1], "test: evidence refresh: watching for change: ") {
		t.Errorf("log of a failing refresher over 4 polls:\n%s", log)
	}
}

// BenchmarkRefreshPoll is what the refresher of an idle session costs at
// each poll: the evidence generation and the lstat of every dependency.
func BenchmarkRefreshPoll(b *testing.B) {
	te := MustEngine(b, MustFixtureRepo(b, "grepx", true))
	te.mustCertify(locCRLF)
	te.mustCertify(flowCRLF)
	te.mustCertify(locNewSearcher)
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	w, err := te.watchRefresh(ctx, later)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if due, err := te.refreshDue(ctx, w, later); err != nil || due {
			b.Fatalf("due %v, %v", due, err)
		}
	}
	b.ReportMetric(float64(w.stamp.Len()), "files")
}
