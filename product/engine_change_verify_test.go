package product

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/testenv"
)

// TestChange_Verified: prepare_change starts a lifecycle whose patch worker
// makes the patch (content-addressed, blob in SQLite, the work tree
// untouched); verify_change runs the certified test Needle found beside
// the scoped file in the codex sandbox, the reviewer and the distinct
// verifier, and stops awaiting approval; asking again returns the recorded
// verdict without a worker.
func TestChange_Verified(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", true)
	before := treeDigest(t, repo)
	te, _ := changeEngine(t, repo, "verified")
	res, err := te.PrepareChange(ctx, "s", MustChangeRequest(t, "verified"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != ChangePrepared || !changeIDPattern.MatchString(res.ChangeID) || res.VerificationStatus != "not_requested" {
		t.Fatalf("prepare_change = %+v", res)
	}
	if len(res.Operations) != 1 || res.Operations[0].Op != "modify" || res.Operations[0].Path != "options.go" {
		t.Fatalf("operations = %+v, want options.go modified", res.Operations)
	}
	if id := mustID("needle.patch.v1", res.Operations); res.PatchID != id {
		t.Errorf("patch_id %s is not the content address of its operations (%s)", res.PatchID, id)
	}
	_, ops := storedPatch(t, te, res.ChangeID, 1)
	base := string(MustReadFile(t, filepath.Join(repo, "options.go")))
	want := strings.Replace(base, "\tCRLF       bool\n", crlfComment, 1)
	if len(ops) != 1 || ops[0].Content != want {
		t.Errorf("stored blob:\n%q\nwant\n%q", ops[0].Content, want)
	}
	if ops[0].Before != digestOf(base) || ops[0].After != digestOf(want) {
		t.Errorf("digests before/after = %s/%s", ops[0].Before, ops[0].After)
	}
	if res.Accounting.WorkerRuns != 1 || res.Accounting.TotalTokens == 0 {
		t.Errorf("accounting = %+v", res.Accounting)
	}
	if got := treeDigest(t, repo); got != before {
		t.Error("prepare_change changed the active work tree")
	}
	for _, c := range res.Acceptance {
		if c.Status != "claimed" {
			t.Errorf("criterion %d coverage %q, want claimed", c.Criterion, c.Status)
		}
	}
	if !slices.ContainsFunc(res.ResidualRisks, func(r string) bool { return strings.HasPrefix(r, "unverified") }) {
		t.Errorf("residual risks %q do not say the coverage is unverified", res.ResidualRisks)
	}

	v, err := te.VerifyChange(ctx, "s", res.ChangeID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Verdict != lifecycle.VerdictVerified || v.Revision != 1 || v.PatchID != res.PatchID || v.Repair.Status != "not_needed" || v.Recorded {
		t.Fatalf("verify_change = %+v", v)
	}
	if v.Accounting.WorkerRuns != 2 || len(v.Criteria) != 2 || v.Criteria[0].Status != "met" {
		t.Errorf("verify_change = %+v; want 2 worker runs (reviewer, verifier)", v)
	}
	if len(v.Tests) != 1 || v.Tests[0].Test != "TestCRLF" || v.Tests[0].Outcome != lifecycle.TestPassed || v.Status != "apply/awaiting_approval" {
		t.Errorf("verify_change tests %+v, lifecycle %s; want TestCRLF passed, awaiting approval", v.Tests, v.Status)
	}
	if !strings.Contains(v.Context, "test TestCRLF: passed") {
		t.Errorf("the verdict's text does not name the test run:\n%s", v.Context)
	}
	// The test really ran: the sandboxed go test's output is the stored
	// evidence of the test phase.
	if n := count(t, te, `SELECT count(*) FROM lifecycle_artifacts WHERE phase = 'test'`); n != 1 {
		t.Errorf("%d test phase artifacts, want 1", n)
	}
	again, err := te.VerifyChange(ctx, "s", res.ChangeID)
	if err != nil || !again.Recorded || again.Verdict != lifecycle.VerdictVerified || again.Accounting.WorkerRuns != 0 {
		t.Errorf("second verify_change = %+v, %v; want the recorded verdict and no worker", again, err)
	}
	if n := count(t, te, `SELECT count(*) FROM verifications WHERE change_id = ?`, res.ChangeID); n != 1 {
		t.Errorf("%d verifications stored, want 1", n)
	}
	if got := treeDigest(t, repo); got != before {
		t.Error("verify_change changed the active work tree")
	}
	for _, dir := range []string{"checkouts", "codex-homes"} {
		if hasEntries(filepath.Join(te.data, dir)) {
			t.Errorf("%s left behind", dir)
		}
	}
}

// TestChange_Repair: a first repairable verdict consumes the one repair;
// the repaired patch (cumulative against the base) is verified.
func TestChange_Repair(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", true)
	before := treeDigest(t, repo)
	te, _ := changeEngine(t, repo, "repair")
	res := mustPrepare(t, te, "repair")
	v, err := te.VerifyChange(ctx, "s", res.ChangeID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Verdict != lifecycle.VerdictVerified || v.Revision != 2 || v.Repair.Status != "applied" || v.Repair.FromPatchID != res.PatchID || v.PatchID == res.PatchID {
		t.Fatalf("verify_change = %+v", v)
	}
	if v.Accounting.WorkerRuns != 5 {
		t.Errorf("worker runs %d, want 5 (review, verify, repair, review, verify)", v.Accounting.WorkerRuns)
	}
	if n := count(t, te, `SELECT count(*) FROM lifecycle_artifacts WHERE phase = 'test'`); n != 2 {
		t.Errorf("%d test phase artifacts, want 2 (the first patch, the repaired one)", n)
	}
	_, ops := storedPatch(t, te, res.ChangeID, 2)
	base := string(MustReadFile(t, filepath.Join(repo, "options.go")))
	if len(ops) != 1 || ops[0].Before != digestOf(base) || ops[0].Content != strings.Replace(base, "\tCRLF       bool\n", crlfComment, 1) {
		t.Errorf("repaired patch is not cumulative against the base: %+v", ops)
	}
	var status string
	var current, repairs int
	if err := te.store.db.QueryRow(`SELECT status, current_revision, repairs_used FROM changes WHERE change_id = ?`, res.ChangeID).Scan(&status, &current, &repairs); err != nil {
		t.Fatal(err)
	}
	if status != string(changeVerified) || current != 2 || repairs != 1 {
		t.Errorf("change row: %s, revision %d, repairs %d", status, current, repairs)
	}
	if got := treeDigest(t, repo); got != before {
		t.Error("the active work tree changed")
	}
}

// TestChange_RepairOnce: a second repairable verdict does not repair
// again, and asking again runs nothing.
func TestChange_RepairOnce(t *testing.T) {
	ctx := context.Background()
	te, _ := changeEngine(t, MustFixtureRepo(t, "grepx", true), "repair_twice")
	res := mustPrepare(t, te, "repair_twice")
	v, err := te.VerifyChange(ctx, "s", res.ChangeID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Verdict != lifecycle.VerdictRepairable || v.Revision != 2 || v.Repair.Status != "exhausted" || v.RepairAvailable || v.Accounting.WorkerRuns != 5 {
		t.Fatalf("verify_change = %+v", v)
	}
	again, err := te.VerifyChange(ctx, "s", res.ChangeID)
	if err != nil || !again.Recorded || again.Verdict != lifecycle.VerdictRepairable || again.Repair.Status != "exhausted" || again.Accounting.WorkerRuns != 0 {
		t.Errorf("second verify_change = %+v, %v", again, err)
	}
	if n := count(t, te, `SELECT count(*) FROM patches WHERE change_id = ?`, res.ChangeID); n != 2 {
		t.Errorf("%d patch revisions, want 2", n)
	}
	if n := count(t, te, `SELECT count(*) FROM verifications WHERE change_id = ?`, res.ChangeID); n != 2 {
		t.Errorf("%d verifications, want 2", n)
	}
	// The stored rows are immutable.
	if _, err := te.store.db.Exec(`UPDATE patches SET operations = '[]' WHERE change_id = ?`, res.ChangeID); err == nil {
		t.Error("a stored patch was rewritten")
	}
	for _, stmt := range []string{
		`UPDATE changes SET request = '{}' WHERE change_id = ?`,
		`UPDATE changes SET repairs_used = 0 WHERE change_id = ?`,
		`UPDATE changes SET current_revision = 1 WHERE change_id = ?`,
		`DELETE FROM verifications WHERE change_id = ?`,
		`DELETE FROM patches WHERE change_id = ?`,
		`DELETE FROM changes WHERE change_id = ?`,
	} {
		if _, err := te.store.db.Exec(stmt, res.ChangeID); err == nil {
			t.Errorf("%s succeeded on a stored change", stmt)
		}
	}
}

// TestChange_BaseDrift: a change whose source moved in the work tree is
// not verified (a conflict), and nothing is stored.
func TestChange_BaseDrift(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", true)
	te, _ := changeEngine(t, repo, "verified")
	res := mustPrepare(t, te, "verified")
	MustWriteFile(t, filepath.Join(repo, "options.go"), "package main\n")
	if _, err := te.VerifyChange(ctx, "s", res.ChangeID); KindOf(err) != kindConflict {
		t.Errorf("verify_change after drift = %v, want a conflict", err)
	}
	if n := count(t, te, `SELECT count(*) FROM verifications`); n != 0 {
		t.Errorf("%d verifications stored", n)
	}
}

// TestChange_RepairNoop: a repair that leaves the patch as it was is
// rejected ("the repair changed nothing"): no second verification of the
// same patch, the first verdict stands, the repair is consumed.
func TestChange_RepairNoop(t *testing.T) {
	ctx := context.Background()
	te, _ := changeEngine(t, MustFixtureRepo(t, "grepx", true), "repair_noop")
	res := mustPrepare(t, te, "repair_noop")
	v, err := te.VerifyChange(ctx, "s", res.ChangeID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Verdict != lifecycle.VerdictRepairable || v.Revision != 1 || v.Repair.Status != "rejected" ||
		!slices.Equal(v.Repair.Reasons, []string{"the repair changed nothing"}) || v.Accounting.WorkerRuns != 3 {
		t.Fatalf("verify_change = %+v", v)
	}
	again, err := te.VerifyChange(ctx, "s", res.ChangeID)
	if err != nil || !again.Recorded || again.Repair.Status != "rejected" || again.Repair.FromPatchID != res.PatchID || again.Accounting.WorkerRuns != 0 {
		t.Errorf("second verify_change = %+v, %v", again, err)
	}
	if n := count(t, te, `SELECT count(*) FROM verifications`); n != 1 {
		t.Errorf("%d verifications, want 1", n)
	}
}

// TestChange_CancelRepair cancels verify_change while the repair runs:
// the first verdict and the consumed repair are already committed, the
// repair produced nothing and is committed nowhere. Asking again resumes
// the lifecycle: the repair runs (once: there is no second one) and its
// patch is verified.
func TestChange_CancelRepair(t *testing.T) {
	held := t.TempDir()
	src := filepath.Join("..", "frozen", "changes", "repair")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		data := string(MustReadFile(t, filepath.Join(src, e.Name())))
		// The repair is the implement session told the verifier's finding.
		if strings.Contains(data, `"scenario":"lifecycle-implement `) && strings.Contains(data, "does not mention NUL") {
			data, found = heldSession(t, data), true
		}
		MustWriteFile(t, filepath.Join(held, e.Name()), data)
	}
	if !found {
		t.Fatal("no repair session in frozen/changes/repair")
	}
	repo := MustFixtureRepo(t, "grepx", true)
	te, _ := changeEngine(t, repo, "repair", replayTranscripts(t, held))
	res := mustPrepare(t, te, "repair")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := te.VerifyChange(ctx, "s", res.ChangeID)
		done <- err
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for count(t, te, `SELECT count(*) FROM verifications`) == 0 || !hasEntries(filepath.Join(te.data, "checkouts")) {
		if time.Now().After(deadline) {
			t.Fatal("the repair never started")
		}
		runtimeYield()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("VerifyChange after cancel = %v", err)
	}
	var status string
	var repairs int
	if err := te.store.db.QueryRow(`SELECT status, repairs_used FROM changes`).Scan(&status, &repairs); err != nil || status != string(changeRepairable) || repairs != 1 {
		t.Errorf("change after a cancelled repair: %s, repairs %d (%v)", status, repairs, err)
	}
	if hasEntries(filepath.Join(te.data, "checkouts")) {
		t.Error("checkouts left behind")
	}
	te.reopen(replayCodex(t, "repair"), func(c *Config) {
		c.Tests = TestsConfig{Codex: MustSandbox(t), CacheDir: testenv.Cache(t, "testrun-lifecycle"), Deadline: 10 * time.Minute}
	})
	again, err := te.VerifyChange(context.Background(), "s", res.ChangeID)
	if err != nil || again.Recorded || again.Verdict != lifecycle.VerdictVerified || again.Revision != 2 || again.Repair.Status != "applied" {
		t.Fatalf("verify_change after the cancelled repair = %+v, %v", again, err)
	}
	if n := count(t, te, `SELECT count(*) FROM patches WHERE change_id = ?`, res.ChangeID); n != 2 {
		t.Errorf("%d patch revisions, want 2: the cancelled repair is not a second one", n)
	}
}
