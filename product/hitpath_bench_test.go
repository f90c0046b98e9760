//go:build linux

package product

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// The benchmarks of this file each isolate one cost of the exact-hit path
// that issue 13 names, next to the hit itself, so that a fix shows in its
// own benchmark and the hit benchmark, and neither can come back unseen.
// needlebench experiment mcp-hit-latency measures the same path end to end
// over real stdio. Sizes follow the issue: 0 / 1k / 10k earlier hits, 10 /
// 100 / 1000 artifacts, 1k / 50k files.

// exactHit is an engine over the grepx fixture whose need (where
// NewSearcher is implemented) has been answered once, so that asking it
// again is an exact hit, with the stat cache of every fixture file trusted.
type exactHit struct {
	te    *testEngine
	req   NeedRequest
	need  compiledNeed
	first NeedResult
	files []string
}

func mustExactHit(tb testing.TB, git bool, mutate ...func(*Config)) *exactHit {
	tb.Helper()
	te := MustEngine(tb, MustFixtureRepo(tb, "grepx", git), mutate...)
	te.mustCertify(locNewSearcher)
	h := &exactHit{te: te, first: te.need(needLocateNewSearcher)}
	kindOf(tb, h.first, ResolutionCoverage)
	var err error
	if h.req, err = DecodeNeedRequest([]byte(needLocateNewSearcher)); err != nil {
		tb.Fatal(err)
	}
	if h.need, err = Compile(h.req, AllRoutes()); err != nil {
		tb.Fatal(err)
	}
	h.files = mustFixtureFiles(tb, te.Root())
	return h
}

// hit resolves the need in session and fails unless it is an exact hit.
// With held, its accounting is held by an answer hook and dropped, as over
// MCP when an answer cannot be written: only the request path runs.
func (h *exactHit) hit(b *testing.B, session string, held bool) {
	ctx := context.Background()
	if held {
		ctx, _ = withAnswerHook(ctx)
	}
	r, err := h.te.NeedContext(ctx, session, h.req)
	if err != nil {
		b.Fatal(err)
	}
	if r.Resolution.Kind != ResolutionExact || r.WorkerSpawned || r.Context == "" {
		b.Fatalf("resolution %s (worker %v), want an exact hit\n%s", r.Resolution.Kind, r.WorkerSpawned, r.Context)
	}
}

// loop times exact hits in session with the stat cache trusted, and checks
// afterwards that it stayed trusted (or the benchmark timed rehashing). A
// session answers at most HardSessionSteps calls, so the hits go on in a
// new session when one is full, started outside the timing; the store's
// history stays.
func (h *exactHit) loop(b *testing.B, session string, held bool) {
	recorded := mustTrustStatCache(b, h.te.Engine, h.files)
	h.hit(b, session, false) // the session's first need, created outside the timing
	steps := 1
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if steps == HardSessionSteps {
			b.StopTimer()
			session, steps = newSessionID("bench"), 1
			h.hit(b, session, false)
			b.StartTimer()
		}
		h.hit(b, session, held)
		steps++
	}
	b.StopTimer()
	checkStatCacheKept(b, h.te.Engine, h.files, recorded)
}

// BenchmarkHitWrites times the writes of an exact hit (issue 13 cause 1).
// They were five write transactions on the request path, three of them
// waiting for an fsync of the WAL. Now the request path writes nothing:
// storing a need already stored is a read ("PutNeed"), an exact hit's need
// certificate is not written again, and the ledger step, the resolution
// record and the economic observation are the answer's accounting, which
// the accountant commits off the request path, many answers in one
// transaction: "accounting/N" is one group commit of N answers.
func BenchmarkHitWrites(b *testing.B) {
	h := mustExactHit(b, false)
	e, ctx := h.te.Engine, context.Background()
	session := newSessionID("bench")
	ledger, err := e.ledger(ctx, session)
	if err != nil {
		b.Fatal(err)
	}
	if err := e.acct.flush(ctx); err != nil { // the session's row, queued, before answers refer to it
		b.Fatal(err)
	}
	certID, members, err := e.store.needCertificate(ctx, h.need.ID)
	if err != nil || certID == "" || len(members) != 1 {
		b.Fatalf("need certificate %q %v: %v", certID, members, err)
	}
	ev, err := e.store.evidenceByCertificate(ctx, members[0])
	if err != nil {
		b.Fatal(err)
	}
	d := decision{Kind: ResolutionExact, Chosen: []choice{{Obligation: h.need.IR.Obligations[0], Evidence: candidate{Evidence: ev, State: stateFresh}}}}
	plan, err := buildPlan(h.need.ID, d)
	if err != nil {
		b.Fatal(err)
	}
	if nc := newNeedCertificate(e.root, h.need.ID, d.Chosen, h.first.Satisfied); nc.ID != certID {
		b.Fatalf("the exact hit's need certificate %s is not the stored %s: it would be written again", nc.ID, certID)
	}
	ir := []byte(mustJSON(h.need.IR))
	b.Run("PutNeed", func(b *testing.B) {
		for b.Loop() {
			if err := e.store.PutNeed(ctx, h.need.ID, h.need.DefinitionID, string(h.need.IR.Route), string(h.need.IR.Subject.Kind), h.need.IR.Subject.Name, ir); err != nil {
				b.Fatal(err)
			}
		}
	})
	conn, err := e.store.openAccountingConn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer closeAccountingConn(conn)
	// "accounting" commits on the pool (synchronous FULL: an fsync per
	// commit), as a worker's answer is recorded; "accountant" on the
	// accountant's own connection (synchronous NORMAL, no fsync), as every
	// other answer's accounting is.
	for _, on := range []struct {
		name string
		conn *accountingConn
	}{{"accounting", nil}, {"accountant", conn}} {
		for _, n := range []int{1, 16, maxAccountQueue} {
			b.Run(fmt.Sprintf("%s/%d", on.name, n), func(b *testing.B) {
				batch := make([]answerAccount, n)
				for b.Loop() {
					for i := range batch {
						r := h.first
						r.Step = stepInfo{Ordinal: ledger.nextOrdinal(), Relation: relationRepeat}
						batch[i] = answerAccount{Root: e.root, Session: session, Result: r, Plan: plan,
							Observation: &observation{Operator: opReuse, Capabilities: r.Satisfied, LatencyMs: 1}}
					}
					if err := e.store.putAccountingOn(ctx, on.conn, nil, batch, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkNeedContextExact is the exact hit in process, in a session that
// already asked it once. "request" is what the client waits for: the
// accounting is held by an answer hook (as over MCP until the answer is
// written) and dropped. "accounted" queues every answer's accounting as
// the API does; the accountant writes it concurrently, so its figure is
// the throughput of hits with their accounting (a full queue makes the
// next hit wait). Compare BenchmarkHitWrites.
func BenchmarkNeedContextExact(b *testing.B) {
	for _, held := range []bool{true, false} {
		b.Run(map[bool]string{true: "request", false: "accounted"}[held], func(b *testing.B) {
			h := mustExactHit(b, false)
			h.loop(b, newSessionID("bench"), held)
		})
	}
}

// mustHistory makes the store and the session look as they do after n
// earlier exact hits of the same need in the same session: n ledger steps
// and n resolution records in the store, n observations folded into the
// cost aggregates, and n repeats recorded in the session's in-memory
// ledger. The rows copy the shape of real ones (insert … select), so the
// queries see the same data.
func (h *exactHit) mustHistory(tb testing.TB, session string, n int) {
	tb.Helper()
	e, ctx := h.te.Engine, context.Background()
	l, err := e.ledger(ctx, session)
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.acct.flush(ctx); err != nil { // the first hit's resolution, copied below
		tb.Fatal(err)
	}
	if e.costs == nil {
		if e.costs, err = e.store.operatorCosts(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range n {
		l.add(ledgerEntry{NeedID: h.need.ID, IR: h.need.IR, Missing: []CapabilityKind{}})
		l.nextOrdinal()
		e.costs.observe(observation{Operator: opReuse, Capabilities: h.first.Satisfied, LatencyMs: 2.5 + float64(i%7)})
	}
	const series = `WITH RECURSIVE g(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM g WHERE value < ?) `
	stmts := []string{
		`INSERT INTO steps (session_id, ordinal, need_id, relation, task, created_at) ` + series +
			`SELECT ?, value, ?, 'repeat', '', '2026-01-01T00:00:00Z' FROM g`,
		`INSERT INTO resolutions (root, session_id, ordinal, need_id, kind, certificate_id, plan_id, plan, result, result_digest, worker_spawned, created_at) ` +
			series + `SELECT r.root, ?, g.value, r.need_id, 'exact_hit', r.certificate_id, r.plan_id, r.plan, r.result, r.result_digest, 0, r.created_at
			FROM g, (SELECT * FROM resolutions ORDER BY resolution_id LIMIT 1) r`,
	}
	args := [][]any{{n, session, h.need.ID}, {n, session}}
	for i, s := range stmts {
		if n == 0 {
			break // the series starts at 1
		}
		if _, err := e.store.db.ExecContext(ctx, s, args[i]...); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
}

// BenchmarkNeedContextExact_History is the exact hit after 0, 1,000 and
// 10,000 earlier hits in the same session (issue 13 cause 2 and the
// ledger): it must stay flat. The state is built by mustHistory, not by
// replaying the hits, so that each size sets up in well under a second.
func BenchmarkNeedContextExact_History(b *testing.B) {
	for _, n := range []int{0, 1_000, 10_000} {
		b.Run(fmt.Sprintf("hits=%d", n), func(b *testing.B) {
			h := mustExactHit(b, false)
			session := newSessionID("bench")
			h.mustHistory(b, session, n)
			h.loop(b, session, true)
		})
	}
}

// BenchmarkObservations prices the plans of a hit (the evidence plan and
// the all-worker plan) after n observations were folded into the cost
// aggregates (issue 13 cause 2): every hit added an observation row and
// every hit sorted them all; the running aggregates hold a row per
// (operator, capability), so pricing, and the read of the aggregates when
// an engine opens ("load"), cost the same after 100,000 observations as
// after none.
func BenchmarkObservations(b *testing.B) {
	need, err := Compile(mustDecodeNeed(b, needTraceCRLF), AllRoutes())
	if err != nil {
		b.Fatal(err)
	}
	d := decision{Kind: ResolutionCoverage}
	for _, ob := range need.IR.Obligations {
		d.Chosen = append(d.Chosen, choice{Obligation: ob, Evidence: candidate{Evidence: Evidence{CertificateID: "c-" + string(ob.Kind)}, State: stateFresh}})
	}
	reuse, err := buildPlan(need.ID, d)
	if err != nil {
		b.Fatal(err)
	}
	worker, err := buildPlan(need.ID, decision{Kind: resolutionMiss, WorkerFor: requiredObligations(need.IR)})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{0, 1_000, 10_000, 100_000} {
		book := costBook{}
		for i := range n {
			if i%10 == 0 {
				book.observe(observation{Operator: opWorker, Capabilities: obligationKinds(need.IR), Tokens: int64(i % 5000), CostUSD: 0.001, LatencyMs: 900})
			} else {
				book.observe(observation{Operator: opReuse, Capabilities: []CapabilityKind{need.IR.Obligations[i%len(need.IR.Obligations)].Kind}, LatencyMs: 2.5 + float64(i%7)})
			}
		}
		b.Run(fmt.Sprintf("rows=%d/price", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, w := reuse, worker
				if p := selectPlan(&r, &w, book, defaultPrices); p.Advisory != (n < 10*minObservations) {
					b.Fatalf("advisory %v after %d observations", p.Advisory, n)
				}
			}
		})
		b.Run(fmt.Sprintf("rows=%d/load", n), func(b *testing.B) {
			te := MustEngine(b, MustFixtureRepo(b, "grepx", false))
			mustPutCostBook(b, te.store, book)
			ctx := context.Background()
			for b.Loop() {
				got, err := te.store.operatorCosts(ctx)
				if err != nil || len(got) != len(book) {
					b.Fatalf("operatorCosts: %d rows, %v; want %d", len(got), err, len(book))
				}
			}
		})
	}
}

// mustPutCostBook stores the aggregates of book as they would be after
// folding its observations one by one.
func mustPutCostBook(tb testing.TB, s *store, book costBook) {
	tb.Helper()
	for k, c := range book {
		if _, err := s.db.Exec(`INSERT INTO operator_costs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '2026-01-01T00:00:00Z')`,
			string(k.Operator), string(k.Capability), c.Count, c.Latency.Mean, c.Latency.M2, c.Cost.Mean, c.Cost.M2, c.Tokens.Mean, c.Tokens.M2); err != nil {
			tb.Fatal(err)
		}
	}
}

func mustDecodeNeed(tb testing.TB, src string) NeedRequest {
	tb.Helper()
	req, err := DecodeNeedRequest([]byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	return req
}

// BenchmarkLedgerClassify relates a repeated need to a session ledger after
// n answers of it: the ledger kept an entry per answer, repeats included,
// so a long session classified in O(session length); it now keeps one per
// distinct need and outcome, and a repeat is one map lookup.
func BenchmarkLedgerClassify(b *testing.B) {
	need, err := Compile(mustDecodeNeed(b, needTraceCRLF), AllRoutes())
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 1_000, 10_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			l := &ledger{}
			for range n {
				l.add(ledgerEntry{NeedID: need.ID, IR: need.IR, Missing: []CapabilityKind{}})
			}
			if len(l.Entries) != 1 {
				b.Fatalf("%d repeats left %d ledger entries, want 1", n, len(l.Entries))
			}
			for b.Loop() {
				if rel := l.classify(need.ID, need.IR); rel != relationRepeat {
					b.Fatalf("relation %s", rel)
				}
			}
		})
	}
}

// artifactStore is an engine whose store holds a growing number of
// certified artifacts: the NewSearcher location plus generated functions of
// fill.go, each certified through Propose like any operator evidence.
type artifactStore struct {
	h         *exactHit
	certified int
}

const maxFill = 1_000

func mustArtifactStore(tb testing.TB) *artifactStore {
	tb.Helper()
	h := mustExactHit(tb, false)
	MustWriteFile(tb, filepath.Join(h.te.Root(), "fill.go"), fillSource(0, maxFill))
	h.files = append(h.files, "fill.go")
	return &artifactStore{h: h, certified: 1}
}

// grow certifies generated functions until n artifacts are certified.
func (a *artifactStore) grow(tb testing.TB, n int) {
	tb.Helper()
	for ; a.certified < n; a.certified++ {
		i := a.certified - 1
		a.h.te.mustCertify(fmt.Sprintf(`{"kind":"implementation_location","subject":{"kind":"symbol","name":"F%05d"},"path":"fill.go","start_line":%d,"end_line":%d}`,
			i, 5*i+4, 5*i+6))
	}
}

// BenchmarkArtifacts times, with 10, 100 and 1,000 certified artifacts in
// the store, the two queries of the exact hit whose cost follows the
// number of artifacts (issue 13 cause 3) and the hit itself: claimSources
// (certificate_claims has no index on claim_id) and evidenceFor (the "not
// superseded" test scans artifacts, which have no index on
// origin_artifact_id). All three must stay flat.
func BenchmarkArtifacts(b *testing.B) {
	a := mustArtifactStore(b)
	e, ctx := a.h.te.Engine, context.Background()
	subject := a.h.need.IR.Subject
	for _, n := range []int{10, 100, maxFill} {
		b.Run(fmt.Sprintf("artifacts=%d/claimSources", n), func(b *testing.B) {
			a.grow(b, n)
			for b.Loop() {
				if _, err := e.store.claimSources(ctx, subject); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("artifacts=%d/evidenceFor", n), func(b *testing.B) {
			a.grow(b, n)
			for b.Loop() {
				evs, err := e.store.evidenceFor(ctx, subject, []CapabilityKind{capImplementationLocation})
				if err != nil || len(evs) != 1 {
					b.Fatalf("evidenceFor: %d, %v", len(evs), err)
				}
			}
		})
		b.Run(fmt.Sprintf("artifacts=%d/hit", n), func(b *testing.B) {
			a.grow(b, n)
			a.h.loop(b, newSessionID("bench"), true)
		})
	}
}

// mustDataFiles adds n small files under dir/sub, 100 to a directory, and
// commits them.
func mustDataFiles(tb testing.TB, dir, sub string, n int) {
	tb.Helper()
	for i := range n {
		p := filepath.Join(dir, sub, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%06d.txt", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "line %d\n", i), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	MustRun(tb, dir, "git", "add", "-A")
	MustRun(tb, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "data")
}

// BenchmarkDirDependency checks the freshness of one directory dependency
// (what exhaustive focused_tests evidence depends on) in a git repository
// with 1,000 and 50,000 more files (issue 13 cause 4): "root" depends on
// the repository root with the files below it, "sibling" on a package
// directory with the files beside it. Each check ran git ls-files, which
// reads the whole index and walks the directory for untracked files; the
// directory cache validates the listing by a few lstats per direct
// subdirectory, so both are flat and far below a subprocess.
func BenchmarkDirDependency(b *testing.B) {
	for _, n := range []int{1_000, 50_000} {
		// One repository per size serves both layouts (writing 50,000
		// files and adding them to git is most of the set-up); it lives
		// as long as the parent benchmark.
		parent, e := b, (*Engine)(nil)
		for _, layout := range []struct{ name, dir string }{{"root", "."}, {"sibling", "pkg"}} {
			b.Run(fmt.Sprintf("files=%d/%s", n, layout.name), func(b *testing.B) {
				if e == nil {
					repo := MustFixtureRepo(parent, "grepx", true)
					MustWriteFile(b, filepath.Join(repo, "pkg", "pkg.go"), "package pkg\n")
					mustDataFiles(b, repo, "data", n)
					e = MustEngine(parent, repo).Engine
				}
				ctx := context.Background()
				// The repository was just written: a clock RacyWindow ahead
				// lets the directory cache trust what it records at once, as
				// it would RacyWindow after the last change.
				e.repo = e.repo.WithClock(func() time.Time { return time.Now().Add(2 * snapshot.RacyWindow) })
				digest, err := e.repo.DirDigest(ctx, layout.dir)
				if err != nil {
					b.Fatal(err)
				}
				deps := []dependency{{Kind: "dir", Path: layout.dir, Digest: digest}}
				for b.Loop() {
					if fresh, err := isFresh(ctx, e.repo, deps); err != nil || !fresh {
						b.Fatalf("isFresh = %v, %v", fresh, err)
					}
				}
			})
		}
	}
}

// BenchmarkMCPExactHit is the exact hit as an MCP client asks it, in
// process: a need_context tools/call line into ServeMCP and its answer
// line back, over pipes, the accounting queued once the answer is written
// (as needle mcp serve does); "noop" is a tools/call of a tool needle does
// not have on the same loop, the floor of any call (needlebench experiment
// mcp-hit-latency's hit ÷ no-op). A connection answers HardSessionSteps
// calls: the hits go on over a new one, opened outside the timing.
// cpu-ns/op is the process's CPU time per call, the accountant's commits
// of the hits included (it is synced before the figure is taken): what a
// hit costs the cores, which the wall time on a busy machine hides.
func BenchmarkMCPExactHit(b *testing.B) {
	for _, name := range []string{"hit", "noop"} {
		b.Run(name, func(b *testing.B) {
			h := mustExactHit(b, false)
			// An MCP session freezes the default role profile: without it
			// stored, its row and so every answer's accounting would fail.
			if err := h.te.store.ensureDefaultProfile(context.Background()); err != nil {
				b.Fatal(err)
			}
			recorded := mustTrustStatCache(b, h.te.Engine, h.files)
			call := func(id int) string { return mcpNeedCall(id, needLocateNewSearcher) }
			want := `"kind":"exact_hit"`
			if name == "noop" {
				call = func(id int) string {
					return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"needlebench_noop","arguments":{}}}`, id)
				}
				want = `"code":-32602`
			}
			var c *mcpBenchConn
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for i := 0; b.Loop(); i++ {
				if c == nil || c.steps == HardSessionSteps {
					b.StopTimer()
					if c != nil {
						c.close(b)
					}
					c = openMCPBenchConn(b, h)
					b.StartTimer()
				}
				if line := c.ask(b, call(i+2)); !strings.Contains(line, want) {
					b.Fatalf("answer %.300s, want %s", line, want)
				}
				c.steps++
			}
			b.StopTimer()
			if err := h.te.acct.flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			c.close(b)
			checkStatCacheKept(b, h.te.Engine, h.files, recorded)
			if err := h.te.acct.firstError(); err != nil {
				b.Fatalf("the accounting of the hits was not written: %v", err)
			}
		})
	}
}

// mcpBenchConn is one in-process MCP connection of BenchmarkMCPExactHit.
type mcpBenchConn struct {
	in    *io.PipeWriter
	out   *bufio.Reader
	done  chan error
	steps int
}

func openMCPBenchConn(b *testing.B, h *exactHit) *mcpBenchConn {
	b.Helper()
	c := initializeMCPBenchConn(b, h)
	if line := c.ask(b, mcpNeedCall(1, needLocateNewSearcher)); !strings.Contains(line, "_hit") {
		b.Fatalf("first ask: %.300s", line)
	}
	c.steps = 1
	return c
}

// processCPU is the CPU time (user and system) the process has used, in
// nanoseconds: per call, the cost of a hit on every core — the request,
// the accountant's commit of it (the caller syncs the accountant first),
// the garbage collector — which a wall-clock figure on a busy machine
// hides.
func processCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// ask writes one request line and reads the answer line.
func (c *mcpBenchConn) ask(b *testing.B, line string) string {
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		b.Fatal(err)
	}
	answer, err := c.out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	return answer
}

func (c *mcpBenchConn) close(b *testing.B) {
	c.in.Close()
	if err := <-c.done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHitReads times the reads every exact hit makes whatever the
// process has cached: the need's newest need certificate and its members,
// and the worker tokens an obligation costs (what the hit saved). SQLite
// parsed each of them on every call; they are prepared once per store now.
func BenchmarkHitReads(b *testing.B) {
	h := mustExactHit(b, false)
	st, ctx := h.te.store, context.Background()
	b.Run("needCertificate", func(b *testing.B) {
		for b.Loop() {
			if id, members, err := st.needCertificate(ctx, h.need.ID); err != nil || id == "" || len(members) != 1 {
				b.Fatalf("need certificate %q %v: %v", id, members, err)
			}
		}
	})
	b.Run("workerTokensPerObligation", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.workerTokensPerObligation(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFirstHit times the first need_context of a new connection
// (issue 26): each iteration reopens the engine on the same store, as a
// new needle mcp serve process does, initializes an MCP connection outside
// the timing and times its first call, an exact hit of a need the store
// answered before. "cold" is the first hit of an engine nothing readied;
// "warmed" of one readied by WarmOpen, as needle mcp serve readies it in
// the background (the memo, the stored need, the estimates, the
// statements prepared and the schema read); "later" times the same hit once
// more on the same connection: the first should cost what it costs.
func BenchmarkFirstHit(b *testing.B) {
	for _, name := range []string{"cold", "warmed", "later"} {
		b.Run(name, func(b *testing.B) {
			h := mustExactHit(b, false)
			if err := h.te.store.ensureDefaultProfile(context.Background()); err != nil {
				b.Fatal(err)
			}
			mustTrustStatCache(b, h.te.Engine, h.files)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				h.te.reopen()
				if name == "warmed" {
					if n, err := h.te.WarmOpen(context.Background()); err != nil || n != 1 {
						b.Fatalf("WarmOpen: %d needs, %v", n, err)
					}
				}
				c := openMCPBenchConnBare(b, h)
				if name == "later" {
					c.mustHit(b, 1)
				}
				b.StartTimer()
				c.mustHit(b, 2)
				b.StopTimer()
				c.close(b)
				b.StartTimer()
			}
		})
	}
}

// initializeMCPBenchConn serves an in-process MCP connection on h's engine
// and asks initialize.
func initializeMCPBenchConn(b *testing.B, h *exactHit) *mcpBenchConn {
	b.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &mcpBenchConn{in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		c.done <- ServeMCP(context.Background(), MCPConfig{Engine: h.te.Engine, Repository: h.te.repo, MainModel: "bench",
			Profile: ProfileRevision{ID: DefaultProfileID, Revision: 1, Profile: defaultProfile}, CacheOnly: true, Log: io.Discard}, inR, outW)
		outW.Close()
	}()
	if line := c.ask(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`); !strings.Contains(line, "protocolVersion") {
		b.Fatalf("initialize: %.300s", line)
	}
	return c
}

// openMCPBenchConnBare opens an MCP connection and answers initialize,
// asking nothing else.
func openMCPBenchConnBare(b *testing.B, h *exactHit) *mcpBenchConn {
	b.Helper()
	c := initializeMCPBenchConn(b, h)
	if _, err := io.WriteString(c.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return c
}

// mustHit asks the exact hit of mustExactHit's need and fails unless it is
// one.
func (c *mcpBenchConn) mustHit(b *testing.B, id int) {
	if line := c.ask(b, mcpNeedCall(id, needLocateNewSearcher)); !strings.Contains(line, `"kind":"exact_hit"`) {
		b.Fatalf("answer %.300s, want an exact hit", line)
	}
	c.steps++
}

// BenchmarkNeedArgs times what a need_context call's arguments cost before
// the engine resolves them (issue 26): "decode" decodes and compiles them,
// as every call did; "remembered" is the connection's memory of the needs
// it compiled (compiledArgs), which answers the same bytes with the same
// need.
func BenchmarkNeedArgs(b *testing.B) {
	args := []byte(needLocateNewSearcher)
	compile := func() (compiledNeed, error) {
		req, err := DecodeNeedRequest(args)
		if err != nil {
			return compiledNeed{}, err
		}
		return Compile(req, AllRoutes())
	}
	want, err := compile()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n, err := compile(); err != nil || n.ID != want.ID {
				b.Fatalf("need %s: %v", n.ID, err)
			}
		}
	})
	b.Run("remembered", func(b *testing.B) {
		var c compiledArgs
		b.ReportAllocs()
		for b.Loop() {
			if n, err := c.compile(args, compile); err != nil || n.ID != want.ID {
				b.Fatalf("need %s: %v", n.ID, err)
			}
		}
	})
}
