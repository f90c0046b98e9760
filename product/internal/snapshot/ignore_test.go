package snapshot

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
	"time"
)

// waitTick returns once the file system's clock has moved past every
// timestamp written so far: it rewrites a probe file until the probe's
// mtime changes. A test that compares a cache with git after a change calls
// it between the cache's recording and the change, so that the change is
// visible in the stats (the racy window does this in the product).
func waitTick(tb testing.TB, dir string) {
	tb.Helper()
	probe := filepath.Join(dir, "tick-probe")
	stamp := func() int64 {
		if err := os.WriteFile(probe, []byte("x"), 0o644); err != nil {
			tb.Fatal(err)
		}
		fi, err := os.Stat(probe)
		if err != nil {
			tb.Fatal(err)
		}
		return fi.ModTime().UnixNano()
	}
	first := stamp()
	deadline := time.Now().Add(10 * time.Second) // a failsafe; the loop ends within a clock tick
	for stamp() == first {
		if time.Now().After(deadline) {
			tb.Fatal("the file system clock did not move")
		}
	}
}

// openTrusting opens root with a clock an hour ahead, so that what the
// repository records is never within the racy window: the tests see every
// input trusted at once and make their changes visible with waitTick.
func openTrusting(tb testing.TB, root string) *Repo {
	tb.Helper()
	r := MustOpen(tb, root, nil)
	r.now = func() time.Time { return time.Now().Add(time.Hour) }
	tb.Cleanup(func() { r.Close() })
	return r
}

// gitIgnored is the oracle: a one-shot `git check-ignore -q` of rel.
func gitIgnored(tb testing.TB, root, rel string) bool {
	tb.Helper()
	cmd := exec.Command("git", "check-ignore", "-q", "--", rel)
	cmd.Dir = root
	cmd.Env = gitEnv(os.Environ())
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false
	}
	tb.Fatalf("git check-ignore %s: %v", rel, err)
	return false
}

// TestIgnoreChecker_SameAsGit asks the long-lived check-ignore about a tree
// with nested .gitignore files, negations, tracked files that match a
// pattern, info/exclude and an excludes file, before and after each kind
// of change to what git reads, and holds every answer to a one-shot
// check-ignore's.
func TestIgnoreChecker_SameAsGit(t *testing.T) {
	ctx := context.Background()
	root := MustInit(t)
	excludes := filepath.Join(t.TempDir(), "global-ignore")
	MustWrite(t, root, map[string]string{
		".gitignore":     "*.log\n!keep.log\nbuild/\n/top.tmp\n",
		"a/.gitignore":   "*.gen\n!special.gen\n",
		"a/b/.gitignore": "!*.log\ndeep/\n",
		"a/x.gen":        "", "a/special.gen": "", "a/b/y.log": "", "a/b/z.txt": "",
		"a/b/deep/f": "", "build/out.o": "", "t.log": "tracked", "x.log": "", "keep.log": "", "top.tmp": "",
		"a/top.tmp": "", "local.secret": "", "global.glob": "", "src/main.go": "",
		"src/vendor/v.go": "", "docs/readme.md": "",
	})
	if err := os.WriteFile(excludes, []byte("*.glob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	MustGit(t, root, "config", "core.excludesFile", excludes)
	MustWrite(t, root, map[string]string{".git/info/exclude": "*.secret\n"})
	MustGit(t, root, "add", "-f", ".gitignore", "a/.gitignore", "a/b/.gitignore", "t.log", "src/main.go")
	MustGit(t, root, "commit", "-q", "-m", "one")
	paths := []string{"t.log", "x.log", "keep.log", "a/x.gen", "a/special.gen", "a/b/y.log", "a/b/z.txt", "a/b/deep/f",
		"a/b/deep", "build/out.o", "build", "top.tmp", "a/top.tmp", "local.secret", "global.glob", "src/main.go",
		"src/vendor/v.go", "docs/readme.md", "missing.log", "a/missing.gen", "new/dir/file.txt"}
	r := openTrusting(t, root)
	check := func(when string) {
		t.Helper()
		for _, p := range paths {
			got, err := r.Ignored(ctx, p)
			if err != nil {
				t.Fatalf("%s: Ignored(%s): %v", when, p, err)
			}
			if want := gitIgnored(t, root, p); got != want {
				t.Errorf("%s: Ignored(%s) = %v, git check-ignore says %v", when, p, got, want)
			}
		}
	}
	check("initially")
	if r.ign.spawns != 1 || r.ign.answers < len(paths) {
		t.Fatalf("the long-lived check-ignore started %d times and answered %d questions, want once and every path", r.ign.spawns, r.ign.answers)
	}
	for _, change := range []struct {
		name string
		do   func()
	}{
		{"edit a nested .gitignore", func() { MustWrite(t, root, map[string]string{"a/.gitignore": "*.gen\n"}) }},
		{"add a .gitignore below", func() { MustWrite(t, root, map[string]string{"src/vendor/.gitignore": "*.go\n"}) }},
		{"remove a .gitignore", func() { os.Remove(filepath.Join(root, "a/b/.gitignore")) }},
		{"track an ignored file", func() { MustGit(t, root, "add", "-f", "x.log") }},
		{"untrack a file", func() { MustGit(t, root, "rm", "-q", "--cached", "t.log") }},
		{"edit info/exclude", func() { MustWrite(t, root, map[string]string{".git/info/exclude": "docs/\n"}) }},
		{"edit the excludes file", func() { os.WriteFile(excludes, []byte("*.txt\n"), 0o644) }},
		{"point at another excludes file", func() {
			other := filepath.Join(t.TempDir(), "other")
			os.WriteFile(other, []byte("*.md\n"), 0o644)
			MustGit(t, root, "config", "core.excludesFile", other)
		}},
	} {
		check("before: " + change.name) // the process now has read every input these paths need
		spawns := r.ign.spawns
		waitTick(t, t.TempDir())
		change.do()
		waitTick(t, t.TempDir())
		check(change.name)
		if r.ign.spawns == spawns {
			t.Errorf("%s: the long-lived check-ignore was not restarted", change.name)
		}
	}
}

// TestIgnoreChecker_ReleaseReadsAgain rewrites a .gitignore with content
// of the same size, possibly within one timestamp tick, so its lstat may
// not change: after Release the next question starts a process that reads
// it as it is now.
func TestIgnoreChecker_ReleaseReadsAgain(t *testing.T) {
	ctx := context.Background()
	root := MustInit(t)
	r := MustOpen(t, root, nil)
	defer r.Close()
	for i, content := range []string{"*.log\n", "*.txt\n", "*.log\n"} {
		MustWrite(t, root, map[string]string{".gitignore": content})
		for _, p := range []string{"x.log", "a.txt"} {
			got, err := r.Ignored(ctx, p)
			if want := content == "*"+path.Ext(p)+"\n"; got != want || err != nil {
				t.Errorf("step %d: Ignored(%s) = %v, %v; want %v", i, p, got, err, want)
			}
		}
		r.Release()
	}
	if r.ign.spawns != 3 || r.ign.answers != 6 {
		t.Errorf("%d processes answered %d questions; want one process per unit of work answering all 6", r.ign.spawns, r.ign.answers)
	}
}
