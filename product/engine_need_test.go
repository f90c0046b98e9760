package product

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestNeedContext_CoverageThenExact(t *testing.T) {
	for _, git := range []bool{false, true} {
		t.Run(map[bool]string{false: "PlainDir", true: "Git"}[git], func(t *testing.T) {
			te := MustEngine(t, MustFixtureRepo(t, "grepx", git))
			res := te.mustCertify(locNewSearcher)
			r := te.need(needLocateNewSearcher)
			kindOf(t, r, ResolutionCoverage)
			if r.Status != "hit" || !r.CacheHit || r.WorkerSpawned || r.ReuseUnit != "artifact" {
				t.Errorf("result %s", toJSON(r))
			}
			if !cites(r, "search.go", 15, 17) || r.Resolution.ArtifactIDs[0] != res.ArtifactID {
				t.Errorf("context does not cite the certified location:\n%s", r.Context)
			}
			te.reopen()
			again := te.need(needLocateNewSearcher)
			kindOf(t, again, ResolutionExact)
			if again.Resolution.CertificateID != r.Resolution.CertificateID || again.WorkerSpawned {
				t.Errorf("exact hit %s, first %s", toJSON(again), toJSON(r))
			}
		})
	}
}

func TestNeedContext_Composite(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true))
	te.mustCertify(locCRLF)
	te.mustCertify(flowCRLF)
	r := te.need(needTraceCRLF)
	kindOf(t, r, resolutionComposite)
	if len(r.Resolution.ArtifactIDs) != 2 || strings.Join(capabilityNames(r.Satisfied), ",") != "implementation_location,runtime_flow" {
		t.Errorf("result %s", toJSON(r))
	}
	for _, want := range []string{"flags.go:6-14", `1. flags.go:6-14; calls example.com/grepx.newOptions, executed: flags.go:13 -> newOptions; worker's description (unverified): "the --crlf flag is parsed"`, "2. options.go:11-18"} {
		if !strings.Contains(r.Context, want) {
			t.Errorf("context lacks %q:\n%s", want, r.Context)
		}
	}
}

func TestNeedContext_Claim(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	te.mustCertify(flowCRLF)
	r := te.need(`{"route":"locate.implementation","subject":{"kind":"symbol","name":"newOptions"}}`)
	kindOf(t, r, resolutionClaim)
	if r.ReuseUnit != "claim" || len(r.ClaimIDs) != 1 || !cites(r, "options.go", 11, 18) {
		t.Errorf("result %s\n%s", toJSON(r), r.Context)
	}
}

func TestNeedContext_PartialWithoutWorker(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	te.mustCertify(locCRLF)
	r := te.need(needTraceCRLF)
	kindOf(t, r, resolutionPartial)
	if r.Status != "partial" || strings.Join(capabilityNames(r.Missing), ",") != "runtime_flow" || !cites(r, "flags.go", 6, 14) {
		t.Errorf("result %s\n%s", toJSON(r), r.Context)
	}
	// A partial answer has no need certificate, and its text names none.
	if r.Resolution.CertificateID != "" || strings.Contains(r.Context, "certificate ,") || !strings.Contains(r.Context, "\nplan "+r.Resolution.PlanID) {
		t.Errorf("partial answer's certificate %q, context\n%s", r.Resolution.CertificateID, r.Context)
	}
}

func TestNeedContext_BypassWithoutEvidence(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.CacheOnly = true })
	r := te.need(needLocateNewSearcher)
	kindOf(t, r, resolutionBypass)
	if r.Status != "bypass" || r.WorkerSpawned {
		t.Errorf("result %s", toJSON(r))
	}
}

func TestNeedContext_StaleAfterEdit(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo)
	te.mustCertify(locNewSearcher)
	kindOf(t, te.need(needLocateNewSearcher), ResolutionCoverage)
	// A real edit inside the cited span: the proof cannot be replayed.
	falsifyNewSearcher(t, repo)
	r := te.need(needLocateNewSearcher)
	kindOf(t, r, resolutionStale)
	if r.Status != "bypass" || strings.Contains(r.Context, "search.go:15-17") {
		t.Errorf("stale result %s\n%s", toJSON(r), r.Context)
	}
}

func TestNeedContext_ReplayAfterShiftedLines(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	te := MustEngine(t, repo)
	te.mustCertify(locCRLF)
	te.mustCertify(flowCRLF)
	first := te.need(needTraceCRLF)
	kindOf(t, first, resolutionComposite)
	// Three lines inserted above the cited code: content intact, lines moved.
	shiftCRLF(t, repo)
	r := te.need(needTraceCRLF)
	kindOf(t, r, ResolutionExact)
	if !cites(r, "flags.go", 9, 17) || cites(r, "flags.go", 6, 14) {
		t.Errorf("replayed context does not cite the shifted lines:\n%s", r.Context)
	}
	if r.Resolution.CertificateID == first.Resolution.CertificateID {
		t.Error("replay did not issue a new certificate")
	}
	if !equalStrings(r.ClaimIDs, first.ClaimIDs) {
		t.Errorf("replay changed the claims: %v, was %v", r.ClaimIDs, first.ClaimIDs)
	}
	// A change elsewhere in a cited file keeps the lines and re-certifies too.
	editFile(t, filepath.Join(repo, "options.go"), "// Options holds the parsed command line.", "// Options holds the parsed command line flags.")
	kindOf(t, te.need(needTraceCRLF), ResolutionExact)
}

func TestNeedContext_Contradicted(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", false)
	MustWriteFile(t, filepath.Join(repo, "legacy", "search.go"), "package legacy\n\n// NewSearcher is the old constructor.\nfunc NewSearcher() {}\n")
	te := MustEngine(t, repo)
	te.mustCertify(locNewSearcher)
	// An overlapping span around the same declaration agrees with it.
	te.mustCertify(`{"kind":"implementation_location","subject":{"kind":"symbol","name":"NewSearcher"},"path":"search.go","start_line":14,"end_line":17}`)
	kindOf(t, te.need(needLocateNewSearcher), ResolutionCoverage)
	// A second certified declaration elsewhere: two primary answers.
	te.mustCertify(`{"kind":"implementation_location","subject":{"kind":"symbol","name":"NewSearcher"},"path":"legacy/search.go","start_line":4,"end_line":4}`)
	kindOf(t, te.need(needLocateNewSearcher), resolutionContradicted)
}

func TestNeedContext_Ambiguous(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", false)
	MustWriteFile(t, filepath.Join(repo, "legacy", "search.go"), "package legacy\n\n// NewSearcher is the old constructor.\nfunc NewSearcher() {}\n\n// Use calls it.\nfunc Use() { NewSearcher() }\n")
	te := MustEngine(t, repo)
	// Two flows through declarations of a NewSearcher in different
	// packages: two distinct places claimed for one name.
	te.mustCertify(`{"kind":"runtime_flow","subject":{"kind":"symbol","name":"run"},"scenario":"default","steps":[
		{"path":"main.go","start_line":14,"end_line":26,"summary":"run"},
		{"path":"search.go","start_line":14,"end_line":17,"summary":"build"}]}`)
	te.mustCertify(`{"kind":"runtime_flow","subject":{"kind":"symbol","name":"Use"},"scenario":"default","steps":[
		{"path":"legacy/search.go","start_line":7,"end_line":7,"summary":"use"},
		{"path":"legacy/search.go","start_line":3,"end_line":4,"summary":"old"}]}`)
	r := te.need(`{"route":"locate.implementation","subject":{"kind":"symbol","name":"NewSearcher"}}`)
	kindOf(t, r, resolutionAmbiguous)
	// Spans of one declaration with and without its doc comment agree.
	te2 := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	te2.mustCertify(flowCRLF)
	te2.mustCertify(`{"kind":"runtime_flow","subject":{"kind":"symbol","name":"parseFlags"},"scenario":"default","steps":[
		{"path":"flags.go","start_line":5,"end_line":14,"summary":"parse"},
		{"path":"options.go","start_line":10,"end_line":18,"summary":"build options"}]}`)
	kindOf(t, te2.need(`{"route":"locate.implementation","subject":{"kind":"symbol","name":"newOptions"}}`), resolutionClaim)
}

func TestNeedContext_SessionLimits(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Limits = Limits{Needs: 2} })
	te.mustCertify(locNewSearcher)
	session := newSessionID("limits")
	kindOf(t, te.needIn(session, needLocateNewSearcher), ResolutionCoverage)
	kindOf(t, te.needIn(session, needLocateCRLF), resolutionBypass)
	r := te.needIn(session, needTestsCRLF)
	kindOf(t, r, resolutionBypass)
	if !strings.Contains(r.Context, "session need limit (2) reached") {
		t.Errorf("limit bypass context:\n%s", r.Context)
	}
	// A fresh repeat re-projects with zero workers, even past the limit.
	again := te.needIn(session, needLocateNewSearcher)
	kindOf(t, again, ResolutionExact)
	if again.Step.Relation != relationRepeat || again.Step.Ordinal != 4 {
		t.Errorf("step %+v", again.Step)
	}
}

func TestNeedContext_InvalidInputChangesNothing(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Routes = routeSet{routeLocateImplementation} })
	_, err := te.NeedContext(context.Background(), "s", NeedRequest{Route: "tests.relevant", Subject: SubjectRequest{"symbol", "X"}})
	if KindOf(err) != KindInvalidInput {
		t.Fatalf("error %v, want invalid input", err)
	}
	var n int
	if err := te.store.db.QueryRow(`SELECT (SELECT count(*) FROM needs) + (SELECT count(*) FROM sessions) + (SELECT count(*) FROM resolutions)`).Scan(&n); err != nil || n != 0 {
		t.Errorf("invalid input stored %d rows (%v)", n, err)
	}
}

// shiftCRLF inserts three lines above the grepx fixture's flag
// definitions: the --crlf evidence's cited text moves down three lines,
// intact, and every file of the package's digest changes with flags.go.
func shiftCRLF(tb testing.TB, repo string) {
	editFile(tb, filepath.Join(repo, "flags.go"), "import \"flag\"\n",
		"import \"flag\"\n\n// defaultPattern is searched when none is given.\nconst defaultPattern = \"\"\n")
}

// falsifyNewSearcher edits the code inside NewSearcher's cited span: its
// location can no longer be proven there.
func falsifyNewSearcher(tb testing.TB, repo string) {
	editFile(tb, filepath.Join(repo, "search.go"), "return &Searcher{pattern: o.Pattern, split: lineSplitter(o)}",
		"return &Searcher{pattern: strings.ToLower(o.Pattern), split: lineSplitter(o)}")
}

// mustAnswerCRLF certifies the grepx fixture's --crlf location and flow and
// NewSearcher's location, and asks the trace of --crlf (a composite hit) and
// where NewSearcher is (a coverage hit): both needs then have a need
// certificate.
func mustAnswerCRLF(t *testing.T, repo string) *testEngine {
	te := MustEngine(t, repo)
	te.mustCertify(locCRLF)
	te.mustCertify(flowCRLF)
	te.mustCertify(locNewSearcher)
	kindOf(t, te.need(needTraceCRLF), resolutionComposite)
	kindOf(t, te.need(needLocateNewSearcher), ResolutionCoverage)
	return te
}

func editFile(tb testing.TB, name, old, new string) {
	tb.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		tb.Fatalf("%s does not contain %q", name, old)
	}
	MustWriteFile(tb, name, strings.Replace(string(data), old, new, 1))
}

func equalStrings(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// scriptedWorker is a workerPort that answers with prepared proposals, one
// per missing obligation kind, the way a bounded worker would; what it
// proposes still goes through the real validators.
type scriptedWorker struct {
	answers map[CapabilityKind]string
	err     error
	calls   []workerRequest
}

func (w *scriptedWorker) Propose(ctx context.Context, req workerRequest) (workerResult, error) {
	w.calls = append(w.calls, req)
	if w.err != nil {
		return workerResult{}, w.err
	}
	var res workerResult
	for _, ob := range req.Missing {
		if a, ok := w.answers[ob.Kind]; ok {
			res.Proposals = append(res.Proposals, []byte(a))
		}
	}
	res.Usage = workerUsage{InputTokens: 1000, OutputTokens: 200, TotalTokens: 1200, LatencyMs: 1500}
	return res, nil
}

func TestNeedContext_Worker(t *testing.T) {
	t.Run("MissThenExact", func(t *testing.T) {
		w := &scriptedWorker{answers: map[CapabilityKind]string{capImplementationLocation: locNewSearcher}}
		te := MustEngine(t, MustFixtureRepo(t, "grepx", true), func(c *Config) { c.Worker = w })
		r := te.need(needLocateNewSearcher)
		kindOf(t, r, resolutionMiss)
		if r.Status != "worker" || !r.WorkerSpawned || r.CacheHit || !cites(r, "search.go", 15, 17) {
			t.Errorf("result %s\n%s", toJSON(r), r.Context)
		}
		if len(w.calls) != 1 || len(w.calls[0].Missing) != 1 || len(w.calls[0].Schemas) != 1 {
			t.Errorf("worker requests %+v", w.calls)
		}
		again := te.need(needLocateNewSearcher)
		kindOf(t, again, ResolutionExact)
		if again.WorkerSpawned || len(w.calls) != 1 {
			t.Errorf("the exact hit spawned a worker")
		}
		var runs, tokens int
		var status string
		if err := te.store.db.QueryRow(`SELECT count(*), max(total_tokens), max(status) FROM worker_runs`).Scan(&runs, &tokens, &status); err != nil ||
			runs != 1 || tokens != 1200 || status != "completed" {
			t.Errorf("worker runs %d, tokens %d, status %q (%v)", runs, tokens, status, err)
		}
	})
	t.Run("Rejected", func(t *testing.T) {
		wrong := strings.Replace(locNewSearcher, `"start_line":15,"end_line":17`, `"start_line":20,"end_line":26`, 1)
		w := &scriptedWorker{answers: map[CapabilityKind]string{capImplementationLocation: wrong}}
		te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Worker = w })
		r := te.need(needLocateNewSearcher)
		kindOf(t, r, resolutionRejected)
		if r.Status != "bypass" || !r.WorkerSpawned || !strings.Contains(r.Context, "failed trusted validation") {
			t.Errorf("result %s\n%s", toJSON(r), r.Context)
		}
		var status, reasons string
		if err := te.store.db.QueryRow(`SELECT status, reasons FROM attempts WHERE source = 'worker'`).Scan(&status, &reasons); err != nil ||
			status != "rejected" || !strings.Contains(reasons, "is not declared in search.go:20-26") {
			t.Errorf("attempt %q %s, %v", status, reasons, err)
		}
		// The rejected proposal is never served: with no worker, a bypass.
		te.reopen(func(c *Config) { c.CacheOnly = true })
		kindOf(t, te.need(needLocateNewSearcher), resolutionBypass)
	})
	t.Run("PartialRunsOnlyMissing", func(t *testing.T) {
		w := &scriptedWorker{answers: map[CapabilityKind]string{capRuntimeFlow: flowCRLF}}
		te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Worker = w })
		te.mustCertify(locCRLF)
		r := te.need(needTraceCRLF)
		kindOf(t, r, resolutionPartial)
		if len(w.calls) != 1 || len(w.calls[0].Missing) != 1 || w.calls[0].Missing[0].Kind != capRuntimeFlow {
			t.Fatalf("worker asked for %+v", w.calls)
		}
		if r.Status != "worker" || len(r.Missing) != 0 || !r.CacheHit || !r.WorkerSpawned || w.calls[0].Task != "trace --crlf" {
			t.Errorf("result %s", toJSON(r))
		}
	})
	t.Run("FailureFallsBackToBypass", func(t *testing.T) {
		w := &scriptedWorker{err: errors.New("turn deadline exceeded")}
		te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Worker = w })
		r := te.need(needLocateNewSearcher)
		kindOf(t, r, resolutionBypass)
		if !strings.Contains(r.Context, "worker failed: turn deadline exceeded") {
			t.Errorf("context:\n%s", r.Context)
		}
		if r.Failure != (failure{FailureWorker, "turn deadline exceeded"}) {
			t.Errorf("failure %+v, want the worker's error", r.Failure)
		}
	})
	t.Run("NothingProposed", func(t *testing.T) {
		w := &scriptedWorker{} // answers, but proposes nothing
		te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Worker = w })
		r := te.need(needLocateNewSearcher)
		kindOf(t, r, resolutionBypass)
		if r.Failure.Reason != failureWorkerNothing || !strings.Contains(r.Context, "the worker proposed nothing") {
			t.Errorf("failure %+v\n%s", r.Failure, r.Context)
		}
		if strings.Contains(toJSON(r), "worker_proposed_nothing") {
			t.Errorf("the failure reason is on the wire: %s", toJSON(r))
		}
	})
	t.Run("WorkerLimit", func(t *testing.T) {
		w := &scriptedWorker{}
		te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Worker = w; c.Limits = Limits{Workers: 1} })
		session := newSessionID("w")
		te.needIn(session, needLocateNewSearcher)
		te.needIn(session, needLocateCRLF)
		if len(w.calls) != 1 {
			t.Errorf("%d workers spawned past a limit of 1", len(w.calls))
		}
	})
}

func TestNeedContext_FocusedTests(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	te.mustCertify(testsCRLF)
	te.mustCertify(`{"kind":"focused_tests","subject":{"kind":"symbol","name":"NewSearcher"},"tests":[{"path":"search_test.go","name":"TestSearchMatches","command":"go test . -run '^TestSearchMatches$'"}]}`)
	r := te.need(needTestsCRLF)
	kindOf(t, r, ResolutionCoverage)
	if !strings.Contains(r.Context, "TestCRLF in search_test.go: executed by Needle in its sandbox, passed in ") ||
		!strings.Contains(r.Context, "; run: go test . -run '^TestCRLF$'") {
		t.Errorf("context:\n%s", r.Context)
	}
	kindOf(t, te.need(`{"route":"tests.relevant","subject":{"kind":"symbol","name":"NewSearcher"}}`), ResolutionCoverage)
}

// TestNeedContext_World holds the world rule: a need is answered from
// evidence in the current world however it names it (omitted, "current",
// the running platform, the current snapshot's digest), and in any other
// world it is a bypass that names the world, never a hit.
func TestNeedContext_World(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true))
	te.mustCertify(locNewSearcher)
	snap, err := te.Engine.repo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	here := runtime.GOOS + "-" + runtime.GOARCH
	need := func(world string) string {
		return `{"route":"locate.implementation","subject":{"kind":"symbol","name":"NewSearcher"},"world":` + world + `}`
	}
	for _, world := range []string{`{}`, `{"source":"current","platform":"current","features":"default"}`,
		`{"platform":"` + here + `"}`, `{"platform":"` + strings.Replace(here, "-", "/", 1) + `"}`, `{"source":"` + snap.ID + `"}`} {
		if r := te.need(need(world)); r.Status != "hit" {
			t.Errorf("world %s: %s %s; want a hit\n%s", world, r.Status, r.Resolution.Kind, r.Context)
		}
	}
	other := "b3:" + strings.Repeat("1", 64)
	for world, says := range map[string]string{
		`{"source":"` + other + `"}`:   "world.source " + other + " is not the current source",
		`{"platform":"plan9-mips"}`:    "world.platform plan9-mips is not the platform",
		`{"features":["cgo","netgo"]}`: "world.features cgo,netgo are not the default features",
	} {
		r := te.need(need(world))
		kindOf(t, r, resolutionBypass)
		if !strings.Contains(r.Context, says) || len(r.Resolution.ArtifactIDs) != 0 {
			t.Errorf("world %s: context\n%s\nwant it to say %q and cite nothing", world, r.Context, says)
		}
	}
}

// TestNeedContext_Ledger holds the ledger's caps and classes (issue 12
// item 20): a need incompatible with an earlier step is a bypass naming
// that step (and stays one when asked again); every call counts toward
// HardSessionSteps, repeats included, and the ledger keeps each distinct
// need once.
func TestNeedContext_Ledger(t *testing.T) {
	t.Run("Incompatible", func(t *testing.T) {
		te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
		te.mustCertify(locCRLF)
		te.mustCertify(flowCRLF)
		session := newSessionID("ledger")
		first := te.needIn(session, needTraceCRLF)
		other := `{"route":"locate.implementation","subject":{"kind":"cli_option","name":"--crlf"},"preferred":[{"kind":"runtime_flow","scenario":"on-error"}]}`
		for range 2 {
			r := te.needIn(session, other)
			kindOf(t, r, resolutionBypass)
			if r.Step.Relation != relationIncompatible || !strings.Contains(r.Context, fmt.Sprintf("incompatible with step %d (need %s)", first.Step.Ordinal, first.NeedID)) {
				t.Errorf("step %+v, context\n%s", r.Step, r.Context)
			}
		}
	})
	t.Run("StepCap", func(t *testing.T) {
		te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
		te.mustCertify(locNewSearcher)
		session := newSessionID("steps")
		for i := 1; i <= HardSessionSteps; i++ {
			if r := te.needIn(session, needLocateNewSearcher); r.Status != "hit" {
				t.Fatalf("call %d: %s\n%s", i, r.Status, r.Context)
			}
		}
		r := te.needIn(session, needLocateNewSearcher)
		kindOf(t, r, resolutionBypass)
		if !strings.Contains(r.Context, fmt.Sprintf("session step limit (%d calls, repeats included) reached", HardSessionSteps)) {
			t.Errorf("past the cap:\n%s", r.Context)
		}
		if l := te.ledgers[session]; len(l.Entries) != 1 || l.Steps != HardSessionSteps+1 {
			t.Errorf("ledger of %d repeats: %d entries, %d steps", HardSessionSteps+1, len(l.Entries), l.Steps)
		}
	})
}

// TestNeedContext_Uncertifiable: an obligation no proposal can ever
// certify (a behavior subject, negative polarity) never reaches a worker:
// it is missing with its reason, and alone it is a bypass that gives it.
func TestNeedContext_Uncertifiable(t *testing.T) {
	w := &scriptedWorker{answers: map[CapabilityKind]string{}}
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Worker = w })
	for need, says := range map[string]string{
		`{"route":"locate.implementation","subject":{"kind":"behavior","name":"retries after a timeout"}}`:                                                         "a behavior subject cannot be verified",
		`{"route":"locate.implementation","subject":{"kind":"symbol","name":"NewSearcher"},"required":[{"kind":"implementation_location","polarity":"negative"}]}`: "no proposal can certify an absence",
	} {
		r := te.need(need)
		kindOf(t, r, resolutionBypass)
		if r.WorkerSpawned || !strings.Contains(r.Context, says) {
			t.Errorf("%s: worker %v, context\n%s", need, r.WorkerSpawned, r.Context)
		}
	}
	if len(w.calls) != 0 {
		t.Errorf("the worker was asked %d times: %+v", len(w.calls), w.calls)
	}
	// The validators refuse the same by the same table, before reading.
	p := te.propose(`{"kind":"implementation_location","subject":{"kind":"behavior","name":"retries"},"path":"search.go","start_line":1,"end_line":1}`)
	if p.Status != "rejected" || len(p.Reasons) != 1 || !strings.Contains(p.Reasons[0], "a behavior subject cannot be verified") {
		t.Errorf("a behavior proposal: %+v", p)
	}
}
