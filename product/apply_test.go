package product

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
)

// mustApprovedMCPChange makes a change with prepare_change and
// verify_change, as over MCP, in a grepx fixture and approves its patch
// the way every lifecycle's is approved: ready to apply.
func mustApprovedMCPChange(t *testing.T) (*testEngine, string, changeResult) {
	t.Helper()
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", true)
	te, _ := changeEngine(t, repo, "verified")
	res, err := te.PrepareChange(ctx, "s", MustChangeRequest(t, "verified"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := te.VerifyChange(ctx, "s", res.ChangeID); err != nil {
		t.Fatal(err)
	}
	b := awaitingApproval(t, te, res.ChangeID)
	if _, err := te.Approve(ctx, res.ChangeID, ApprovalRequest{Patch: b.Patch, Verification: b.Verification, Lifecycle: b.Lifecycle}); err != nil {
		t.Fatal(err)
	}
	return te, repo, res
}

// awaitingApproval is the binding the change's lifecycle awaits approval
// for, as needle change show prints it.
func awaitingApproval(t *testing.T, te *testEngine, changeID string) lifecycle.ApprovalBinding {
	t.Helper()
	d, err := te.Lifecycle(context.Background(), changeID)
	if err != nil {
		t.Fatal(err)
	}
	if d.AwaitingApproval == nil {
		t.Fatalf("change %s is %s/%s, not awaiting approval", changeID, d.Phase, d.Status)
	}
	return *d.AwaitingApproval
}

// A change verify_change verified is exported as a diff git apply accepts
// and applied through its lifecycle's approval, like every change.
func TestApply_MCPVerifiedChange(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", true)
	te, _ := changeEngine(t, repo, "verified")
	res, err := te.PrepareChange(ctx, "s", MustChangeRequest(t, "verified"))
	if err != nil {
		t.Fatal(err)
	}
	// Before verification: no approval.
	if _, err := te.Approve(ctx, res.ChangeID, ApprovalRequest{Patch: res.PatchID, Verification: res.PatchID, Lifecycle: res.PatchID}); KindOf(err) != kindConflict {
		t.Errorf("approval of an unverified change: %v", err)
	}
	if _, err := te.VerifyChange(ctx, "s", res.ChangeID); err != nil {
		t.Fatal(err)
	}
	diff, err := te.ChangeDiff(ctx, res.ChangeID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(diff, "diff --git a/options.go b/options.go\n--- a/options.go\n+++ b/options.go\n@@ ") {
		t.Errorf("diff:\n%s", diff)
	}
	// git itself is the judge of the diff: it applies to the base.
	cmd := exec.Command("git", "apply", "--check", "-")
	cmd.Dir, cmd.Stdin = repo, strings.NewReader(diff)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply --check: %v\n%s", err, out)
	}
	before := treeDigest(t, repo)
	if _, err := te.Apply(ctx, res.ChangeID); KindOf(err) != kindConflict || !strings.Contains(err.Error(), "only an approved patch is applied") {
		t.Errorf("apply without approval: %v", err)
	}
	b := awaitingApproval(t, te, res.ChangeID)
	if _, err := te.Approve(ctx, res.ChangeID, ApprovalRequest{Patch: b.Patch, Verification: b.Verification, Lifecycle: "b3:" + strings.Repeat("0", 64)}); KindOf(err) != kindConflict {
		t.Errorf("approval bound to an older change digest: %v", err)
	}
	if treeDigest(t, repo) != before {
		t.Fatal("a refused approval or apply changed the tree")
	}
	if _, err := te.Approve(ctx, res.ChangeID, ApprovalRequest{Patch: b.Patch, Verification: b.Verification, Lifecycle: b.Lifecycle}); err != nil {
		t.Fatal(err)
	}
	applied, err := te.Apply(ctx, res.ChangeID)
	if err != nil {
		t.Fatal(err)
	}
	if applied.Status != "applied" || applied.PatchID != res.PatchID {
		t.Errorf("apply: %+v", applied)
	}
	// The result is what git apply makes of the diff on the base.
	want := MustFixtureRepo(t, "grepx", true)
	cmd = exec.Command("git", "apply", "-")
	cmd.Dir, cmd.Stdin = want, strings.NewReader(diff)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	if got, w := MustReadFile(t, filepath.Join(repo, "options.go")), MustReadFile(t, filepath.Join(want, "options.go")); string(got) != string(w) {
		t.Errorf("applied options.go differs from git apply's")
	}
	rows, err := te.store.applies(ctx, te.root, res.ChangeID, false)
	if err != nil || len(rows) != 1 || rows[0].Status != "done" || len(rows[0].Written) != 1 {
		t.Errorf("apply journal %+v, %v", rows, err)
	}
}

// A diff of added, deleted and modified files round-trips through git
// apply, including a file without a final newline.
func TestUnifiedDiff_GitApplies(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	MustWriteFile(t, filepath.Join(repo, "note.txt"), "no newline at the end")
	MustRun(t, repo, "git", "add", "-A")
	MustRun(t, repo, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "note")
	base := func(p string) string { return digestOf(string(MustReadFile(t, filepath.Join(repo, p)))) }
	files := []patchFile{
		{PatchOperation: PatchOperation{Op: patchModify, Path: "note.txt", Before: base("note.txt"), After: digestOf("no newline\nanywhere"), Bytes: 19}, Content: "no newline\nanywhere"},
		{PatchOperation: PatchOperation{Op: patchDelete, Path: "options.go", Before: base("options.go")}},
		{PatchOperation: PatchOperation{Op: patchAdd, Path: "sub/new.go", After: digestOf("package sub\n"), Bytes: 12, Executable: true}, Content: "package sub\n"},
	}
	diff, err := unifiedDiff(repo, files)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "apply", "-")
	cmd.Dir, cmd.Stdin = repo, strings.NewReader(diff)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\n%s", err, out, diff)
	}
	if got := string(MustReadFile(t, filepath.Join(repo, "note.txt"))); got != "no newline\nanywhere" {
		t.Errorf("note.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "options.go")); !os.IsNotExist(err) {
		t.Error("options.go not deleted")
	}
	if fi, err := os.Stat(filepath.Join(repo, "sub", "new.go")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("sub/new.go: %v", err)
	}
	// A base that is neither in the tree nor at HEAD gives no diff.
	files[0].Before = digestOf("something else")
	if _, err := unifiedDiff(repo, files); KindOf(err) != kindConflict {
		t.Errorf("diff against an unknown base: %v", err)
	}
}
