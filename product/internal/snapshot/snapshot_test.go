package snapshot

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// MustGit runs git in dir with a fixed identity and no inherited GIT_*
// variables, failing the test on error, and returns its trimmed stdout.
func MustGit(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	full := append([]string{"-c", "user.name=Needle Test", "-c", "user.email=test@example.com",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	cmd.Env = gitEnv(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// MustInit returns a fresh git work tree.
func MustInit(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git not installed")
	}
	dir := tb.TempDir()
	MustGit(tb, dir, "init", "-q")
	return dir
}

// MustWrite writes files (slash path → content) under root, creating parents.
func MustWrite(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// MustOpen opens root with cache, failing the test on error.
func MustOpen(tb testing.TB, root string, cache StatCache) *Repo {
	tb.Helper()
	r, err := Open(context.Background(), root, cache)
	if err != nil {
		tb.Fatalf("Open(%s): %v", root, err)
	}
	return r
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	t.Run("PlainDir", func(t *testing.T) {
		if r := MustOpen(t, t.TempDir(), nil); r.IsGit() {
			t.Error("IsGit() = true for a plain directory")
		}
	})
	t.Run("Git", func(t *testing.T) {
		if r := MustOpen(t, MustInit(t), nil); !r.IsGit() {
			t.Error("IsGit() = false for a git top level")
		}
	})
	t.Run("GitSubdirKeepsTheWorkTreesRules", func(t *testing.T) {
		root := MustInit(t)
		MustWrite(t, root, map[string]string{".gitignore": "*.env\n", "sub/a.txt": "a", "sub/local.env": "TOKEN=x"})
		r := MustOpen(t, filepath.Join(root, "sub"), nil)
		if !r.IsGit() || r.Sub() != "sub" {
			t.Fatalf("IsGit, Sub = %v, %q; want true, sub", r.IsGit(), r.Sub())
		}
		files, err := r.Files(ctx)
		if err != nil || !slices.Equal(files, []string{"a.txt"}) {
			t.Errorf("Files() = %v, %v; want [a.txt]: the top level's *.env applies below it", files, err)
		}
		if ignored, err := r.Ignored(ctx, "local.env"); err != nil || !ignored {
			t.Errorf("Ignored(local.env) = %v, %v; want true", ignored, err)
		}
	})
	t.Run("BareIsPlain", func(t *testing.T) {
		bare := t.TempDir()
		MustGit(t, bare, "init", "-q", "--bare")
		if r := MustOpen(t, bare, nil); r.IsGit() {
			t.Errorf("IsGit() = true for %s", bare)
		}
	})
	// A .git that git does not accept is never taken for a plain directory:
	// its ignore rules would silently be dropped.
	t.Run("UnreadableGitIsAnError", func(t *testing.T) {
		garbage := MustInit(t)
		MustWrite(t, garbage, map[string]string{"sub/a.txt": "a"})
		if err := os.WriteFile(filepath.Join(garbage, ".git", "HEAD"), []byte("garbage\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		fake := t.TempDir()
		MustWrite(t, fake, map[string]string{".git/config": "not a repository"})
		for _, dir := range []string{garbage, filepath.Join(garbage, "sub"), fake, filepath.Join(MustInit(t), ".git")} {
			if r, err := Open(ctx, dir, nil); err == nil {
				t.Errorf("Open(%s) = git %v, nil; want an error", dir, r.IsGit())
			}
		}
	})
	t.Run("ThroughSymlink", func(t *testing.T) {
		root := MustInit(t)
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(root, link); err != nil {
			t.Fatal(err)
		}
		r := MustOpen(t, link, nil)
		real, _ := filepath.EvalSymlinks(root)
		if !r.IsGit() || r.Root() != real {
			t.Errorf("IsGit, Root = %v, %s; want true, %s", r.IsGit(), r.Root(), real)
		}
	})
	t.Run("ErrNotDir", func(t *testing.T) {
		root := t.TempDir()
		MustWrite(t, root, map[string]string{"f": "x"})
		if _, err := Open(ctx, filepath.Join(root, "f"), nil); err == nil {
			t.Error("Open(file) succeeded")
		}
		if _, err := Open(ctx, filepath.Join(root, "missing"), nil); err == nil {
			t.Error("Open(missing) succeeded")
		}
	})
}

func TestRepo_Head(t *testing.T) {
	ctx := context.Background()
	root := MustInit(t)
	r := MustOpen(t, root, nil)
	if head, err := r.Head(ctx); err != nil || head != "" {
		t.Errorf("Head on empty repo = %q, %v; want \"\", nil", head, err)
	}
	MustWrite(t, root, map[string]string{"a.txt": "a"})
	MustGit(t, root, "add", ".")
	MustGit(t, root, "commit", "-q", "-m", "one")
	want := MustGit(t, root, "rev-parse", "HEAD")
	if head, err := r.Head(ctx); err != nil || head != want {
		t.Errorf("Head = %q, %v; want %q", head, err, want)
	}
	if head, err := MustOpen(t, t.TempDir(), nil).Head(ctx); err != nil || head != "" {
		t.Errorf("Head on plain dir = %q, %v; want \"\", nil", head, err)
	}
}

func TestRepo_Files(t *testing.T) {
	ctx := context.Background()
	t.Run("Git", func(t *testing.T) {
		root := MustInit(t)
		MustWrite(t, root, map[string]string{
			".gitignore": "*.log\nbuild/\n", "a.txt": "a", "sub/b.txt": "b", "gone.txt": "g",
		})
		MustGit(t, root, "add", ".")
		MustGit(t, root, "commit", "-q", "-m", "one")
		MustWrite(t, root, map[string]string{"new.txt": "n", "x.log": "ignored", "build/out.txt": "ignored"})
		if err := os.Remove(filepath.Join(root, "gone.txt")); err != nil { // still in the index
			t.Fatal(err)
		}
		if err := os.Symlink("a.txt", filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
		got, err := MustOpen(t, root, nil).Files(ctx)
		want := []string{".gitignore", "a.txt", "new.txt", "sub/b.txt"}
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Errorf("Files() err=%v (-want +got):\n%s", err, diff)
		}
	})
	t.Run("Plain", func(t *testing.T) {
		root := t.TempDir()
		MustWrite(t, root, map[string]string{"a.txt": "a", "sub/b.txt": "b", "x.log": "kept", "sub/.git/config": "skipped"})
		got, err := MustOpen(t, root, nil).Files(ctx)
		want := []string{"a.txt", "sub/b.txt", "x.log"}
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Errorf("Files() err=%v (-want +got):\n%s", err, diff)
		}
	})
}

func TestRepo_Snapshot(t *testing.T) {
	tree := map[string]string{"a.txt": "alpha", "sub/b.txt": "beta", "sub/deep/c.txt": "gamma"}
	t.Run("StableAcrossDirs", func(t *testing.T) {
		one, two := t.TempDir(), t.TempDir()
		MustWrite(t, one, tree)
		MustWrite(t, two, tree)
		s1 := mustSnapshot(t, MustOpen(t, one, NewMemCache()))
		s2 := mustSnapshot(t, MustOpen(t, two, nil))
		if diff := cmp.Diff(s1, s2); diff != "" {
			t.Errorf("snapshots of identical trees differ (-one +two):\n%s", diff)
		}
		want := []FileDigest{
			{"a.txt", digestOf("alpha")}, {"sub/b.txt", digestOf("beta")}, {"sub/deep/c.txt", digestOf("gamma")},
		}
		if diff := cmp.Diff(want, s1.Files); diff != "" {
			t.Errorf("Files (-want +got):\n%s", diff)
		}
	})
	t.Run("OneByteChange", func(t *testing.T) {
		root := t.TempDir()
		MustWrite(t, root, tree)
		r := MustOpen(t, root, NewMemCache())
		before := mustSnapshot(t, r)
		MustWrite(t, root, map[string]string{"sub/b.txt": "betA"})
		if after := mustSnapshot(t, r); after.ID == before.ID {
			t.Errorf("ID unchanged after a one-byte edit: %s", after.ID)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		s := mustSnapshot(t, MustOpen(t, t.TempDir(), nil))
		if s.Files == nil || s.ID == "" {
			t.Errorf("empty snapshot = %+v; want non-nil Files and an id", s)
		}
	})
	t.Run("Dirty", func(t *testing.T) {
		root := MustInit(t)
		MustWrite(t, root, map[string]string{".gitignore": "*.log\n", "a.txt": "a"})
		MustGit(t, root, "add", ".")
		MustGit(t, root, "commit", "-q", "-m", "one")
		r := MustOpen(t, root, NewMemCache())
		steps := []struct {
			name  string
			write map[string]string
			dirty bool
		}{
			{"Committed", nil, false},
			{"IgnoredFile", map[string]string{"x.log": "x"}, false},
			{"TrackedEdit", map[string]string{"a.txt": "b"}, true},
			{"Reverted", map[string]string{"a.txt": "a"}, false},
			{"Untracked", map[string]string{"new.txt": "n"}, true},
		}
		for _, step := range steps {
			MustWrite(t, root, step.write)
			if s := mustSnapshot(t, r); s.Dirty != step.dirty || s.Head == "" {
				t.Errorf("%s: Dirty, Head = %v, %q; want %v, a commit", step.name, s.Dirty, s.Head, step.dirty)
			}
		}
	})
}

func mustSnapshot(tb testing.TB, r *Repo) Snapshot {
	tb.Helper()
	s, err := r.Snapshot(context.Background())
	if err != nil {
		tb.Fatalf("Snapshot: %v", err)
	}
	return s
}

func TestRepo_DirDigest(t *testing.T) {
	tree := map[string]string{".gitignore": "*.log\n", "src/a.go": "a", "src/sub/b.go": "b", "docs/x.md": "x"}
	for _, kind := range []string{"Git", "Plain"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			if kind == "Git" {
				root = MustInit(t)
			}
			MustWrite(t, root, tree)
			r := MustOpen(t, root, nil)
			base := mustDirDigest(t, r, "src")
			same := []map[string]string{
				{"docs/y.md": "elsewhere"},
				{"src/a.go": "content, not listing"},
				{"src/sub/d.go": "below, not in"},
			}
			if kind == "Git" {
				same = append(same, map[string]string{"src/z.log": "ignored"})
			}
			for _, w := range same {
				MustWrite(t, root, w)
				if got := mustDirDigest(t, r, "src"); got != base {
					t.Errorf("after writing %v: DirDigest(src) changed", w)
				}
			}
			MustWrite(t, root, map[string]string{"src/c.go": "new"})
			if got := mustDirDigest(t, r, "src"); got == base {
				t.Error("DirDigest(src) unchanged after adding src/c.go")
			}
			if d1, d2 := mustDirDigest(t, r, ""), mustDirDigest(t, r, "."); d1 != d2 {
				t.Errorf(`DirDigest("") = %s, DirDigest(".") = %s`, d1, d2)
			}
		})
	}
	t.Run("Errors", func(t *testing.T) {
		root := t.TempDir()
		MustWrite(t, root, tree)
		r := MustOpen(t, root, nil)
		for dir, want := range map[string]error{"../x": ErrUnsafePath, "src/": ErrUnsafePath, "missing": ErrNotExist} {
			if _, err := r.DirDigest(context.Background(), dir); !errors.Is(err, want) {
				t.Errorf("DirDigest(%q) = %v; want %v", dir, err, want)
			}
		}
		if _, err := r.DirDigest(context.Background(), "src/a.go"); err == nil {
			t.Error("DirDigest(src/a.go) succeeded on a file")
		}
	})
}

func mustDirDigest(tb testing.TB, r *Repo, dir string) string {
	tb.Helper()
	d, err := r.DirDigest(context.Background(), dir)
	if err != nil {
		tb.Fatalf("DirDigest(%q): %v", dir, err)
	}
	return d
}

func TestForEach(t *testing.T) {
	t.Run("EveryIndexOnce", func(t *testing.T) {
		var mu sync.Mutex
		seen := map[int]int{}
		if err := ForEach(context.Background(), 1000, func(i int) { mu.Lock(); seen[i]++; mu.Unlock() }); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			if seen[i] != 1 {
				t.Fatalf("index %d called %d times", i, seen[i])
			}
		}
	})
	t.Run("StopsWhenCancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		calls := 0
		err := ForEach(ctx, 1_000_000, func(int) {
			mu.Lock()
			calls++
			if calls == 10 {
				cancel()
			}
			mu.Unlock()
		})
		if !errors.Is(err, context.Canceled) || calls >= 1_000_000 {
			t.Errorf("err %v after %d calls; want context.Canceled well before the end", err, calls)
		}
	})
}

// OpenAsync answers what Open answers: the same root and IsGit, and, for a
// repository git refuses, Open's error from every method that reads it.
func TestOpenAsync_SameAsOpen(t *testing.T) {
	ctx := context.Background()
	broken := MustInit(t)
	MustWrite(t, broken, map[string]string{"a.txt": "a", ".git/config": "[[[\n"})
	for name, dir := range map[string]string{"PlainDir": t.TempDir(), "Git": MustInit(t), "Refused": broken} {
		t.Run(name, func(t *testing.T) {
			MustWrite(t, dir, map[string]string{"a.txt": "a"})
			want, openErr := Open(ctx, dir, nil)
			got, err := OpenAsync(ctx, dir, nil)
			if err != nil {
				t.Fatalf("OpenAsync: %v", err)
			}
			defer got.Close()
			if openErr == nil {
				if got.Root() != want.Root() || got.IsGit() != want.IsGit() {
					t.Errorf("OpenAsync Root, IsGit = %s, %v; Open %s, %v", got.Root(), got.IsGit(), want.Root(), want.IsGit())
				}
				if _, err := got.FileDigest("a.txt"); err != nil {
					t.Errorf("FileDigest: %v", err)
				}
				return
			}
			if got.IsGit() {
				t.Error("IsGit() = true for a repository git refused")
			}
			_, ferr := got.Files(ctx)
			_, derr := got.FileDigest("a.txt")
			_, herr := got.Head(ctx)
			_, ierr := got.Ignored(ctx, "a.txt")
			for what, err := range map[string]error{"Files": ferr, "FileDigest": derr, "Head": herr, "Ignored": ierr} {
				if err == nil || err.Error() != openErr.Error() {
					t.Errorf("%s error = %v; want Open's %v", what, err, openErr)
				}
			}
		})
	}
}
