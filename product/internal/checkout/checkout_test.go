package checkout

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// MustGit runs git in dir with a fixed identity and no inherited GIT_*
// variables, failing the test on error, and returns its trimmed stdout.
func MustGit(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	full := append([]string{"-c", "user.name=Needle Test", "-c", "user.email=test@example.com",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	cmd.Env = testGitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// MustWrite writes files (slash path → content) under root, creating
// parents; a name ending in "*" is written executable, without the "*".
func MustWrite(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	for rel, content := range files {
		perm := fs.FileMode(0o644)
		if name, ok := strings.CutSuffix(rel, "*"); ok {
			rel, perm = name, 0o755
		}
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), perm); err != nil {
			tb.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			tb.Fatal(err)
		}
	}
}

// MustRepo returns a git work tree holding files, committed.
func MustRepo(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	MustGit(tb, dir, "init", "-q")
	MustWrite(tb, dir, files)
	MustGit(tb, dir, "add", "-A")
	MustGit(tb, dir, "commit", "-q", "-m", "base")
	return dir
}

// MustOpen opens root as a snapshot.Repo.
func MustOpen(tb testing.TB, root string) *snapshot.Repo {
	tb.Helper()
	r, err := snapshot.Open(context.Background(), root, nil)
	if err != nil {
		tb.Fatalf("Open(%s): %v", root, err)
	}
	return r
}

// MustSnapshot returns the snapshot id of the tree at root.
func MustSnapshot(tb testing.TB, repo *snapshot.Repo) string {
	tb.Helper()
	s, err := repo.Snapshot(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return s.ID
}

// MustCreate creates a checkout of repo under parent and removes it when
// the test ends.
func MustCreate(tb testing.TB, repo *snapshot.Repo, parent string) *Checkout {
	tb.Helper()
	c, err := Create(context.Background(), repo, parent)
	if err != nil {
		tb.Fatalf("Create: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Remove(context.Background()); err != nil {
			tb.Errorf("cleanup: %v", err)
		}
	})
	return c
}

// ReadTree returns every non-directory entry under root except a top-level
// .git, as path → mode and content (a symlink's target).
func ReadTree(tb testing.TB, root string) map[string]string {
	tb.Helper()
	tree := make(map[string]string)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ".git" {
			return skipDir(d)
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var content []byte
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			content = []byte(target)
			if err != nil {
				return err
			}
		} else if content, err = os.ReadFile(p); err != nil {
			return err
		}
		tree[filepath.ToSlash(rel)] = info.Mode().String() + " " + string(content)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return tree
}

func skipDir(d fs.DirEntry) error {
	if d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}

// checkCheckout checks c against its source: the same snapshot id computed
// by Create, by Verify and independently by the snapshot package, and
// exactly the given files (path → content, "*" suffix for executable).
func checkCheckout(t *testing.T, c *Checkout, source *snapshot.Repo, want map[string]string) {
	t.Helper()
	if id := MustSnapshot(t, source); c.Snapshot != id {
		t.Errorf("Snapshot = %s, source has %s", c.Snapshot, id)
	}
	if id := MustSnapshot(t, MustOpen(t, c.Dir)); c.Snapshot != id {
		t.Errorf("Snapshot = %s, snapshot.Open(checkout) has %s", c.Snapshot, id)
	}
	if err := c.Verify(context.Background()); err != nil {
		t.Errorf("Verify: %v", err)
	}
	got := make(map[string]string)
	for rel, s := range ReadTree(t, c.Dir) {
		mode, content, _ := strings.Cut(s, " ")
		if mode == "-rwxr-xr-x" {
			rel += "*"
		} else if mode != "-rw-r--r--" {
			rel += " " + mode
		}
		got[rel] = content
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checkout tree (-want +got):\n%s", diff)
	}
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	t.Run("PlainDir", func(t *testing.T) {
		src := t.TempDir()
		files := map[string]string{"a.txt": "a", "sub/b.txt": "b", "run.sh*": "#!/bin/sh\n"}
		MustWrite(t, src, files)
		MustWrite(t, src, map[string]string{"sub/.git/config": "not content"})
		if err := os.Symlink("a.txt", filepath.Join(src, "link")); err != nil {
			t.Fatal(err)
		}
		c := MustCreate(t, MustOpen(t, src), filepath.Join(t.TempDir(), "new", "parent"))
		if c.kind != kindCopy {
			t.Errorf("kind = %s, want copy", c.kind)
		}
		checkCheckout(t, c, MustOpen(t, src), files)
		fi, err := os.Stat(filepath.Dir(c.Dir))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("parent: %v, %v; want mode 0700", fi, err)
		}
		m, err := readMarker(c.marker)
		if err != nil || m.PID != os.Getpid() || m.Source != MustOpen(t, src).Root() || m.Start == "" {
			t.Errorf("marker = %+v, %v", m, err)
		}
	})
	t.Run("GitClean", func(t *testing.T) {
		files := map[string]string{"a.txt": "a", "sub/b.txt": "b", "run.sh*": "#!/bin/sh\n"}
		src := MustRepo(t, files)
		c := MustCreate(t, MustOpen(t, src), t.TempDir())
		if c.kind != kindWorktree {
			t.Errorf("kind = %s, want worktree", c.kind)
		}
		checkCheckout(t, c, MustOpen(t, src), files)
		if head := MustGit(t, c.Dir, "rev-parse", "HEAD"); head != MustGit(t, src, "rev-parse", "HEAD") {
			t.Errorf("checkout HEAD = %s, want the source's", head)
		}
		if list := MustGit(t, src, "worktree", "list", "--porcelain"); !strings.Contains(list, "worktree "+c.Dir+"\n") {
			t.Errorf("worktree list lacks %s:\n%s", c.Dir, list)
		}
	})
	t.Run("GitDirty", func(t *testing.T) {
		src := MustRepo(t, map[string]string{
			".gitignore": "*.log\n", "mod.txt": "old", "gone.txt": "gone", "keep.txt": "keep",
			"tool.sh": "#!/bin/sh\n", "staged.txt": "v1",
		})
		if err := os.Symlink("keep.txt", filepath.Join(src, "tracked-link")); err != nil {
			t.Fatal(err)
		}
		MustGit(t, src, "add", "tracked-link")
		MustGit(t, src, "commit", "-q", "-m", "link")
		MustWrite(t, src, map[string]string{"mod.txt": "new", "new/untracked.txt": "u", "debug.log": "ignored",
			"tool.sh*": "#!/bin/sh\n", "staged.txt": "v2", "new.sh*": "#!/bin/sh\necho\n"})
		MustGit(t, src, "add", "staged.txt")
		if err := os.Remove(filepath.Join(src, "gone.txt")); err != nil {
			t.Fatal(err)
		}
		c := MustCreate(t, MustOpen(t, src), t.TempDir())
		checkCheckout(t, c, MustOpen(t, src), map[string]string{
			".gitignore": "*.log\n", "mod.txt": "new", "keep.txt": "keep", "tool.sh*": "#!/bin/sh\n",
			"staged.txt": "v2", "new/untracked.txt": "u", "new.sh*": "#!/bin/sh\necho\n",
		})
	})
	t.Run("GitNoCommit", func(t *testing.T) {
		src := t.TempDir()
		MustGit(t, src, "init", "-q")
		files := map[string]string{".gitignore": "*.log\n", "a.txt": "a"}
		MustWrite(t, src, files)
		MustWrite(t, src, map[string]string{"x.log": "ignored"})
		c := MustCreate(t, MustOpen(t, src), t.TempDir())
		if c.kind != kindCopy {
			t.Errorf("kind = %s, want copy", c.kind)
		}
		checkCheckout(t, c, MustOpen(t, src), files)
	})
	t.Run("HooksNotRun", func(t *testing.T) {
		src := MustRepo(t, map[string]string{"a.txt": "a"})
		ran := filepath.Join(t.TempDir(), "ran")
		MustWrite(t, src, map[string]string{".git/hooks/post-checkout*": "#!/bin/sh\ntouch '" + ran + "'\n"})
		MustCreate(t, MustOpen(t, src), t.TempDir())
		if _, err := os.Stat(ran); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("post-checkout hook ran (%v)", err)
		}
	})
	t.Run("ErrParentIsFile", func(t *testing.T) {
		src := MustRepo(t, map[string]string{"a.txt": "a"})
		dir := t.TempDir()
		parent := filepath.Join(dir, "parent")
		MustWrite(t, dir, map[string]string{"parent": "a file"})
		_, err := Create(ctx, MustOpen(t, src), parent)
		if !errors.Is(err, ErrVerify) {
			t.Fatalf("Create = %v, want ErrVerify", err)
		}
		if got := ReadTree(t, dir); !cmp.Equal(got, map[string]string{"parent": "-rw-r--r-- a file"}) {
			t.Errorf("left behind: %v", got)
		}
		checkNoWorktrees(t, src)
	})
	t.Run("ErrParentInsideSource", func(t *testing.T) {
		src := MustRepo(t, map[string]string{"a.txt": "a"})
		_, err := Create(ctx, MustOpen(t, src), filepath.Join(src, "checkouts"))
		if !errors.Is(err, ErrVerify) {
			t.Fatalf("Create = %v, want ErrVerify", err)
		}
		checkNoWorktrees(t, src)
	})
	t.Run("ErrMissingObject", func(t *testing.T) {
		// A blob of HEAD is gone: the snapshot (work tree and index) is
		// fine, the worktree checkout cannot be made.
		src := MustRepo(t, map[string]string{"a.txt": "a", "b.txt": "b"})
		blob := MustGit(t, src, "rev-parse", "HEAD:b.txt")
		if err := os.Remove(filepath.Join(src, ".git", "objects", blob[:2], blob[2:])); err != nil {
			t.Fatal(err)
		}
		parent := t.TempDir()
		_, err := Create(ctx, MustOpen(t, src), parent)
		if !errors.Is(err, ErrVerify) || errors.Is(err, ErrCleanup) {
			t.Fatalf("Create = %v, want ErrVerify only", err)
		}
		if got := ReadTree(t, parent); len(got) != 0 {
			t.Errorf("left behind: %v", got)
		}
		checkNoWorktrees(t, src)
	})
}

// checkNoWorktrees fails unless src registers no worktree but its own.
func checkNoWorktrees(t *testing.T, src string) {
	t.Helper()
	dirs, err := worktrees(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if own := MustOpen(t, src).Root(); !slices.Equal(dirs, []string{own}) {
		t.Errorf("worktrees = %q, want only %s", dirs, own)
	}
}

// TestCreate_SourceChanged feeds create a snapshot that no longer matches
// the source, as when a file is edited between the snapshot and the copy:
// the worktree is made, the overlay notices, and everything is rolled back.
func TestCreate_SourceChanged(t *testing.T) {
	ctx := context.Background()
	src := MustRepo(t, map[string]string{"a.txt": "a", "b.txt": "b"})
	MustWrite(t, src, map[string]string{"b.txt": "edited"})
	repo := MustOpen(t, src)
	snap, err := repo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	MustWrite(t, src, map[string]string{"b.txt": "edited again"})
	parent := t.TempDir()
	_, err = create(ctx, repo, snap, parent)
	if err == nil || !strings.Contains(err.Error(), "b.txt changed since the snapshot") || errors.Is(err, ErrCleanup) {
		t.Fatalf("create = %v, want a changed b.txt", err)
	}
	if got := ReadTree(t, parent); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
	checkNoWorktrees(t, src)
}

// TestCreate_Concurrent creates, verifies and removes checkouts of one
// repository at once: git's worktree registry must stay consistent.
func TestCreate_Concurrent(t *testing.T) {
	ctx := context.Background()
	src := MustRepo(t, map[string]string{"a.txt": "a"})
	MustWrite(t, src, map[string]string{"a.txt": "dirty"})
	repo, parent := MustOpen(t, src), t.TempDir()
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			c, err := Create(ctx, repo, parent)
			if err == nil {
				err = errors.Join(c.Verify(ctx), c.Remove(ctx))
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	checkNoWorktrees(t, src)
}

// testGitEnv is the environment without inherited GIT_* variables, so a test
// run from a git hook still works on its own repositories.
func testGitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestCreate_StableName: a checkout takes the same path as the last one of
// the same snapshot once that one is removed (what a build cache keyed on
// paths needs), a live one keeps its path to itself, another snapshot gets
// another path, and a directory at the stable path that no marker owns is
// never built into or touched.
func TestCreate_StableName(t *testing.T) {
	ctx := context.Background()
	src := MustRepo(t, map[string]string{"a.txt": "a"})
	repo, parent := MustOpen(t, src), t.TempDir()
	first, err := Create(ctx, repo, parent)
	if err != nil {
		t.Fatal(err)
	}
	dir := first.Dir
	second := MustCreate(t, repo, parent)
	if second.Dir == dir {
		t.Fatalf("two live checkouts share %s", dir)
	}
	checkCheckout(t, second, repo, map[string]string{"a.txt": "a"})
	if err := first.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	third, err := Create(ctx, repo, parent)
	if err != nil {
		t.Fatal(err)
	}
	if third.Dir != dir {
		t.Errorf("a checkout of the same snapshot after the first was removed: %s, want %s", third.Dir, dir)
	}
	checkCheckout(t, third, repo, map[string]string{"a.txt": "a"})
	if err := third.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir + markerExt); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stable marker outlived its checkout: %v", err)
	}

	MustWrite(t, src, map[string]string{"a.txt": "changed"})
	other := MustCreate(t, repo, parent)
	if other.Dir == dir {
		t.Errorf("another snapshot took the first snapshot's path %s", dir)
	}
	checkCheckout(t, other, repo, map[string]string{"a.txt": "changed"})

	// Something at the first snapshot's path that no marker owns.
	MustWrite(t, src, map[string]string{"a.txt": "a"})
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	MustWrite(t, dir, map[string]string{"foreign": "keep"})
	fourth := MustCreate(t, repo, parent)
	if fourth.Dir == dir {
		t.Fatalf("built into a directory no marker owned: %s", dir)
	}
	if got := ReadTree(t, dir); len(got) != 1 {
		t.Errorf("the foreign directory changed: %v", got)
	}
	if _, err := os.Lstat(dir + markerExt); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a marker was left for the foreign directory: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "*"+markerExt)); len(left) != 3 {
		t.Errorf("markers %v, want the three live checkouts' (second, other, fourth)", left)
	}
}
