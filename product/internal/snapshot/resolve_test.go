package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// mustResolveTree returns a repo whose root holds a.txt, dir/b.txt and
// symlinks of every kind, next to an outside directory with a secret.
func mustResolveTree(t *testing.T) *Repo {
	t.Helper()
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	MustWrite(t, root, map[string]string{"a.txt": "a", "dir/b.txt": "b"})
	MustWrite(t, outside, map[string]string{"secret": "s"})
	links := map[string]string{
		"in-rel":      "dir/b.txt",
		"dir/up":      "../a.txt",
		"in-abs":      filepath.Join(root, "a.txt"),
		"dir-link":    "dir",
		"out-rel":     "../outside/secret",
		"out-abs":     filepath.Join(outside, "secret"),
		"out-missing": "../outside/none",
		"out-dir":     "../outside",
		"loop":        "loop",
		"dangling":    "nowhere",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	return MustOpen(t, root, nil)
}

func TestRepo_Resolve(t *testing.T) {
	r := mustResolveTree(t)
	t.Run("OK", func(t *testing.T) {
		for rel, want := range map[string]string{
			"a.txt":          "a.txt",
			"dir/b.txt":      "dir/b.txt",
			"in-rel":         "dir/b.txt",
			"dir/up":         "a.txt",
			"in-abs":         "a.txt",
			"dir-link/b.txt": "dir/b.txt",
		} {
			got, err := r.Resolve(rel)
			if wantAbs := filepath.Join(r.Root(), want); err != nil || got != wantAbs {
				t.Errorf("Resolve(%q) = %q, %v; want %q", rel, got, err, wantAbs)
			}
		}
	})
	cases := []struct {
		rel  string
		want error
	}{
		{"", ErrUnsafePath},
		{"../x", ErrUnsafePath},
		{"..", ErrUnsafePath},
		{"/etc/passwd", ErrUnsafePath},
		{"a/../../x", ErrUnsafePath},
		{"./a.txt", ErrUnsafePath},
		{"dir/", ErrUnsafePath},
		{"dir//b.txt", ErrUnsafePath},
		{`dir\b.txt`, ErrUnsafePath},
		{"out-rel", ErrUnsafePath},
		{"out-abs", ErrUnsafePath},
		{"out-missing", ErrUnsafePath}, // refused before looking: no probing outside
		{"out-dir/secret", ErrUnsafePath},
		{"dir", ErrNotRegular},
		{"dir-link", ErrNotRegular},
		{".", ErrNotRegular},
		{"missing.txt", ErrNotExist},
		{"dir/missing.txt", ErrNotExist},
		{"a.txt/x", ErrNotExist},
		{"dangling", ErrNotExist},
	}
	for _, tc := range cases {
		t.Run("Err/"+tc.rel, func(t *testing.T) {
			got, err := r.Resolve(tc.rel)
			if !errors.Is(err, tc.want) {
				t.Errorf("Resolve(%q) = %q, %v; want %v", tc.rel, got, err, tc.want)
			}
		})
	}
	t.Run("ErrLoop", func(t *testing.T) {
		if got, err := r.Resolve("loop"); err == nil {
			t.Errorf("Resolve(loop) = %q, nil; want an error", got)
		}
	})
}

func TestCheckRel_Accepts(t *testing.T) {
	for _, rel := range []string{"a", "a/b", ".hidden", "a/.b/c", "…/ü", "a b"} {
		if err := checkRel(rel); err != nil {
			t.Errorf("checkRel(%q) = %v", rel, err)
		}
	}
}
