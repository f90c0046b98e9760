package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/needle-dev/needle/product"
)

// The validators against the truth. Every distinct scripted answer of a
// corpus (per module version, capability kind and proposal) goes through
// the product's public Propose on a fresh store, with the module's work
// tree at the answer's version, and is judged by the intervention truth:
// true certified, true rejected, false certified (Needle would serve wrong
// evidence as certified: the run fails) or false rejected; an answer the
// truth cannot judge is unjudged, and one the product could not decide
// (undecided: no sandbox, a missing dependency, a deadline) is counted as
// such, never as a rejection. The coverage truth judges it too, as a
// second opinion.

// Outcomes of a validation.
const (
	outcomeCertified = "certified"
	outcomeRejected  = "rejected"
	outcomeUndecided = "undecided"
)

// Verdict is one scripted answer judged by the truth and by the product.
type Verdict struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Need     string `json:"need"` // the first need whose worker would give it
	Kind     string `json:"kind"`
	Subject  string `json:"subject"`            // kind:name
	Intended string `json:"intended,omitempty"` // how the generator meant it to be wrong
	// Truth is the intervention truth's verdict (true, false, unjudged);
	// True is Truth == true.
	Truth string `json:"truth"`
	True  bool   `json:"true"`
	Why   string `json:"why,omitempty"` // why the truth says it is false or cannot say
	// CoverageTruth and CoverageWhy are the coverage truth's (truth.go).
	CoverageTruth string `json:"coverage_truth"`
	CoverageWhy   string `json:"coverage_why,omitempty"`
	// Outcome is the validators' (certified, rejected, undecided);
	// Certified is Outcome == certified, Reach how it was proven
	// (executed, static; "" when the product does not say).
	Outcome   string   `json:"outcome"`
	Certified bool     `json:"certified"`
	Reach     string   `json:"reach,omitempty"`
	Reasons   []string `json:"reasons,omitempty"` // the validators' reasons for a rejection
}

// KindCounts are the verdicts of one capability kind. Precision and
// recall count the answers the truth judged and the product decided.
type KindCounts struct {
	Answers        int `json:"answers"`
	TrueCertified  int `json:"true_certified"`
	TrueRejected   int `json:"true_rejected"`
	FalseCertified int `json:"false_certified"`
	FalseRejected  int `json:"false_rejected"`
	Unjudged       int `json:"unjudged"`  // the truth could not judge
	Undecided      int `json:"undecided"` // the product could not decide
	// CertifiedExecuted and CertifiedStatic split the certified answers
	// by how the product proved them (others: the product did not say).
	CertifiedExecuted int     `json:"certified_executed"`
	CertifiedStatic   int     `json:"certified_static"`
	Precision         float64 `json:"precision"` // true certified / certified (1 when nothing is certified)
	Recall            float64 `json:"recall"`    // true certified / true (1 when nothing is true)
}

func (k *KindCounts) add(v Verdict) {
	k.Answers++
	if v.Certified {
		switch v.Reach {
		case "executed":
			k.CertifiedExecuted++
		case "static":
			k.CertifiedStatic++
		}
	}
	switch {
	case v.Truth == verdictUnjudged:
		k.Unjudged++
		return
	case v.Outcome == outcomeUndecided:
		k.Undecided++
		return
	}
	switch {
	case v.True && v.Certified:
		k.TrueCertified++
	case v.True:
		k.TrueRejected++
	case v.Certified:
		k.FalseCertified++
	default:
		k.FalseRejected++
	}
	k.Precision, k.Recall = 1, 1
	if n := k.TrueCertified + k.FalseCertified; n > 0 {
		k.Precision = round4(float64(k.TrueCertified) / float64(n))
	}
	if n := k.TrueCertified + k.TrueRejected; n > 0 {
		k.Recall = round4(float64(k.TrueCertified) / float64(n))
	}
}

// countVerdicts counts verdicts per kind and in total ("all").
func countVerdicts(vs []Verdict) map[string]KindCounts {
	out := map[string]KindCounts{}
	for _, v := range vs {
		for _, k := range []string{v.Kind, "all"} {
			c := out[k]
			c.add(v)
			out[k] = c
		}
	}
	return out
}

// pendingAnswer is a distinct scripted answer waiting for its verdicts.
type pendingAnswer struct {
	Verdict
	subj     subject
	proposal []byte
}

// distinctAnswers lists the distinct scripted answers of a corpus, in
// play order of the first need carrying each.
func distinctAnswers(c *Corpus) ([]pendingAnswer, error) {
	seen := map[string]bool{}
	var out []pendingAnswer
	for _, s := range c.Sessions {
		for _, n := range s.Needs {
			req, _, err := n.request()
			if err != nil {
				return nil, fmt.Errorf("session %s need %s: %w", s.ID, n.ID, err)
			}
			for _, kind := range slices.Sorted(mapKeys(n.Answers)) {
				a := n.Answers[kind]
				key := s.Module + "\x00" + s.Version + "\x00" + kind + "\x00" + string(a.Proposal)
				if seen[key] {
					continue
				}
				seen[key] = true
				out = append(out, pendingAnswer{
					Verdict: Verdict{Module: s.Module, Version: s.Version, Need: s.ID + " " + n.ID, Kind: kind,
						Subject: req.Subject.Kind + ":" + req.Subject.Name, Intended: a.Wrong},
					subj: subject{Kind: req.Subject.Kind, Name: req.Subject.Name}, proposal: a.Proposal,
				})
			}
		}
	}
	return out, nil
}

// judgeAnswers gives every distinct scripted answer its two verdicts, in
// the manifest's order of modules and versions. A module's versions are
// judged in turn (they share its work tree); modules share nothing, so
// they are judged side by side, at most runtime.NumCPU() at once.
func judgeAnswers(ctx context.Context, c *Corpus, repos map[string]*moduleRepo, ts truths, dataRoot string, tc testsConfig, progress func(done, total int)) ([]Verdict, error) {
	pending, err := distinctAnswers(c)
	if err != nil {
		return nil, err
	}
	judged := make([][]Verdict, len(c.Manifest.Subjects))
	counted := countDone(len(pending), progress)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.NumCPU())
	for k, s := range c.Manifest.Subjects {
		g.Go(func() error {
			var err error
			judged[k], err = judgeModule(gctx, s, repos[s.Module], ts, pending, dataRoot, tc, counted)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []Verdict
	for _, v := range judged {
		out = append(out, v...)
	}
	return out, nil
}

// judgeModule judges the pending answers of one subject module, version
// by version, each on a fresh store with the work tree at that version.
func judgeModule(ctx context.Context, s Subject, repo *moduleRepo, ts truths, pending []pendingAnswer, dataRoot string, tc testsConfig, counted func()) ([]Verdict, error) {
	var out []Verdict
	for _, v := range s.Versions {
		var batch []pendingAnswer
		for _, p := range pending {
			if p.Module == s.Module && p.Version == v.Version {
				batch = append(batch, p)
			}
		}
		if len(batch) == 0 {
			continue
		}
		if err := repo.checkout(ctx, v.Version); err != nil {
			return nil, err
		}
		e, err := product.Open(ctx, product.Config{DataDir: filepath.Join(dataRoot, filepath.Base(repo.Dir)+"@"+v.Version),
			Repository: repo.Dir, CacheOnly: true, Transport: "cli", Tests: tc.of(repo)})
		if err != nil {
			return nil, err
		}
		t := ts.of(s.Module, v.Version)
		for _, p := range batch {
			j := t.iv.answer(p.subj, p.proposal)
			p.Truth, p.True, p.Why = j.V.String(), j.V == tvTrue, j.Why
			cok, cwhy := t.answer(p.subj, p.proposal)
			p.CoverageTruth, p.CoverageWhy = verdictFalse, cwhy
			switch {
			case cok:
				p.CoverageTruth = verdictTrue
			case strings.Contains(cwhy, errUnjudged):
				p.CoverageTruth = verdictUnjudged
			}
			out0, err := proposeOutcome(ctx, e, p.proposal)
			if err != nil {
				e.Close()
				return nil, fmt.Errorf("propose the answer of %s (%s): %w", p.Need, p.Kind, err)
			}
			p.Outcome, p.Reach, p.Reasons = out0.Status, out0.Reach, out0.Reasons
			p.Certified = p.Outcome == outcomeCertified
			if p.Certified {
				p.Reasons = nil
			}
			out = append(out, p.Verdict)
			counted()
		}
		e.Close()
	}
	return out, nil
}

// validation is what the product says of a proposal, as the harness
// counts it.
type validation struct {
	Status  string // certified, rejected or undecided
	Reach   string // executed, static, or "" when the product does not say
	Reasons []string
}

// proposer is the product's side of a validation: product.Engine.
type proposer interface {
	Propose(ctx context.Context, raw []byte) (product.ProposeResult, error)
}

// proposeOutcome validates a proposal through the product. Invalid input
// is a rejection with the product's message. The status passes through as
// the product says it ("undecided" is counted apart, its causes as its
// reasons), and Reach says how a certified proposal was proven.
func proposeOutcome(ctx context.Context, e proposer, raw []byte) (validation, error) {
	res, err := e.Propose(ctx, raw)
	var perr *product.Error
	switch {
	case errors.As(err, &perr) && perr.Kind == product.KindInvalidInput:
		return validation{Status: outcomeRejected, Reasons: []string{"invalid input: " + err.Error()}}, nil
	case err != nil:
		return validation{}, err
	}
	return validation{Status: res.Status, Reach: res.Reach, Reasons: append(res.Reasons, res.Undecided...)}, nil
}

// verdictLine is one verdict as the report's lists print it.
func verdictLine(v Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s@%s) %s for %s", v.Need, v.Module, v.Version, v.Kind, v.Subject)
	if v.Intended != "" {
		fmt.Fprintf(&b, ", meant wrong: %s", v.Intended)
	}
	if v.Why != "" {
		fmt.Fprintf(&b, "; truth (%s): %s", v.Truth, v.Why)
	}
	if v.Outcome == outcomeUndecided {
		b.WriteString("; validators: undecided")
	}
	if len(v.Reasons) > 0 {
		fmt.Fprintf(&b, "; validators: %s", strings.Join(v.Reasons, "; "))
	}
	return b.String()
}
