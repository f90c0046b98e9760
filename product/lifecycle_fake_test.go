package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/internal/testrun"
	"github.com/needle-dev/needle/product/lifecycle"
)

// Working fake adapters for the lifecycle tests and the crash harness. They
// do what the real ones do, minus the model: implement builds a real patch
// against the repository's base content, test reports scripted outcomes
// per round, review and verify answer scripted JSON that the kernel decodes
// and judges like any worker's. Each one's external side effect is the
// creation of a file named by its invocation id in an effects directory,
// with an exclusive link. The fakes do not deduplicate themselves: that is
// the product's work (invocation.go, which the kernel wraps around every
// adapter). A fake invoked a second time with the same invocation id acts
// again, and its second link fails and is written to a DUPLICATES file,
// which the crash harness asserts never appears.

// fakeScript scripts the fakes, round by round (index 0 is round 1).
type fakeScript struct {
	// Patches: per round, path → full new content ("\x00delete" deletes).
	Patches []map[string]string `json:"patches"`
	// Tests: per round, the outcome of every plan.
	Tests []lifecycle.TestOutcome `json:"tests"`
	// Verdicts: per round, the verifier's answer (JSON as a worker writes).
	Verdicts []string `json:"verdicts"`
	// Review is the reviewer's answer.
	Review string `json:"review"`
	// Crash: phase → how many first invocations fail as crashed.
	Crash map[lifecycle.Phase]int `json:"crash"`
	// Tokens each run reports.
	Tokens int64 `json:"tokens"`
	// Effects is the directory of the side-effect records.
	Effects string `json:"effects"`
	// Gate, when set, is a FIFO the first invocation waits at (gate).
	Gate string `json:"gate"`
	// Executable: the paths whose new content the patch makes executable.
	Executable []string `json:"executable,omitempty"`
	// NoDependencies: the test phase records no dependencies, as test
	// evidence from before Needle recorded them.
	NoDependencies bool `json:"no_dependencies,omitempty"`
}

const fakeDelete = "\x00delete"

// fakeEffect is what a fake recorded for one invocation.
type fakeEffect struct {
	Implement *implementResult `json:"implement,omitempty"`
	Test      *testResult      `json:"test,omitempty"`
	Answer    string           `json:"answer,omitempty"`
	Crashed   bool             `json:"crashed,omitempty"`
}

func (f *fakeScript) adapters(root string) lifecycleAdapters {
	return lifecycleAdapters{
		Explore: func(ctx context.Context, req exploreRequest) (exploreResult, error) {
			_, err := f.effect(ctx, req.AdapterCall, func() (fakeEffect, error) { return fakeEffect{}, nil })
			return exploreResult{Evidence: req.ArtifactIDs, Usage: f.usage(), Thread: "fake-explore"}, err
		},
		Implement: func(ctx context.Context, req implementRequest) (implementResult, error) {
			e, err := f.effect(ctx, req.AdapterCall, func() (fakeEffect, error) {
				res, err := f.implement(root, req)
				return fakeEffect{Implement: &res}, err
			})
			if err != nil {
				return implementResult{}, err
			}
			return *e.Implement, nil
		},
		Test: func(ctx context.Context, req testRequest) (testResult, error) {
			e, err := f.effect(ctx, req.AdapterCall, func() (fakeEffect, error) {
				outcome := f.Tests[min(req.Round, len(f.Tests))-1]
				deps, err := fakeDependencies(ctx, root, req.Patch)
				if err != nil {
					return fakeEffect{}, err
				}
				if f.NoDependencies {
					deps = nil
				}
				res := testResult{Usage: f.usage(), Thread: "fake-test", Dependencies: deps}
				for _, p := range req.Plans {
					res.Runs = append(res.Runs, testPlanRun{Plan: p.ID, Outcome: outcome, Duration: 25 * time.Millisecond,
						Output: []byte(fmt.Sprintf("=== RUN   %s\n--- %s: %s\n", p.Test, strings.ToUpper(string(outcome)), p.Test))})
				}
				return fakeEffect{Test: &res}, nil
			})
			if err != nil {
				return testResult{}, err
			}
			return *e.Test, nil
		},
		Review: func(ctx context.Context, req reviewRequest) (reviewResult, error) {
			e, err := f.effect(ctx, req.AdapterCall, func() (fakeEffect, error) { return fakeEffect{Answer: f.Review}, nil })
			return reviewResult{Answer: e.Answer, Usage: f.usage(), Thread: "fake-review"}, err
		},
		Verify: func(ctx context.Context, req verifyRequest) (verifierResult, error) {
			e, err := f.effect(ctx, req.AdapterCall, func() (fakeEffect, error) {
				return fakeEffect{Answer: f.Verdicts[min(req.Round, len(f.Verdicts))-1]}, nil
			})
			return verifierResult{Answer: e.Answer, Usage: f.usage(), Thread: "fake-verify"}, err
		},
	}
}

// fakeDependencies are what `go test .` compiles in the grepx fixture:
// the root package's .go files (the patch's own among them), as the real
// test adapter records them.
func fakeDependencies(ctx context.Context, root string, patch []patchFile) (*TestDependencies, error) {
	repo, err := snapshot.Open(ctx, root, nil)
	if err != nil {
		return nil, err
	}
	snap, err := repo.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	pkg := testrun.CompiledPackage{ImportPath: "grepx", Dir: ".", Role: testrun.RoleTest}
	for _, f := range snap.Files {
		if !strings.Contains(f.Path, "/") && strings.HasSuffix(f.Path, ".go") {
			pkg.Files = append(pkg.Files, f.Path)
		}
	}
	for _, f := range patch {
		if f.Before == "" && !strings.Contains(f.Path, "/") && strings.HasSuffix(f.Path, ".go") {
			pkg.Files = append(pkg.Files, f.Path)
		}
	}
	return testDependencies(snap, []testrun.CompiledPackage{pkg}, []string{"."}), nil
}

func (f *fakeScript) usage() workerUsage {
	return workerUsage{InputTokens: f.Tokens, TotalTokens: f.Tokens}
}

// effect performs an invocation's side effect (act) and records it; a
// second one for the same invocation is recorded as a duplicate. A
// scripted crash is a side effect too (the worker ran and died).
func (f *fakeScript) effect(ctx context.Context, call AdapterCall, act func() (fakeEffect, error)) (fakeEffect, error) {
	if f.Effects == "" { // no deduplication: act every time
		if err := f.gate(ctx); err != nil {
			return fakeEffect{}, err
		}
		return act()
	}
	name := filepath.Join(f.Effects, strings.TrimPrefix(call.Invocation, "b3:")[:24]+"."+string(call.Phase))
	if err := f.gate(ctx); err != nil {
		return fakeEffect{}, err
	}
	var e fakeEffect
	var err error
	if f.Crash[call.Phase] >= call.Attempt {
		e.Crashed = true
	} else if e, err = act(); err != nil {
		return e, err
	}
	tmp, err := os.CreateTemp(f.Effects, ".effect-*")
	if err != nil {
		return e, err
	}
	data, _ := json.Marshal(e)
	tmp.Write(data)
	tmp.Sync()
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := os.Link(tmp.Name(), name); err != nil {
		// The side effect of this invocation happened before: a duplicate.
		dup, _ := os.OpenFile(filepath.Join(f.Effects, "DUPLICATES"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		fmt.Fprintf(dup, "%s %s\n", call.Invocation, call.Phase)
		dup.Close()
		return e, fmt.Errorf("duplicate side effect of %s: %w", call.Invocation, err)
	}
	if d, err := os.Open(f.Effects); err == nil {
		d.Sync()
		d.Close()
	}
	if e.Crashed {
		return e, errors.New("fake worker crashed")
	}
	return e, nil
}

// gate holds the fake at the FIFO Gate until a harness opens it for
// writing and writes a byte, or the run is cancelled (ctx ends: a stopped
// run's adapter returns); the first runner through removes it, so later
// invocations pass.
func (f *fakeScript) gate(ctx context.Context) error {
	if f.Gate == "" {
		return nil
	}
	r, err := os.OpenFile(f.Gate, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	read := make(chan error, 1)
	go func() {
		one := make([]byte, 1)
		_, err := r.Read(one)
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			return fmt.Errorf("gate: %w", err)
		}
	case <-ctx.Done():
		return fmt.Errorf("gate: %w", ctx.Err())
	}
	os.Remove(f.Gate)
	return nil
}

// implement builds the round's patch against the base content of the
// repository, cumulative like the real patch builder.
func (f *fakeScript) implement(root string, req implementRequest) (implementResult, error) {
	res := implementResult{Base: req.Snapshot, Usage: f.usage(), Thread: "fake-implement",
		Report: `{"summary":"done","criteria":[],"risks":[]}`}
	edits := f.Patches[min(req.Round, len(f.Patches))-1]
	for _, p := range slices.Sorted(mapKeys(edits)) {
		content := edits[p]
		file := patchFile{PatchOperation: PatchOperation{Path: p}}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return res, err
		default:
			file.Before = contentid.OfBytes(snapshot.FileTag, data)
		}
		if content == fakeDelete {
			file.Op = patchDelete
		} else {
			file.Op, file.Content, file.Bytes = patchModify, content, len(content)
			file.After = contentid.OfBytes(snapshot.FileTag, []byte(content))
			file.Executable = slices.Contains(f.Executable, p)
			if file.Before == "" {
				file.Op = patchAdd
			}
		}
		res.Patch = append(res.Patch, file)
	}
	return res, nil
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Scripted answers in the dialect workers write.
const (
	fakeVerified     = `{"verdict":"verified","criteria":[{"criterion":1,"status":"met","reason":"the comment says so"}],"repair_instructions":""}`
	fakeRepairable   = `{"verdict":"repairable","criteria":[{"criterion":1,"status":"unmet","reason":"TestSplitCRLF fails"}],"repair_instructions":"Make splitCRLF drop the trailing empty line."}`
	fakeInconclusive = `{"verdict":"inconclusive","criteria":[{"criterion":1,"status":"unknown","reason":"cannot tell"}],"repair_instructions":""}`
	fakeReview       = `{"findings":[{"severity":"minor","criterion":0,"summary":"the comment could name the flag"}]}`
)
