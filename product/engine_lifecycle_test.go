package product

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/testenv"
)

// The lifecycle end to end over frozen transcripts (make frozen-lifecycle
// recorded them from the real codex 0.171.0 and a fake model playing
// fixtures/lifecycle/NAME.json): the explore, implement, review and verify
// workers are the replay server, and the test phase really runs go test on
// the patched grepx module in the codex sandbox.

// lifecycleScenario is a fixtures/lifecycle/NAME.json scenario.
type lifecycleScenario struct {
	Request   json.RawMessage   `json:"request"`
	Needs     []json.RawMessage `json:"needs"`
	TestPlans []json.RawMessage `json:"test_plans"`
	Approve   bool              `json:"approve"`
	Want      lifecycle.Status  `json:"want"`
	Script    json.RawMessage   `json:"script"`
}

func mustLifecycleScenario(t *testing.T, name string) lifecycleScenario {
	t.Helper()
	var sc lifecycleScenario
	if err := decodeStrict(MustReadFile(t, "../fixtures/lifecycle/"+name+".json"), &sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

// realTests runs the lifecycle's tests in the pinned codex's sandbox
// (NEEDLE_CODEX_BIN; make test sets it), with a test cache of the
// repository's .cache so the standard library is compiled once per machine
// (not testrun's own: its tests check that no scratch is left in theirs).
func realTests(t *testing.T) func(*Config) {
	t.Helper()
	bin := testenv.Codex(t)
	cache := testenv.Cache(t, "testrun-lifecycle")
	return func(c *Config) { c.Tests = TestsConfig{Codex: bin, CacheDir: cache} }
}

// playLifecycle starts, runs and (when the scenario says so) approves and
// applies a scenario's lifecycle.
func playLifecycle(t *testing.T, te *testEngine, sc lifecycleScenario) LifecycleDetail {
	t.Helper()
	ctx := context.Background()
	req, err := DecodeChangeRequest(sc.Request)
	if err != nil {
		t.Fatal(err)
	}
	st := LifecycleStart{Request: req}
	for _, raw := range sc.Needs {
		n, err := DecodeNeedRequest(raw)
		if err != nil {
			t.Fatal(err)
		}
		st.Needs = append(st.Needs, n)
	}
	for _, raw := range sc.TestPlans {
		st.TestPlans = append(st.TestPlans, te.mustCertify(string(raw)).ArtifactID)
	}
	d, err := te.StartLifecycle(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if d, err = te.RunLifecycle(ctx, d.ID, nil); err != nil {
		t.Fatal(err)
	}
	if sc.Approve && d.AwaitingApproval != nil {
		b := d.AwaitingApproval
		if _, err := te.Approve(ctx, d.ID, ApprovalRequest{Patch: b.Patch, Verification: b.Verification, Lifecycle: b.Lifecycle}); err != nil {
			t.Fatal(err)
		}
		if _, err := te.Apply(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		if d, err = te.Lifecycle(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	if d.Status != sc.Want {
		t.Fatalf("lifecycle ended %s/%s (%s), want %s", d.Phase, d.Status, d.Reason, sc.Want)
	}
	return d
}

// testOutputs are the kept outputs of a lifecycle's test runs, in order.
func testOutputs(t *testing.T, te *testEngine, id string) []string {
	t.Helper()
	arts, err := te.store.lifecycleArtifacts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range arts {
		for _, o := range a.Blobs.Outputs {
			out = append(out, o.Output)
		}
	}
	return out
}

const splitComment = "// splitCRLF cuts data at CRLF or LF line ends and trims the carriage return of every line.\n"

func TestLifecycle_Frozen(t *testing.T) {
	for _, name := range []string{"verified", "repair", "inconclusive"} {
		t.Run(name, func(t *testing.T) {
			sc := mustLifecycleScenario(t, name)
			repo := MustFixtureRepo(t, "grepx", true)
			base := string(MustReadFile(t, filepath.Join(repo, "search.go")))
			before := treeDigest(t, repo)
			frozen, _ := filepath.Abs(filepath.Join("..", "frozen", "lifecycle", name))
			te := MustEngine(t, repo, replayTranscripts(t, frozen), realTests(t))
			d := playLifecycle(t, te, sc)
			outputs := testOutputs(t, te, d.ID)
			got := string(MustReadFile(t, filepath.Join(repo, "search.go")))
			switch name {
			case "verified":
				if len(d.Evidence) != 1 {
					t.Errorf("explore evidence %v: the evidence worker's certified location of splitCRLF", d.Evidence)
				}
				// The evidence worker's tokens, as the need pipeline's own
				// accounting recorded them, are what explore charged the
				// lifecycle's budget.
				totals, err := te.WorkerTotals(context.Background())
				l, lerr := te.store.loadLifecycle(context.Background(), te.root, d.ID)
				if err != nil || lerr != nil {
					t.Fatal(err, lerr)
				}
				ev, err := decodeLifecycleEvent(l.Journal[1].Kind, []byte(l.Journal[1].Payload))
				explored, ok := ev.(lifecycle.ExploreCompleted)
				if err != nil || !ok || totals.Runs != 1 || totals.TotalTokens == 0 || explored.Cost.Tokens != totals.TotalTokens {
					t.Errorf("explore charged %+v; the evidence worker ran %d times for %d tokens (%v)", explored.Cost, totals.Runs, totals.TotalTokens, err)
				}
				if d.Round != 1 || d.TestPlans[0].Outcome != lifecycle.TestPassed || len(outputs) != 1 || !strings.Contains(outputs[0], "--- PASS: TestSplitCRLF") {
					t.Errorf("round %d, test %s, outputs %q", d.Round, d.TestPlans[0].Outcome, outputs)
				}
				// The test phase recorded what its run compiled: the root
				// package's files and go.mod, as the snapshot had them, and
				// the package's directory (drift.go).
				v, err := te.readLifecycle(context.Background(), d.ID)
				if err != nil {
					t.Fatal(err)
				}
				deps, err := te.testDependencies(context.Background(), v)
				if err != nil || deps == nil {
					t.Fatalf("test dependencies %+v, %v", deps, err)
				}
				var compiled []string
				for _, f := range deps.Files {
					compiled = append(compiled, f.Path)
				}
				if want := []string{"flags.go", "go.mod", "main.go", "options.go", "search.go", "search_test.go"}; !slices.Equal(compiled, want) ||
					len(deps.Dirs) != 1 || deps.Dirs[0].Dir != "." || deps.Files[4].Digest != digestOf(base) || deps.Head == "" {
					t.Errorf("the test phase recorded %+v, want %v compiled in .", deps, want)
				}
			case "repair":
				// Round 1's patch broke splitCRLF: the real test failed, the
				// verifier found it repairable, the one repair fixed it.
				if d.Round != 2 || d.RepairsUsed != 1 || len(outputs) != 2 || !strings.Contains(outputs[0], "--- FAIL: TestSplitCRLF") ||
					!strings.Contains(outputs[1], "--- PASS: TestSplitCRLF") {
					t.Errorf("round %d, repairs %d, outputs %q", d.Round, d.RepairsUsed, outputs)
				}
			case "inconclusive":
				if got != base || treeDigest(t, repo) != before || d.Reason != lifecycle.ReasonVerificationInconclusive {
					t.Errorf("inconclusive: %s, tree changed: %v", d.Reason, treeDigest(t, repo) != before)
				}
				return
			}
			// Applied: search.go is the base with the new comment and nothing
			// else, and git sees just that file modified (nothing staged).
			if want := strings.Replace(base, "// splitCRLF cuts data at CRLF or LF line ends.\n", splitComment, 1); got != want {
				t.Errorf("applied search.go:\n%s", got)
			}
			if st := MustRun(t, repo, "git", "status", "--porcelain"); st != " M search.go\n" {
				t.Errorf("git status after apply: %q", st)
			}
			// The applied tree passes the test outside any sandbox too.
			cmd := exec.Command("go", "test", "-count=1", "-run", "^TestSplitCRLF$", ".")
			cmd.Dir, cmd.Env = repo, append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("go test on the applied tree: %v\n%s", err, out)
			}
			for _, dir := range []string{"checkouts", "codex-homes"} {
				if hasEntries(filepath.Join(te.data, dir)) {
					t.Errorf("%s left behind", dir)
				}
			}
		})
	}
}
