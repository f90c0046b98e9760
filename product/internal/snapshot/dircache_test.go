package snapshot

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// uncachedDirDigest is the oracle: what git lists under dir now, through a
// repository opened afresh.
func uncachedDirDigest(tb testing.TB, root, dir string) string {
	tb.Helper()
	r := MustOpen(tb, root, nil)
	names, err := r.gitDirNames(context.Background(), dir)
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(names)
	id, err := contentid.Of(DirTag, slices.Compact(names))
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// treeDirs lists root and every directory below it, less .git.
func treeDirs(tb testing.TB, root string) []string {
	tb.Helper()
	dirs := []string{""}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == root {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		dirs = append(dirs, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dirs
}

// treeFiles lists every non-directory below root, less .git.
func treeFiles(tb testing.TB, root string) []string {
	tb.Helper()
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files
}

// dirOps are the changes the property test makes: each changes what git
// lists somewhere, or (deliberately) nothing it lists.
var dirOps = []struct {
	name string
	do   func(tb testing.TB, r *rand.Rand, root string)
}{
	{"add a file deep down", func(tb testing.TB, r *rand.Rand, root string) {
		dirs := treeDirs(tb, root)
		d := dirs[r.IntN(len(dirs))]
		for range r.IntN(3) {
			d = filepath.Join(d, fmt.Sprintf("n%d", r.IntN(4)))
		}
		ext := []string{".txt", ".log", ".go", ""}[r.IntN(4)]
		MustWrite(tb, root, map[string]string{filepath.ToSlash(filepath.Join(d, fmt.Sprintf("f%d%s", r.IntN(100), ext))): "x"})
	}},
	{"delete a file", func(tb testing.TB, r *rand.Rand, root string) {
		if fs := treeFiles(tb, root); len(fs) > 0 {
			os.Remove(filepath.Join(root, fs[r.IntN(len(fs))]))
		}
	}},
	{"empty a directory", func(tb testing.TB, r *rand.Rand, root string) {
		dirs := treeDirs(tb, root)
		d := filepath.Join(root, dirs[r.IntN(len(dirs))])
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.Name() != ".git" {
				os.RemoveAll(filepath.Join(d, e.Name()))
			}
		}
	}},
	{"make an empty directory", func(tb testing.TB, r *rand.Rand, root string) {
		dirs := treeDirs(tb, root)
		os.MkdirAll(filepath.Join(root, dirs[r.IntN(len(dirs))], fmt.Sprintf("e%d", r.IntN(4)), fmt.Sprintf("e%d", r.IntN(4))), 0o755)
	}},
	{"rename a directory", func(tb testing.TB, r *rand.Rand, root string) {
		dirs := treeDirs(tb, root)[1:]
		if len(dirs) > 0 {
			d := dirs[r.IntN(len(dirs))]
			os.Rename(filepath.Join(root, d), filepath.Join(root, filepath.Dir(d), fmt.Sprintf("r%d", r.IntN(100))))
		}
	}},
	{"write a .gitignore", func(tb testing.TB, r *rand.Rand, root string) {
		dirs := treeDirs(tb, root)
		pats := []string{"*.log", "!keep.log", "n1/", "*.txt", "n2", "/f1*", "e*/", "!*.txt", "**/n3/**", ""}
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(pats[r.IntN(len(pats))] + "\n")
		}
		os.WriteFile(filepath.Join(root, dirs[r.IntN(len(dirs))], ".gitignore"), []byte(b.String()), 0o644) // fails on a directory so named
	}},
	{"remove a .gitignore", func(tb testing.TB, r *rand.Rand, root string) {
		dirs := treeDirs(tb, root)
		os.Remove(filepath.Join(root, dirs[r.IntN(len(dirs))], ".gitignore"))
	}},
	{"git add everything", func(tb testing.TB, r *rand.Rand, root string) { MustGit(tb, root, "add", "-A") }},
	{"git add -f an ignored file", func(tb testing.TB, r *rand.Rand, root string) {
		if fs := treeFiles(tb, root); len(fs) > 0 {
			MustGit(tb, root, "add", "-f", "--", fs[r.IntN(len(fs))])
		}
	}},
	{"git rm --cached", func(tb testing.TB, r *rand.Rand, root string) {
		if tracked := strings.Fields(MustGit(tb, root, "ls-files")); len(tracked) > 0 {
			MustGit(tb, root, "rm", "-q", "--cached", "--", tracked[r.IntN(len(tracked))])
		}
	}},
	{"commit", func(tb testing.TB, r *rand.Rand, root string) {
		MustGit(tb, root, "commit", "-q", "--allow-empty", "-m", "step")
	}},
	{"edit info/exclude", func(tb testing.TB, r *rand.Rand, root string) {
		MustWrite(tb, root, map[string]string{".git/info/exclude": []string{"", "*.go\n", "n0/\n", "f2*\n"}[r.IntN(4)]})
	}},
	{"replace a file by a directory", func(tb testing.TB, r *rand.Rand, root string) {
		if fs := treeFiles(tb, root); len(fs) > 0 {
			f := filepath.Join(root, fs[r.IntN(len(fs))])
			os.Remove(f)
			MustWrite(tb, root, map[string]string{filepath.ToSlash(must(filepath.Rel(root, f))) + "/inner.txt": "x"})
		}
	}},
	{"add a symlink", func(tb testing.TB, r *rand.Rand, root string) {
		dirs := treeDirs(tb, root)
		os.Symlink(".", filepath.Join(root, dirs[r.IntN(len(dirs))], fmt.Sprintf("l%d", r.IntN(4))))
	}},
}

func must[T any](v T, _ error) T { return v }

// TestDirDigest_CacheSameAsGit is a property test of the directory cache:
// on random trees, after every random change (files added deep below
// counted and uncounted subdirectories, the last visible file of a
// subdirectory deleted, ignored files, .gitignore edits, git add -f and rm
// --cached, renamed and emptied directories, info/exclude) the digest of
// every directory through the cache equals git's listing now.
func TestDirDigest_CacheSameAsGit(t *testing.T) {
	ctx := context.Background()
	hits := 0
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("Seed%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 13))
			root := MustInit(t)
			MustWrite(t, root, map[string]string{"a/x.txt": "x", "a/b/y.log": "y", "c/z.go": "z", ".gitignore": "*.log\n", "top.txt": "t"})
			MustGit(t, root, "add", "-A")
			MustGit(t, root, "commit", "-q", "-m", "one")
			repo := openTrusting(t, root)
			tick := t.TempDir()
			for step := range 40 {
				for _, d := range treeDirs(t, root) {
					got, err := repo.DirDigest(ctx, d)
					if err != nil {
						t.Fatalf("step %d: DirDigest(%q): %v", step, d, err)
					}
					if want := uncachedDirDigest(t, root, d); got != want {
						t.Fatalf("step %d: DirDigest(%q) through the cache differs from git's listing now", step, d)
					}
				}
				waitTick(t, tick)
				op := dirOps[r.IntN(len(dirOps))]
				t.Logf("step %d: %s", step, op.name)
				op.do(t, r, root)
				waitTick(t, tick)
			}
			hits += repo.dirs.hits
		})
	}
	if hits == 0 {
		t.Error("no digest was answered from the cache: the test compared git with git")
	}
	t.Logf("%d digests answered from the cache", hits)
}

// TestDirDigest_SubRootUnderTopLevelIgnore: a repository opened below its
// work tree's top level is under the .gitignore files above it, so a
// cached digest and the long-lived check-ignore must both notice when one
// of those changes.
func TestDirDigest_SubRootUnderTopLevelIgnore(t *testing.T) {
	ctx := context.Background()
	top := MustInit(t)
	MustWrite(t, top, map[string]string{"sub/a.txt": "a", "sub/b.log": "b", "sub/c/d.log": "d"})
	sub := filepath.Join(top, "sub")
	repo := openTrusting(t, sub)
	tick := t.TempDir()
	for _, d := range []string{"", "c"} {
		if got, err := repo.DirDigest(ctx, d); err != nil || got != uncachedDirDigest(t, sub, d) {
			t.Fatalf("DirDigest(%q) = %s, %v; want git's listing", d, got, err)
		}
	}
	if ignored, err := repo.Ignored(ctx, "b.log"); err != nil || ignored {
		t.Fatalf("Ignored(b.log) = %v, %v before any .gitignore; want false", ignored, err)
	}
	for step, edit := range []map[string]string{{".gitignore": "*.log\n"}, {"sub/.gitignore": "!b.log\n"}, {".gitignore": ""}} {
		waitTick(t, tick)
		MustWrite(t, top, edit)
		waitTick(t, tick)
		for _, d := range []string{"", "c"} {
			got, err := repo.DirDigest(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if want := uncachedDirDigest(t, sub, d); got != want {
				t.Fatalf("step %d: DirDigest(%q) through the cache differs from git's listing now", step, d)
			}
		}
		for _, f := range []string{"b.log", "c/d.log"} {
			if got, err := repo.Ignored(ctx, f); err != nil || got != gitIgnored(t, sub, f) {
				t.Fatalf("step %d: Ignored(%s) = %v, %v; git says %v", step, f, got, err, !got)
			}
		}
	}
}
