package product

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	kindOf(t, r, ResolutionComposite)
	if len(r.Resolution.ArtifactIDs) != 2 || strings.Join(capabilityNames(r.Satisfied), ",") != "implementation_location,runtime_flow" {
		t.Errorf("result %s", toJSON(r))
	}
	for _, want := range []string{"flags.go:6-14", "1. flags.go:6-14 the --crlf flag is parsed", "2. options.go:11-18"} {
		if !strings.Contains(r.Context, want) {
			t.Errorf("context lacks %q:\n%s", want, r.Context)
		}
	}
}

func TestNeedContext_Claim(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	te.mustCertify(flowCRLF)
	r := te.need(`{"route":"locate.implementation","subject":{"kind":"symbol","name":"newOptions"}}`)
	kindOf(t, r, ResolutionClaim)
	if r.ReuseUnit != "claim" || len(r.ClaimIDs) != 1 || !cites(r, "options.go", 11, 18) {
		t.Errorf("result %s\n%s", toJSON(r), r.Context)
	}
}

func TestNeedContext_PartialWithoutWorker(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	te.mustCertify(locCRLF)
	r := te.need(needTraceCRLF)
	kindOf(t, r, ResolutionPartial)
	if r.Status != "partial" || strings.Join(capabilityNames(r.Missing), ",") != "runtime_flow" || !cites(r, "flags.go", 6, 14) {
		t.Errorf("result %s\n%s", toJSON(r), r.Context)
	}
}

func TestNeedContext_BypassWithoutEvidence(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.CacheOnly = true })
	r := te.need(needLocateNewSearcher)
	kindOf(t, r, ResolutionBypass)
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
	editFile(t, filepath.Join(repo, "search.go"), "return &Searcher{pattern: o.Pattern, split: lineSplitter(o)}", "return &Searcher{pattern: strings.ToLower(o.Pattern), split: lineSplitter(o)}")
	r := te.need(needLocateNewSearcher)
	kindOf(t, r, ResolutionStale)
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
	kindOf(t, first, ResolutionComposite)
	// Three lines inserted above the cited code: content intact, lines moved.
	editFile(t, filepath.Join(repo, "flags.go"), "import \"flag\"\n", "import \"flag\"\n\n// defaultPattern is searched when none is given.\nconst defaultPattern = \"\"\n")
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
	kindOf(t, te.need(needLocateNewSearcher), ResolutionContradicted)
}

func TestNeedContext_Ambiguous(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	// Two flows whose first steps cite newOptions at different spans.
	te.mustCertify(flowCRLF)
	te.mustCertify(`{"kind":"runtime_flow","subject":{"kind":"symbol","name":"parseFlags"},"scenario":"default","steps":[
		{"path":"flags.go","start_line":5,"end_line":14,"summary":"parse"},
		{"path":"options.go","start_line":11,"end_line":17,"summary":"build options"}]}`)
	r := te.need(`{"route":"locate.implementation","subject":{"kind":"symbol","name":"newOptions"}}`)
	kindOf(t, r, ResolutionAmbiguous)
}

func TestNeedContext_SessionLimits(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Limits = Limits{Needs: 2} })
	te.mustCertify(locNewSearcher)
	session := newSessionID("limits")
	kindOf(t, te.needIn(session, needLocateNewSearcher), ResolutionCoverage)
	kindOf(t, te.needIn(session, needLocateCRLF), ResolutionBypass)
	r := te.needIn(session, needTestsCRLF)
	kindOf(t, r, ResolutionBypass)
	if !strings.Contains(r.Context, "session need limit (2) reached") {
		t.Errorf("limit bypass context:\n%s", r.Context)
	}
	// A fresh repeat re-projects with zero workers, even past the limit.
	again := te.needIn(session, needLocateNewSearcher)
	kindOf(t, again, ResolutionExact)
	if again.Step.Relation != RelationRepeat || again.Step.Ordinal != 4 {
		t.Errorf("step %+v", again.Step)
	}
}

func TestNeedContext_InvalidInputChangesNothing(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.Routes = RouteSet{RouteLocateImplementation} })
	_, err := te.NeedContext(context.Background(), "s", NeedRequest{Route: "tests.relevant", Subject: SubjectRequest{"symbol", "X"}})
	if KindOf(err) != KindInvalidInput {
		t.Fatalf("error %v, want invalid input", err)
	}
	var n int
	if err := te.store.db.QueryRow(`SELECT (SELECT count(*) FROM needs) + (SELECT count(*) FROM sessions) + (SELECT count(*) FROM resolutions)`).Scan(&n); err != nil || n != 0 {
		t.Errorf("invalid input stored %d rows (%v)", n, err)
	}
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

var _ = errors.New
