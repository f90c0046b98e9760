package main

import (
	"fmt"
	"time"

	"github.com/needle-dev/needle/product/web"
)

// seed fills f with a small, deterministic history: resolutions of every
// common kind over the last hours, their evidence, and three lifecycles —
// two awaiting approval, one still testing.
func (f *fakeAPI) seed(base time.Time) {
	subjects := []web.Subject{{Kind: "cli_option", Name: "--crlf"}, {Kind: "symbol", Name: "Compile"}, {Kind: "symbol", Name: "Searcher.Search"}, {Kind: "cli_option", Name: "--ignore-case"}}
	routes := []string{"locate.implementation", "trace.state-flow", "tests.relevant"}
	kinds := []string{"miss", "exact_hit", "coverage_hit", "miss", "exact_hit", "claim_hit", "composite_hit", "partial_hit", "exact_hit", "stale", "exact_hit", "coverage_hit"}
	for i, kind := range kinds {
		s := subjects[i%len(subjects)]
		art := digest("artifact", s.Kind, s.Name)
		hit := kind == "exact_hit" || kind == "coverage_hit" || kind == "claim_hit" || kind == "composite_hit"
		r := web.ResolutionSummary{
			At: base.Add(time.Duration(i-len(kinds)) * 17 * time.Minute), NeedID: digest("need", s.Name, routes[i%3]),
			Route: routes[i%3], Subject: s, Kind: kind, Hit: hit, WorkerSpawned: !hit && kind != "stale",
			LatencyMS: 3.5 + float64(i%4)*1.25, ArtifactIDs: []string{},
		}
		switch {
		case hit:
			r.TokensSaved = 6000 + int64(i)*150
			r.CertificateID = digest("certificate", art)
			r.ArtifactIDs = []string{art}
		case kind == "stale":
		default:
			r.TokensSpent = 5800 + int64(i)*90
			r.LatencyMS = 21000 + float64(i)*130
			r.ArtifactIDs = []string{art}
		}
		f.AddResolution(r)
		f.evidence[art] = web.EvidenceDetail{
			Artifact: web.Artifact{
				ArtifactID: art, Kind: "implementation_location", Subject: s, Status: "certified",
				Locations: []web.Location{{Path: "internal/search/" + fmt.Sprintf("file%d.go", i%4), StartLine: 40 + i, EndLine: 58 + i, Symbol: s.Name}},
				Steps:     []web.FlowStep{}, Tests: []web.TestRef{{Package: "example.com/grep/internal/search", Name: "TestSearch", Path: "internal/search/search_test.go", Command: "go test ./internal/search -run '^TestSearch$'"}}, Reasons: []string{},
			},
			Certificate:  &web.Certificate{CertificateID: digest("certificate", art), ValidatorVersion: "goevidence/1", Obligations: []string{"implementation_location(selection=primary)"}, CreatedAt: base.Add(-5 * time.Hour)},
			Dependencies: []web.Dependency{{Kind: "file", Path: fmt.Sprintf("internal/search/file%d.go", i%4), Digest: digest("dep", art), State: "fresh"}, {Kind: "dir", Path: "internal/search", Digest: digest("dir", art), State: "fresh"}},
			Freshness:    web.Freshness{State: "fresh"},
		}
	}
	f.addLifecycle("chg_0123456789abcdef01234567", "Make --crlf also strip CR before matching", base.Add(-50*time.Minute), 6, "awaiting_approval")
	f.addLifecycle("chg_89abcdef0123456789abcdef", "Add a --max-columns-preview flag", base.Add(-30*time.Minute), 6, "awaiting_approval")
	f.addLifecycle("chg_fedcba9876543210fedcba98", "Rename Searcher.run to Searcher.scan", base.Add(-10*time.Minute), 3, "running")
}

// addLifecycle adds a lifecycle that has reached phase number reached
// (1-based) with its journal.
func (f *fakeAPI) addLifecycle(id, task string, at time.Time, reached int, status string) {
	l := &fakeLifecycle{summary: web.LifecycleSummary{ChangeID: id, Task: task, Phase: phases[reached-1], Status: "running", UpdatedAt: at, StateDigest: digest("lifecycle", id)}}
	f.lifecycles[id] = l
	now := f.now
	f.now = func() time.Time { return at }
	defer func() { f.now = now }()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range phases {
		st := "pending"
		switch {
		case i < reached-1:
			st = "done"
		case i == reached-1:
			st = "active"
		}
		l.phases = append(l.phases, web.PhaseState{Phase: p, Status: st})
	}
	f.appendEvent(l, "transition", "", "explore", "lifecycle opened")
	for i := 1; i < reached; i++ {
		f.appendEvent(l, "worker_result", "", "", phases[i-1]+" worker result validated")
		f.appendEvent(l, "transition", phases[i-1], phases[i], "parent advanced to "+phases[i])
	}
	if reached >= 3 {
		l.patch = &web.Patch{PatchID: digest("patch", id), Revision: 1, Files: []web.PatchFile{{Path: "internal/search/lines.go", Op: "modify", Added: 12, Removed: 3}, {Path: "internal/search/lines_test.go", Op: "modify", Added: 25, Removed: 0}}}
	}
	if reached >= 6 {
		l.verification = &web.Verification{VerificationID: digest("verification", id), Verdict: "verified", Criteria: []web.Criterion{{Digest: digest("criterion", id, "1"), Satisfied: true}, {Digest: digest("criterion", id, "2"), Satisfied: true}}}
	}
	l.summary.Status = status
}
