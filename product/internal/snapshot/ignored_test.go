package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRepo_Ignored(t *testing.T) {
	ctx := context.Background()
	t.Run("Git", func(t *testing.T) {
		root := MustInit(t)
		MustWrite(t, root, map[string]string{
			".gitignore": "*.log\nbuild/\n:y\n",
			"a.txt":      "a", "t.log": "tracked though ignored", "[k].log": "tracked",
			"new.txt": "untracked", "x.log": "ignored", "build/out.o": "ignored", "sub/.git/x": "x",
			"[t].log": "ignored", "*.log": "ignored", ":y": "ignored", ":!x.log": "ignored",
		})
		MustGit(t, root, "--literal-pathspecs", "add", "-f", "--", ".gitignore", "a.txt", "t.log", "[k].log")
		MustGit(t, root, "commit", "-q", "-m", "one")
		if err := os.Symlink("build", filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
		r := MustOpen(t, root, nil)
		for rel, want := range map[string]bool{
			"x.log":       true,
			"missing.log": true, // ignore rules apply to paths not on disk
			"build":       true,
			"build/out.o": true,
			"t.log":       false, // tracked: in the snapshot whatever the patterns say
			"a.txt":       false,
			"new.txt":     false, // untracked, not ignored
			"missing.txt": false,
			".gitignore":  false,
			"sub":         false,
			".git":        true,
			".git/config": true,
			"sub/.git/x":  true,
			"sub/.git":    true,
			// Names check-ignore would read as pathspec magic or wildcards.
			"[t].log": true, // the wildcard matches the tracked t.log
			"*.log":   true,
			":y":      true,
			":!x.log": true,
			"[k].log": false,
		} {
			if got, err := r.Ignored(ctx, rel); got != want || err != nil {
				t.Errorf("Ignored(%q) = %v, %v; want %v", rel, got, err, want)
			}
		}
		var ge *GitError
		if got, err := r.Ignored(ctx, "link/out.o"); !errors.As(err, &ge) || ge.ExitCode != 128 {
			t.Errorf("Ignored(beyond a symlink) = %v, %v; want git's failure", got, err)
		}
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if got, err := r.Ignored(canceled, "x.log"); !errors.Is(err, context.Canceled) {
			t.Errorf("Ignored(canceled) = %v, %v; want context.Canceled", got, err)
		}
	})
	t.Run("Plain", func(t *testing.T) {
		root := t.TempDir()
		MustWrite(t, root, map[string]string{".gitignore": "*.log\n", "x.log": "kept", "a.txt": "a"})
		r := MustOpen(t, root, nil)
		for rel, want := range map[string]bool{
			"x.log":       false, // no git: .gitignore means nothing
			"a.txt":       false,
			"missing":     false,
			".git/config": true,
			"sub/.git/x":  true,
			".git":        true,
			".gitignore":  false,
			"sub/.gitx":   false,
		} {
			if got, err := r.Ignored(ctx, rel); got != want || err != nil {
				t.Errorf("Ignored(%q) = %v, %v; want %v", rel, got, err, want)
			}
		}
	})
	t.Run("ErrUnsafePath", func(t *testing.T) {
		r := MustOpen(t, MustInit(t), nil)
		for _, rel := range []string{"", "../x", "/etc/passwd", "a/../b", "a\\b"} {
			if got, err := r.Ignored(ctx, rel); !errors.Is(err, ErrUnsafePath) {
				t.Errorf("Ignored(%q) = %v, %v; want ErrUnsafePath", rel, got, err)
			}
		}
	})
}
