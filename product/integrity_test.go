package product

import (
	"context"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
)

// tamper runs stmt on the store with the immutability trigger of table
// dropped first, as someone editing the database file would.
func tamper(t *testing.T, te *testEngine, trigger, stmt string, args ...any) {
	t.Helper()
	if _, err := te.store.db.Exec(`DROP TRIGGER ` + trigger); err != nil {
		t.Fatal(err)
	}
	res, err := te.store.db.Exec(stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tampered %d rows, want 1", n)
	}
	te.store.cache = newStoreCache()
}

func wantIntegrity(t *testing.T, what string, err error, names string) {
	t.Helper()
	if KindOf(err) != kindIntegrity || exitCodeOf(err) != 5 || !strings.Contains(err.Error(), names) {
		t.Errorf("%s = %v (kind %s), want the integrity error naming %s", what, err, KindOf(err), names)
	}
}

// A patch blob changed in the store after the approval is never written:
// apply, diff and the detail refuse with the integrity error naming the
// patch, and nothing is written or journaled.
func TestApply_TamperedBlobIsRefused(t *testing.T) {
	ctx := context.Background()
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.run(f.start().ID)
	f.approve(d)
	tamper(t, f.te, "lifecycle_artifacts_immutable", `UPDATE lifecycle_artifacts SET blobs = json_set(blobs, '$.patch[0].content', ?)
		WHERE lifecycle_id = ? AND artifact_id = ?`, "package grepx // not what was approved\n", d.ID, d.Patch.PatchID)
	before := treeDigest(t, f.te.repo)
	events := len(mustEvents(t, f.te, d.ID))
	_, err := f.te.Apply(ctx, d.ID)
	wantIntegrity(t, "Apply", err, d.Patch.PatchID)
	if changeExitCode(err) != 5 {
		t.Errorf("needle change apply exits %d, want 5", changeExitCode(err))
	}
	if treeDigest(t, f.te.repo) != before {
		t.Fatal("a tampered blob was written to the work tree")
	}
	f.checkGitUntouched()
	if n := len(mustEvents(t, f.te, d.ID)); n != events {
		t.Errorf("the refused apply journaled %d events", n-events)
	}
	_, err = f.te.ChangeDiff(ctx, d.ID)
	wantIntegrity(t, "ChangeDiff", err, d.Patch.PatchID)
	_, err = f.te.Lifecycle(ctx, d.ID)
	wantIntegrity(t, "Lifecycle", err, d.Patch.PatchID)
}

// The verdict a detail serves is the one the verification bound.
func TestLifecycle_TamperedVerdictIsRefused(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.run(f.start().ID)
	tamper(t, f.te, "lifecycle_artifacts_immutable", `UPDATE lifecycle_artifacts SET blobs = json_set(blobs, '$.verdict.criteria[0].reason', 'forged')
		WHERE lifecycle_id = ? AND artifact_id = ?`, d.ID, d.Verification.VerificationID)
	_, err := f.te.Lifecycle(context.Background(), d.ID)
	wantIntegrity(t, "Lifecycle", err, d.Verification.VerificationID)
}

// An MCP change's patch row (the change journal's copy of its lifecycle's
// patch) is checked when verify_change reads it back.
func TestChange_TamperedPatchRowIsRefused(t *testing.T) {
	te, _, res := mustApprovedMCPChange(t)
	tamper(t, te, "patches_immutable", `UPDATE patches SET operations = json_set(operations, '$[0].content', 'package grepx\n')
		WHERE change_id = ? AND status = 'accepted'`, res.ChangeID)
	_, err := te.VerifyChange(context.Background(), "s", res.ChangeID)
	wantIntegrity(t, "VerifyChange", err, res.PatchID)
}

// What the test runs compiled is bound to the test evidence: changed in
// the store, apply refuses with the integrity error.
func TestApply_TamperedDependenciesAreRefused(t *testing.T) {
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified}})
	d := f.run(f.start().ID)
	f.approve(d)
	v, err := f.te.readLifecycle(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	tamper(t, f.te, "lifecycle_artifacts_immutable", `UPDATE lifecycle_artifacts SET blobs = json_remove(blobs, '$.dependencies.dirs[0]')
		WHERE lifecycle_id = ? AND artifact_id = ?`, d.ID, v.State.Tests.Evidence)
	before := treeDigest(t, f.te.repo)
	_, err = f.te.Apply(context.Background(), d.ID)
	wantIntegrity(t, "Apply", err, v.State.Tests.Evidence)
	if treeDigest(t, f.te.repo) != before {
		t.Fatal("the apply wrote")
	}
}
