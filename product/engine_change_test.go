package product

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/lifecycle"
	"github.com/needle-dev/needle/product/testenv"
)

// replayCodex makes the engine's App Server the replay server serving the
// frozen change scenario (frozen/changes/NAME, recorded by make
// frozen-changes from fixtures/changes/NAME.json).
func replayCodex(t *testing.T, scenario string) func(*Config) {
	dir, err := filepath.Abs(filepath.Join("..", "frozen", "changes", scenario))
	if err != nil {
		t.Fatal(err)
	}
	return replayTranscripts(t, dir)
}

// changeScenario is a fixtures/changes/NAME.json scenario: the
// prepare_change request, the focused_tests proposals certified first, and
// the fake model's script that recorded it.
type changeScenario struct {
	Request   json.RawMessage   `json:"request"`
	TestPlans []json.RawMessage `json:"test_plans"`
	Script    json.RawMessage   `json:"script"`
	Verify    bool              `json:"verify"`
}

// changeEngine opens an engine on repo whose App Server replays the frozen
// change scenario, whose test phase runs the certified tests in the real
// codex sandbox, and which holds the scenario's certified focused_tests
// evidence (prepare_change finds it beside the scoped file). It returns
// the certified artifact ids too.
func changeEngine(t *testing.T, repo, scenario string, mutate ...func(*Config)) (*testEngine, []string) {
	t.Helper()
	mutate = append([]func(*Config){replayCodex(t, scenario), func(c *Config) {
		// A loaded machine may take minutes to build the test: the default
		// deadline (2m) is for a user's machine, not for a shared CI one.
		c.Tests = TestsConfig{Codex: MustSandbox(t), CacheDir: testenv.Cache(t, "testrun-lifecycle"), Deadline: 10 * time.Minute}
	}}, mutate...)
	te := MustEngine(t, repo, mutate...)
	var ids []string
	for _, raw := range mustChangeScenario(t, scenario).TestPlans {
		p, err := te.Propose(context.Background(), raw)
		if err != nil || p.Status != "certified" {
			t.Fatalf("the scenario's test plan: %+v, %v", p, err)
		}
		ids = append(ids, p.ArtifactID)
	}
	return te, ids
}

func mustChangeScenario(t *testing.T, name string) changeScenario {
	t.Helper()
	var sc changeScenario
	if err := json.Unmarshal(MustReadFile(t, "../fixtures/changes/"+name+".json"), &sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

// MustChangeRequest reads and decodes the prepare_change request of a
// change scenario.
func MustChangeRequest(t *testing.T, scenario string) changeRequest {
	t.Helper()
	req, err := DecodeChangeRequest(mustChangeScenario(t, scenario).Request)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// mustPrepare runs prepare_change for the scenario's request on te and
// fails the test unless the patch was made.
func mustPrepare(t *testing.T, te *testEngine, scenario string) changeResult {
	t.Helper()
	res, err := te.PrepareChange(context.Background(), "s", MustChangeRequest(t, scenario))
	if err != nil || res.Status != ChangePrepared {
		t.Fatalf("prepare_change = %+v, %v", res, err)
	}
	return res
}

// heldSession is a frozen worker session cut right after its turn started:
// replayed, the turn never ends by itself, so a test can cancel it.
func heldSession(t *testing.T, transcript string) string {
	t.Helper()
	i := strings.Index(transcript, `"method":"turn/started"`)
	if i < 0 {
		t.Fatal("no turn/started in the transcript")
	}
	return transcript[:i] + transcript[i:][:strings.IndexByte(transcript[i:], '\n')+1]
}

// treeDigest hashes every file of the work tree at root (path, mode,
// content) and git's view of it (HEAD and status): the active work tree
// must stay byte-identical. Inside .git only the lock file the checkout
// package keeps for worktree commands may appear.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data := []byte{}
		if info.Mode().IsRegular() {
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		rel, _ := filepath.Rel(root, p)
		h.Write([]byte(rel + "\x00" + info.Mode().String() + "\x00"))
		h.Write(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Write([]byte(MustRun(t, root, "git", "rev-parse", "HEAD") + MustRun(t, root, "git", "status", "--porcelain", "--ignored")))
	return hex.EncodeToString(h.Sum(nil))
}

const crlfComment = "\tCRLF       bool // false whenever Terminator is NUL\n"

// storedPatch returns the operations (with blobs) of a stored patch.
func storedPatch(t *testing.T, te *testEngine, changeID string, revision int) (status string, ops []storedOperation) {
	t.Helper()
	var raw string
	err := te.store.db.QueryRow(`SELECT status, operations FROM patches WHERE change_id = ? AND revision = ?`, changeID, revision).Scan(&status, &raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(raw), &ops); err != nil {
		t.Fatal(err)
	}
	return status, ops
}

func count(t *testing.T, te *testEngine, query string, args ...any) int {
	t.Helper()
	var n int
	if err := te.store.db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func digestOf(s string) string { return contentid.OfBytes(snapshot.FileTag, []byte(s)) }

// TestChange_Undeclared: a patch worker that writes a path the request did
// not declare gets the whole patch rejected; nothing is kept as a patch and
// the active work tree is byte-identical.
func TestChange_Undeclared(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", true)
	before := treeDigest(t, repo)
	te, _ := changeEngine(t, repo, "undeclared")
	res, err := te.PrepareChange(ctx, "s", MustChangeRequest(t, "undeclared"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != changeRejected || res.PatchID != "" || len(res.Reasons) != 1 || !strings.Contains(res.Reasons[0], "NOTES.md: outside the declared scopes") {
		t.Fatalf("prepare_change = %+v, want rejected for NOTES.md", res)
	}
	if got := treeDigest(t, repo); got != before {
		t.Error("the active work tree changed")
	}
	status, ops := storedPatch(t, te, res.ChangeID, 1)
	if status != "rejected" || len(ops) != 0 {
		t.Errorf("stored attempt %s with %d operations", status, len(ops))
	}
	if _, err := te.VerifyChange(ctx, "s", res.ChangeID); KindOf(err) != kindConflict {
		t.Errorf("verify_change of a rejected change = %v, want a conflict", err)
	}
	if n := count(t, te, `SELECT count(*) FROM verifications`); n != 0 {
		t.Errorf("%d verifications stored", n)
	}
}

// TestChange_Errors: unknown and malformed ids, refs that are not certified
// evidence, and an engine without an App Server are typed errors that
// store nothing.
func TestChange_Errors(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", false)
	te := MustEngine(t, repo)
	req := MustChangeRequest(t, "verified")
	if _, err := te.PrepareChange(ctx, "s", req); KindOf(err) != kindUnavailable {
		t.Errorf("PrepareChange without a worker = %v, want unavailable", err)
	}
	te2, _ := changeEngine(t, repo, "verified")
	req.ArtifactIDs = []string{"b3:" + strings.Repeat("0", 64)}
	if _, err := te2.PrepareChange(ctx, "s", req); KindOf(err) != KindInvalidInput || !strings.Contains(err.Error(), "artifact_ids[0]") {
		t.Errorf("PrepareChange with an unknown artifact = %v, want invalid input", err)
	}
	if _, err := te2.VerifyChange(ctx, "s", "chg_"+strings.Repeat("0", 24)); KindOf(err) != kindNotFound {
		t.Errorf("VerifyChange(unknown) = %v, want not found", err)
	}
	if _, err := te2.VerifyChange(ctx, "s", "chg_xyz"); KindOf(err) != KindInvalidInput {
		t.Errorf("VerifyChange(malformed) = %v, want invalid input", err)
	}
	if n := count(t, te2, `SELECT count(*) FROM changes`) + count(t, te2, `SELECT count(*) FROM change_lifecycles`); n != 0 {
		t.Errorf("%d changes or lifecycles stored by failed calls", n)
	}
}

// TestChange_TestPlans: the lifecycle of an MCP change runs the
// focused_tests artifacts the request cites; citing none, it runs the
// certified tests Needle finds beside the scoped file; finding none is
// invalid input that stores nothing.
func TestChange_TestPlans(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", false)
	te, ids := changeEngine(t, repo, "verified")
	plansOf := func(req changeRequest) []string {
		t.Helper()
		plans, err := te.changeTestPlans(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return plans
	}
	req := MustChangeRequest(t, "verified")
	if got := plansOf(req); !slices.Equal(got, ids) {
		t.Errorf("found plans %v, want the certified focused_tests %v", got, ids)
	}
	// Another certified focused_tests artifact, cited: only it runs.
	other, err := te.Propose(ctx, []byte(`{"kind":"focused_tests","subject":{"kind":"symbol","name":"splitCRLF"},"tests":[{"path":"search_test.go","name":"TestSplitCRLF","command":"go test . -run '^TestSplitCRLF$'"}]}`))
	if err != nil || other.Status != "certified" {
		t.Fatalf("propose: %+v, %v", other, err)
	}
	cited := req
	cited.ArtifactIDs = []string{other.ArtifactID}
	if got := plansOf(cited); !slices.Equal(got, []string{other.ArtifactID}) {
		t.Errorf("cited plans %v, want %s", got, other.ArtifactID)
	}
	// A scope in a directory no certified test covers.
	far := req
	far.Scopes = []pathScope{{Path: "cmd/other/main.go", Kind: scopeExact}}
	if _, err := te.changeTestPlans(ctx, far); KindOf(err) != KindInvalidInput || !strings.Contains(err.Error(), "no certified test to run") {
		t.Errorf("no test beside the scope = %v, want invalid input", err)
	}
	if _, err := te.PrepareChange(ctx, "s", far); KindOf(err) != KindInvalidInput {
		t.Errorf("PrepareChange without a test = %v, want invalid input", err)
	}
	if n := count(t, te, `SELECT count(*) FROM change_lifecycles`); n != 0 {
		t.Errorf("%d lifecycles stored by a refused prepare_change", n)
	}
}

// TestPatchBuild: the patch builder rejects, fail closed, everything a
// patch worker may not leave behind, and accepts a plain in-scope edit.
func TestPatchBuild(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", true)
	snap, err := snapshot.Open(context.Background(), repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := changeRequest{Task: "t", Criteria: []string{"c"}, Scopes: []pathScope{{Path: "options.go", Kind: scopeExact},
		{Path: "internal", Kind: scopeSubtree}, {Path: "cafe\u0301.txt", Kind: scopeExact}}} // NFD: decoded as NFC
	if err := checkChangeRequest(&req); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	for _, tc := range []struct {
		name   string
		act    func(dir string) error
		reason string // "" = accepted
	}{
		{"inScope", func(d string) error {
			return os.WriteFile(filepath.Join(d, "options.go"), []byte("package main\n"), 0o644)
		}, ""},
		{"subtree", func(d string) error {
			return errors.Join(os.MkdirAll(filepath.Join(d, "internal", "x"), 0o755), os.WriteFile(filepath.Join(d, "internal", "x", "a.go"), []byte("package x\n"), 0o644))
		}, ""},
		{"outOfScope", func(d string) error {
			return os.WriteFile(filepath.Join(d, "main.go"), []byte("package main\n"), 0o644)
		}, "main.go: outside the declared scopes"},
		{"symlinkOut", func(d string) error { return os.Symlink(outside, filepath.Join(d, "internal", "link")) }, "internal/link: a symlink"},
		{"symlinkOverFile", func(d string) error {
			return errors.Join(os.Remove(filepath.Join(d, "options.go")), os.Symlink("/etc/passwd", filepath.Join(d, "options.go")))
		}, "options.go: a symlink"},
		{"gitChange", func(d string) error {
			return os.WriteFile(filepath.Join(d, ".git"), []byte("gitdir: /tmp/elsewhere\n"), 0o644)
		}, ".git: git metadata"},
		{"nestedGit", func(d string) error {
			return errors.Join(os.MkdirAll(filepath.Join(d, "internal", ".git"), 0o755), os.WriteFile(filepath.Join(d, "internal", ".git", "config"), []byte("x"), 0o644))
		}, "internal/.git/config: git metadata"},
		{"binary", func(d string) error {
			return os.WriteFile(filepath.Join(d, "options.go"), []byte{0xff, 0xfe, 0}, 0o644)
		}, "options.go: binary content"},
		{"upperGit", func(d string) error {
			return errors.Join(os.MkdirAll(filepath.Join(d, "internal", ".GIT"), 0o755), os.WriteFile(filepath.Join(d, "internal", ".GIT", "config"), []byte("x"), 0o644))
		}, "internal/.GIT/config: git metadata"},
		{"shortGit", func(d string) error {
			return errors.Join(os.MkdirAll(filepath.Join(d, "internal", "GIT~1"), 0o755), os.WriteFile(filepath.Join(d, "internal", "GIT~1", "config"), []byte("x"), 0o644))
		}, "internal/GIT~1/config: git metadata"},
		{"backslash", func(d string) error {
			return os.WriteFile(filepath.Join(d, "internal", `a\b.go`), []byte("package x\n"), 0o644)
		}, "contains a backslash"},
		{"newlineName", func(d string) error {
			return os.WriteFile(filepath.Join(d, "internal", "a\nb.go"), []byte("package x\n"), 0o644)
		}, "contains the control character U+000A"},
		{"notUTF8Name", func(d string) error {
			return os.WriteFile(filepath.Join(d, "internal", "a\xffb.go"), []byte("package x\n"), 0o644)
		}, "is not valid UTF-8"},
		// Issue 12 item 21: the repository-path rule, and scopes compared in
		// NFC however the worker's file system spells the name.
		{"nfdFileInNFCScope", func(d string) error {
			return os.WriteFile(filepath.Join(d, "cafe\u0301.txt"), []byte("au lait\n"), 0o644)
		}, ""},
		{"nfcFileInNFCScope", func(d string) error {
			return os.WriteFile(filepath.Join(d, "caf\u00e9.txt"), []byte("au lait\n"), 0o644)
		}, ""},
		{"hfsZeroWidthGit", func(d string) error {
			return errors.Join(os.MkdirAll(filepath.Join(d, "internal", ".g\u200cit"), 0o755), os.WriteFile(filepath.Join(d, "internal", ".g\u200cit", "config"), []byte("x"), 0o644))
		}, "format (bidi or zero-width) character U+200C"},
		{"ntfsStreamGit", func(d string) error {
			dir := filepath.Join(d, "internal", ".git::$INDEX_ALLOCATION")
			return errors.Join(os.MkdirAll(dir, 0o755), os.WriteFile(filepath.Join(dir, "config"), []byte("x"), 0o644))
		}, "git metadata"},
		{"shortGit2", func(d string) error {
			return errors.Join(os.MkdirAll(filepath.Join(d, "internal", "GIT~2"), 0o755), os.WriteFile(filepath.Join(d, "internal", "GIT~2", "config"), []byte("x"), 0o644))
		}, "internal/GIT~2/config: git metadata"},
		{"bidiName", func(d string) error {
			return os.WriteFile(filepath.Join(d, "internal", "a\u202eog.txt"), []byte("x\n"), 0o644)
		}, "format (bidi or zero-width) character U+202E"},
		{"nothing", func(string) error { return nil }, "the patch worker changed nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			co, err := checkout.Create(context.Background(), snap, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer co.Remove(context.Background())
			if err := os.MkdirAll(filepath.Join(co.Dir, "internal"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.act(co.Dir); err != nil {
				t.Fatal(err)
			}
			var a patchAttempt
			if err := a.build(context.Background(), co, req, nil); err != nil {
				t.Fatal(err)
			}
			a.finish(sessionOutput{Finals: []string{"{}"}}, nil, 1)
			switch {
			case tc.reason == "" && (a.status != "accepted" || len(a.ops) != 1):
				t.Errorf("status %s, reasons %v, ops %d; want accepted with one operation", a.status, a.reasons, len(a.ops))
			case tc.reason != "" && (a.status != "rejected" || a.patchID != "" || !slices.ContainsFunc(a.reasons, func(r string) bool { return strings.Contains(r, tc.reason) })):
				t.Errorf("status %s, reasons %v; want rejected for %q", a.status, a.reasons, tc.reason)
			}
			if data, _ := os.ReadFile("/etc/passwd"); tc.name == "symlinkOverFile" && slices.ContainsFunc(a.ops, func(o storedOperation) bool { return o.Content == string(data) }) {
				t.Error("the builder read through a symlink")
			}
		})
	}
}

// TestChange_Cancel cancels prepare_change while the patch worker's turn
// runs (the replay server holds a session cut right after turn/started):
// the turn is interrupted, the process tree and the checkout are gone, and
// nothing is committed: the lifecycle waits in implement, with no change
// row, and a run later starts the patch worker again.
func TestChange_Cancel(t *testing.T) {
	held := t.TempDir()
	src := string(MustReadFile(t, filepath.Join("..", "frozen", "changes", "verified", "6db36ab113d0fafa080c07017d19b954.jsonl")))
	if !strings.Contains(src, `"scenario":"lifecycle-implement `) {
		t.Fatal("the frozen session is not the patch worker's; re-record (make frozen-changes) and name it here")
	}
	MustWriteFile(t, filepath.Join(held, "session.jsonl"), heldSession(t, src))
	te, _ := changeEngine(t, MustFixtureRepo(t, "grepx", false), "verified", replayTranscripts(t, held))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := te.PrepareChange(ctx, "s", MustChangeRequest(t, "verified"))
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !hasEntries(filepath.Join(te.data, "checkouts")) {
		if time.Now().After(deadline) {
			t.Fatal("the patch worker never started")
		}
		runtimeYield()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("PrepareChange after cancel = %v", err)
	}
	for _, dir := range []string{"checkouts", "codex-homes"} {
		if hasEntries(filepath.Join(te.data, dir)) {
			t.Errorf("%s left behind after cancellation", dir)
		}
	}
	if n := count(t, te, `SELECT count(*) FROM changes`); n != 0 {
		t.Errorf("%d change rows after a cancelled patch worker, want 0", n)
	}
	// Nobody learnt the change's id: its lifecycle ends, cancelled, and
	// says why.
	var phase, status string
	if err := te.store.db.QueryRow(`SELECT phase, status FROM change_lifecycles`).Scan(&phase, &status); err != nil || phase != "implement" || status != "cancelled" {
		t.Errorf("the lifecycle of a cancelled prepare_change is %s/%s (%v), want implement/cancelled", phase, status, err)
	}
}

// TestChange_VerifyWithoutWorkers: verify_change on an engine without an
// App Server refuses (unavailable) before anything runs: the lifecycle
// commits no phase failure it could not undo, and an engine with workers
// then verifies the change.
func TestChange_VerifyWithoutWorkers(t *testing.T) {
	ctx := context.Background()
	te, _ := changeEngine(t, MustFixtureRepo(t, "grepx", true), "verified")
	res := mustPrepare(t, te, "verified")
	events := count(t, te, `SELECT count(*) FROM change_events`)
	cfg := te.cfg
	te.reopen(func(c *Config) { *c = cfg; c.Codex = nil })
	if _, err := te.VerifyChange(ctx, "s", res.ChangeID); KindOf(err) != kindUnavailable {
		t.Fatalf("verify_change without workers = %v, want unavailable", err)
	}
	if n := count(t, te, `SELECT count(*) FROM change_events`); n != events {
		t.Errorf("verify_change without workers journaled %d events", n-events)
	}
	te.reopen(replayCodex(t, "verified"), func(c *Config) { c.Tests = cfg.Tests })
	if v, err := te.VerifyChange(ctx, "s", res.ChangeID); err != nil || v.Verdict != lifecycle.VerdictVerified {
		t.Errorf("verify_change with workers again = %+v, %v", v, err)
	}
}
