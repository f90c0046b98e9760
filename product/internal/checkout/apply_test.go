package checkout

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestApply lays writes on a checkout: the tree holds them, the source is
// untouched, and the written tree is the new baseline (Verify passes,
// Changes is empty, Snapshot is the new tree's id).
func TestApply(t *testing.T) {
	src := MustRepo(t, map[string]string{"a.go": "package a\n", "b/b.go": "package b\n", "c.txt": "gone\n"})
	before := ReadTree(t, src)
	repo := MustOpen(t, src)
	c := MustCreate(t, repo, t.TempDir())
	base := c.Snapshot
	err := c.Apply(context.Background(), []Write{
		{Path: "a.go", Data: []byte("package a\n\nfunc A() {}\n")},
		{Path: "b/new.sh", Data: []byte("#!/bin/sh\n"), Exec: true},
		{Path: "c.txt", Delete: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ReadTree(t, c.Dir); got["a.go"] != "-rw-r--r-- package a\n\nfunc A() {}\n" || got["b/new.sh"] != "-rwxr-xr-x #!/bin/sh\n" || got["c.txt"] != "" {
		t.Errorf("checkout tree after Apply: %q", got)
	}
	if _, ok := ReadTree(t, c.Dir)["c.txt"]; ok {
		t.Error("c.txt was not deleted")
	}
	if err := c.Verify(context.Background()); err != nil {
		t.Errorf("Verify after Apply: %v", err)
	}
	if ch, err := c.Changes(context.Background()); err != nil || len(ch) != 0 {
		t.Errorf("Changes after Apply = %v, %v; want none", ch, err)
	}
	if c.Snapshot == base {
		t.Error("Snapshot did not move to the written tree")
	}
	if after := ReadTree(t, src); len(after) != len(before) || after["a.go"] != before["a.go"] || after["c.txt"] != before["c.txt"] {
		t.Errorf("the source changed: %q", after)
	}
	// A later write is a change against the new baseline.
	MustWrite(t, c.Dir, map[string]string{"a.go": "package a\n"})
	if ch, err := c.Changes(context.Background()); err != nil || len(ch) != 1 || ch[0].Path != "a.go" || ch[0].Op != OpModify {
		t.Errorf("Changes = %v, %v; want a.go modified", ch, err)
	}
}

// TestApplyRefuses: writes outside the checkout, onto git's pointer or
// through a symlink fail, and the checkout is unusable afterwards.
func TestApplyRefuses(t *testing.T) {
	src := MustRepo(t, map[string]string{"a.go": "package a\n"})
	repo := MustOpen(t, src)
	for name, w := range map[string]Write{
		"parent":     {Path: "../escape.txt", Data: []byte("x")},
		"absolute":   {Path: "/tmp/escape.txt", Data: []byte("x")},
		"pointer":    {Path: ".git", Data: []byte("gitdir: /elsewhere\n")},
		"missing":    {Path: "nothing.txt", Delete: true},
		"throughDir": {Path: "link/escape.txt", Data: []byte("x")},
	} {
		t.Run(name, func(t *testing.T) {
			c := MustCreate(t, repo, t.TempDir())
			outside := t.TempDir()
			if err := os.Symlink(outside, filepath.Join(c.Dir, "link")); err != nil {
				t.Fatal(err)
			}
			err := c.Apply(context.Background(), []Write{w})
			if !errors.Is(err, ErrApply) {
				t.Fatalf("Apply(%+v) = %v, want ErrApply", w, err)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("a write escaped the checkout: %v", entries)
			}
			if err := c.Verify(context.Background()); err == nil {
				t.Error("Verify passed on a checkout whose Apply failed")
			}
		})
	}
}

// TestReadFile reads regular files only: a symlink, even one pointing
// inside the checkout, is refused.
func TestReadFile(t *testing.T) {
	src := MustRepo(t, map[string]string{"a.go": "package a\n"})
	c := MustCreate(t, MustOpen(t, src), t.TempDir())
	if data, err := c.ReadFile("a.go"); err != nil || string(data) != "package a\n" {
		t.Errorf("ReadFile(a.go) = %q, %v", data, err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	MustWrite(t, filepath.Dir(secret), map[string]string{"secret": "do not read"})
	for name, target := range map[string]string{"out": secret, "in": "a.go"} {
		if err := os.Symlink(target, filepath.Join(c.Dir, name)); err != nil {
			t.Fatal(err)
		}
		if data, err := c.ReadFile(name); err == nil {
			t.Errorf("ReadFile(%s → %s) = %q, want an error", name, target, data)
		}
	}
	if _, err := c.ReadFile("../a.go"); err == nil {
		t.Error("ReadFile(../a.go) succeeded")
	}
}
