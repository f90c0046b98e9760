package checkout

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sources returns a source of each kind, both holding the same files.
func sources(t *testing.T) map[string]string {
	files := map[string]string{"a.txt": "a", "sub/b.txt": "b", "run.sh*": "#!/bin/sh\n"}
	plain := t.TempDir()
	MustWrite(t, plain, files)
	return map[string]string{"Copy": plain, "Worktree": MustRepo(t, files)}
}

func TestCheckout_Verify(t *testing.T) {
	ctx := context.Background()
	for name, src := range sources(t) {
		t.Run(name+"/OK", func(t *testing.T) {
			c := MustCreate(t, MustOpen(t, src), t.TempDir())
			if err := c.Verify(ctx); err != nil {
				t.Errorf("Verify = %v", err)
			}
		})
		t.Run(name+"/ErrModified", func(t *testing.T) {
			c := MustCreate(t, MustOpen(t, src), t.TempDir())
			MustWrite(t, c.Dir, map[string]string{"sub/b.txt": "worker was here"})
			err := c.Verify(ctx)
			if !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), "modify sub/b.txt") {
				t.Errorf("Verify = %v, want ErrModified naming sub/b.txt", err)
			}
		})
		t.Run(name+"/ErrModifiedMode", func(t *testing.T) {
			c := MustCreate(t, MustOpen(t, src), t.TempDir())
			if err := os.Chmod(filepath.Join(c.Dir, "a.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := c.Verify(ctx); !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), "a.txt") {
				t.Errorf("Verify = %v, want ErrModified naming a.txt", err)
			}
		})
		t.Run(name+"/ErrVerifyRemoved", func(t *testing.T) {
			c := MustCreate(t, MustOpen(t, src), t.TempDir())
			if err := c.Remove(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.Verify(ctx); !errors.Is(err, ErrVerify) {
				t.Errorf("Verify = %v, want ErrVerify", err)
			}
		})
	}
	t.Run("BoundedPaths", func(t *testing.T) {
		c := MustCreate(t, MustOpen(t, t.TempDir()), t.TempDir())
		for i := range 3 * maxReported {
			MustWrite(t, c.Dir, map[string]string{strings.Repeat("x", i+1): ""})
		}
		err := c.Verify(ctx)
		if !errors.Is(err, ErrModified) || !strings.HasSuffix(err.Error(), " and 20 more") {
			t.Errorf("Verify = %v, want ErrModified with 10 paths and 20 more", err)
		}
	})
}

func TestCheckout_Changes(t *testing.T) {
	ctx := context.Background()
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			c := MustCreate(t, MustOpen(t, src), t.TempDir())
			if got, err := c.Changes(ctx); err != nil || len(got) != 0 {
				t.Fatalf("Changes before the worker = %v, %v; want none", got, err)
			}
			worker(t, c.Dir)
			got, err := c.Changes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := []Change{
				{Path: "a.txt", Op: OpModify, Kind: KindFile, Mode: 0o644},
				{Path: "escape", Op: OpAdd, Kind: KindSymlink, Mode: os.ModeSymlink | 0o777},
				{Path: "new/c.txt", Op: OpAdd, Kind: KindFile, Mode: 0o644},
				{Path: "run.sh", Op: OpModify, Kind: KindFile, Mode: 0o644},
				{Path: "sub/.git/config", Op: OpAdd, Kind: KindFile, Mode: 0o644},
				{Path: "sub/b.txt", Op: OpDelete, Kind: KindFile},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Changes (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("GitPointer", func(t *testing.T) {
		c := MustCreate(t, MustOpen(t, MustRepo(t, map[string]string{"a.txt": "a"})), t.TempDir())
		MustWrite(t, c.Dir, map[string]string{".git": "gitdir: /elsewhere\n"})
		got, err := c.Changes(ctx)
		want := []Change{{Path: ".git", Op: OpModify, Kind: KindFile, Mode: 0o644}}
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Errorf("Changes = %v (-want +got):\n%s", err, diff)
		}
	})
}

// worker does what a patch worker might in dir: edit, add, delete, flip a
// mode, plant a symlink out of the checkout and a nested .git.
func worker(t *testing.T, dir string) {
	t.Helper()
	MustWrite(t, dir, map[string]string{"a.txt": "A", "new/c.txt": "c", "sub/.git/config": "[core]"})
	if err := os.Remove(filepath.Join(dir, "sub", "b.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
}

// TestCheckout_Isolation: whatever a worker does in the checkout, the
// active work tree stays byte-identical and keeps its snapshot.
func TestCheckout_Isolation(t *testing.T) {
	for name, src := range sources(t) {
		t.Run(name, func(t *testing.T) {
			// Dirty the source so that the overlay's copies are exercised too.
			MustWrite(t, src, map[string]string{"a.txt": "dirty", "untracked.txt": "u"})
			repo := MustOpen(t, src)
			before, id := ReadTree(t, src), MustSnapshot(t, repo)
			c := MustCreate(t, repo, t.TempDir())
			worker(t, c.Dir)
			MustWrite(t, c.Dir, map[string]string{"untracked.txt": "overwritten", "run.sh": "rm -rf /"})
			if diff := cmp.Diff(before, ReadTree(t, src)); diff != "" {
				t.Errorf("source changed (-before +after):\n%s", diff)
			}
			if got := MustSnapshot(t, repo); got != id {
				t.Errorf("source snapshot %s, was %s", got, id)
			}
		})
	}
}
