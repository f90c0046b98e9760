package product

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/web"
)

// awaitingApply is a lifecycle of the fake adapters (whose test phase
// records what `go test .` compiles in grepx: the root package) approved
// and ready to apply.
func awaitingApply(t *testing.T, data string) (*lifecycleFixture, LifecycleDetail) {
	t.Helper()
	f := newLifecycleFixtureIn(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}}, data)
	d := f.run(f.start().ID)
	f.approve(d)
	return f, d
}

// Drift is what the proof depended on: a file the tests compiled that the
// patch does not touch, the module's go.mod, or a new file in a tested
// package refuses the apply with the 409 naming it, and nothing is
// written (before, only the patch's own files were checked).
func TestApply_ProofDriftIs409(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		edit func(repo string)
		path string
	}{
		{"CompiledFile", func(repo string) {
			MustWriteFile(t, filepath.Join(repo, "options.go"), string(MustReadFile(t, filepath.Join(repo, "options.go")))+"\nconst extra = 1\n")
		}, "options.go"},
		{"GoMod", func(repo string) {
			MustWriteFile(t, filepath.Join(repo, "go.mod"), string(MustReadFile(t, filepath.Join(repo, "go.mod")))+"\n// edited\n")
		}, "go.mod"},
		{"NewFileInTestedPackage", func(repo string) {
			MustWriteFile(t, filepath.Join(repo, "zz_init.go"), "package main\n\nfunc init() { splitSep = nil }\n")
		}, "zz_init.go"},
		{"DeletedCompiledFile", func(repo string) { MustRun(t, repo, "rm", "flags.go") }, "flags.go"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, d := awaitingApply(t, t.TempDir())
			c.edit(f.te.repo)
			before := treeDigest(t, f.te.repo)
			_, err := f.te.Apply(ctx, d.ID)
			if KindOf(err) != kindConflict || changeExitCode(err) != 3 || !strings.Contains(err.Error(), "409 conflict: "+c.path) {
				t.Fatalf("Apply after drift of %s = %v (exit %d), want the 409 naming it", c.path, err, changeExitCode(err))
			}
			if treeDigest(t, f.te.repo) != before {
				t.Fatal("a refused apply wrote to the work tree")
			}
			f.checkGitUntouched()
			ev := mustEvents(t, f.te, d.ID)
			if last := ev[len(ev)-1]; last.Kind != lifecycle.EventApplyConflicted || !strings.Contains(last.Summary, c.path) {
				t.Errorf("last event %s %q, want apply_conflicted naming %s", last.Kind, last.Summary, c.path)
			}
		})
	}
}

// HEAD moving with the same content, and a file outside every tested
// package, are reported and allowed; through the API, a new file in the
// tested package is the 409 work_tree_drift naming it.
func TestApply_OtherChangesAreAllowed(t *testing.T) {
	ctx := context.Background()
	f, d := awaitingApply(t, shortDir(t))
	repo := f.te.repo
	api := &apiFixture{repo: repo, data: f.te.data, rt: mustRuntime(t, f.te.data)}
	api.token = strings.TrimSpace(string(MustReadFile(t, filepath.Join(api.data, tokenFileName))))
	a, err := f.te.Lifecycle(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	MustWriteFile(t, filepath.Join(repo, "extra_test.go"), "package main\n")
	status, body := api.post(t, "/api/v1/lifecycles/"+d.ID+"/apply", web.ApplyRequest{ApprovalID: a.ApprovalID}, nil)
	var e web.Error
	if status != http.StatusConflict || json.Unmarshal(body, &e) != nil || e.Error.Conflict == nil ||
		e.Error.Conflict.Reason != "work_tree_drift" || !slices.Equal(e.Error.Conflict.Paths, []string{"extra_test.go"}) {
		t.Fatalf("POST apply with a new file in the tested package: %d %s", status, body)
	}
	MustRun(t, repo, "rm", "extra_test.go")

	MustRun(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "moved")
	MustWriteFile(t, filepath.Join(repo, "docs", "notes.md"), "Unrelated notes.\n")
	status, body = api.post(t, "/api/v1/lifecycles/"+d.ID+"/apply", web.ApplyRequest{ApprovalID: a.ApprovalID}, nil)
	var res web.ApplyResult
	if status != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res.Notes) != 2 ||
		!strings.Contains(res.Notes[0], "HEAD moved") || !strings.Contains(res.Notes[1], "did not depend on") {
		t.Fatalf("POST apply after HEAD moved and an unrelated file: %d %s", status, body)
	}
	if !strings.Contains(string(MustReadFile(t, filepath.Join(repo, "search.go"))), "CRLF (\\r\\n)") {
		t.Error("the allowed apply did not write the patch")
	}
}

// Test evidence recorded before Needle recorded what the runs compiled
// names no dependencies: then any change of the snapshot is drift.
func TestApply_UnknownDependenciesNeedTheSnapshot(t *testing.T) {
	ctx := context.Background()
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}, NoDependencies: true})
	d := f.run(f.start().ID)
	f.approve(d)
	notes := filepath.Join(f.te.repo, "docs", "notes.md")
	MustWriteFile(t, notes, "Unrelated notes.\n")
	if _, err := f.te.Apply(ctx, d.ID); KindOf(err) != kindConflict || !strings.Contains(err.Error(), "before Needle recorded what they compiled") {
		t.Fatalf("Apply with unknown dependencies after a change: %v, want the 409", err)
	}
	MustRun(t, f.te.repo, "rm", "-r", "docs")
	if res, err := f.te.Apply(ctx, d.ID); err != nil || len(res.Notes) != 0 {
		t.Fatalf("Apply on the snapshot: %+v, %v", res, err)
	}
}
