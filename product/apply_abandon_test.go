package product

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
)

// TestApply_AbandonInterruptedApplyTheUserEdited is the way out of an
// apply a crash interrupted and the user then edited: a child needle
// change apply is killed after two of its three files (options.go deleted,
// notes/added.txt added; search.go not yet written), and the user edits
// notes/added.txt. Apply then refuses (exit 3, pointing at --abandon) and
// writes nothing; --abandon, itself killed once after its first restore
// and run again, takes the patch out of every file holding exactly what
// the apply wrote, leaves the user's file, records what it found and
// returns the lifecycle to approved; a second --abandon finds nothing to
// abandon; apply afterwards is a 409 until the user removes the file, and
// then applies the whole patch.
func TestApply_AbandonInterruptedApplyTheUserEdited(t *testing.T) {
	probe := MustFixtureRepo(t, "grepx", false)
	sc := crashScenarios(t, probe)[0]
	sc.prepareOnly(t, t.TempDir())
	repo := filepath.Join(sc.base, "repo")
	for _, step := range []string{"run", "approve"} {
		if code, killed := sc.child(t, step, "", ""); code != 0 || killed {
			t.Fatalf("%s exited %d (killed %v)", step, code, killed)
		}
	}
	if _, killed := sc.child(t, "apply", "apply.after_file:2", ""); !killed {
		t.Fatal("the apply was not killed after its second file")
	}
	base := sc.templateTree(t)
	if got := sc.touched(t); !strings.Contains(got, "notes/added.txt: b3:") || !strings.Contains(got, "options.go: -") ||
		lineOf(got, "search.go") != lineOf(base, "search.go") {
		t.Fatalf("after the kill the tree is not two files into the apply:\n%s", got)
	}
	userNote := "the user's own note, written after the crash\n"
	MustWriteFile(t, filepath.Join(repo, "notes", "added.txt"), userNote)
	edited := treeDigest(t, repo) // (git status may refresh the index: read it after)
	head, index := MustReadFile(t, filepath.Join(repo, ".git", "HEAD")), MustReadFile(t, filepath.Join(repo, ".git", "index"))
	gitUntouched := func(when string) {
		t.Helper()
		if !slices.Equal(MustReadFile(t, filepath.Join(repo, ".git", "HEAD")), head) || !slices.Equal(MustReadFile(t, filepath.Join(repo, ".git", "index")), index) {
			t.Errorf("%s: .git/HEAD or .git/index changed", when)
		}
	}

	out, code := abandonChild(t, sc, "", "apply")
	if code != 3 || !strings.Contains(out, "notes/added.txt changed since") || !strings.Contains(out, "needle change apply --abandon "+sc.id) {
		t.Fatalf("apply over the edited interrupted apply exited %d:\n%s\nwant exit 3 naming the file and --abandon", code, out)
	}
	gitUntouched("the refused apply")
	if treeDigest(t, repo) != edited {
		t.Fatal("the refused apply wrote to the work tree")
	}
	index = MustReadFile(t, filepath.Join(repo, ".git", "index"))

	// --abandon killed after its first restore, then run again.
	if _, code := abandonChild(t, sc, "recovery.after_restore:1", "apply", "--abandon"); code != -1 {
		t.Fatalf("--abandon with a failpoint exited %d, want killed", code)
	}
	out, code = abandonChild(t, sc, "", "apply", "--abandon", "--json")
	if code != 0 {
		t.Fatalf("--abandon exited %d:\n%s", code, out)
	}
	var res abandonResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--abandon --json: %v\n%s", err, out)
	}
	// options.go was restored by the killed run: the second finds it before.
	want := map[string]string{"notes/added.txt": "changed", "options.go": "before", "search.go": "before"}
	for _, f := range res.Files {
		if want[f.Path] != f.Found || f.Restored {
			t.Errorf("abandoned file %+v, want found %q and not restored (by this run)", f, want[f.Path])
		}
	}
	if len(res.Files) != 3 || res.Status != string(lifecycle.StatusApproved) {
		t.Errorf("--abandon: %+v", res)
	}
	got := sc.touched(t)
	for _, p := range []string{"options.go", "search.go"} {
		if lineOf(got, p) != lineOf(base, p) {
			t.Errorf("after --abandon %s is not its content before the patch:\n%s", p, got)
		}
	}
	if data := string(MustReadFile(t, filepath.Join(repo, "notes", "added.txt"))); data != userNote {
		t.Errorf("--abandon touched the user's file: %q", data)
	}
	gitUntouched("--abandon")
	// The store says what happened, in the same transaction as the end.
	st, err := OpenStore(context.Background(), filepath.Join(sc.base, "data"))
	if err != nil {
		t.Fatal(err)
	}
	var status, cause, files string
	err = st.db.QueryRow(`SELECT a.status, a.cause, b.files FROM change_applies a JOIN change_apply_abandons b USING (apply_id)`).Scan(&status, &cause, &files)
	var restored int
	if err == nil {
		err = st.db.QueryRow(`SELECT count(*) FROM change_apply_files WHERE step = 'restored' AND path = 'options.go'`).Scan(&restored)
	}
	st.Close()
	if err != nil || status != "rolled_back" || cause != "crash_recovered" || !strings.Contains(files, `{"found":"changed","path":"notes/added.txt","restored":false}`) || restored != 1 {
		t.Errorf("stored abandon: %s %s %s, options.go restored %d times, %v", status, cause, files, restored, err)
	}
	s := sc.state(t)
	if s.Status != lifecycle.StatusApproved || s.ApplyIntent != "" {
		t.Errorf("after --abandon the lifecycle is %s", s.Where())
	}

	// Nothing left to abandon: refused, nothing changed.
	before := treeDigest(t, repo)
	if out, code := abandonChild(t, sc, "", "apply", "--abandon"); code != 3 || !strings.Contains(out, "no interrupted apply to abandon") {
		t.Errorf("a second --abandon exited %d:\n%s", code, out)
	}
	// The next apply checks the tree afresh: the user's file is a drift.
	if out, code := abandonChild(t, sc, "", "apply"); code != 3 || !strings.Contains(out, "409 conflict: notes/added.txt") {
		t.Errorf("apply over the user's file exited %d:\n%s", code, out)
	}
	if treeDigest(t, repo) != before {
		t.Error("a refused command wrote to the work tree")
	}
	if err := os.Remove(filepath.Join(repo, "notes", "added.txt")); err != nil {
		t.Fatal(err)
	}
	if out, code := abandonChild(t, sc, "", "apply"); code != 0 {
		t.Fatalf("apply after the user removed the file exited %d:\n%s", code, out)
	}
	if got, _ := sc.outcome(t); !strings.Contains(got, `"status":"applied"`) {
		t.Errorf("final state %s", got)
	}
	if got := sc.touched(t); got == base {
		t.Error("the final apply wrote nothing")
	}
}

// abandonChild runs needle change ARGS… ID for sc's lifecycle in a child
// process (the failpoint spec armed), returning its output and exit code
// (-1 when SIGKILL ended it).
func abandonChild(t *testing.T, sc *crashScenario, spec string, args ...string) (string, int) {
	t.Helper()
	args = append(args, "--repository", filepath.Join(sc.base, "repo"), "--data-dir", filepath.Join(sc.base, "data"), sc.id)
	cmd := needleCommand(t, append([]string{"change"}, args...)...)
	cmd.Env = append(os.Environ(), "NEEDLE_FAKE_SCRIPT="+filepath.Join(sc.base, "script.json"), "NEEDLE_FAILPOINT="+spec)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		return string(out), -1
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatal(err)
	return "", 0
}

// state is sc's lifecycle state as stored.
func (sc *crashScenario) state(t *testing.T) lifecycle.State {
	t.Helper()
	_, v := sc.stored(t)
	return v.State
}

// lineOf is the line of a touched() listing for path.
func lineOf(listing, path string) string {
	for _, l := range strings.Split(listing, "\n") {
		if strings.HasPrefix(l, path+": ") {
			return l
		}
	}
	return ""
}
