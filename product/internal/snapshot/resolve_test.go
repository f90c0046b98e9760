package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	// A loop or a name the file system refuses is a fact about the path,
	// not a failure of the repository.
	for _, rel := range []string{"loop", strings.Repeat("n", 300) + ".txt", "dir/" + strings.Repeat("n", 300)} {
		if got, err := r.Resolve(rel); !errors.Is(err, ErrUnreadable) {
			t.Errorf("Resolve(%.20q…) = %q, %v; want ErrUnreadable", rel, got, err)
		}
	}
}

func TestRepo_ResolvePath(t *testing.T) {
	r := mustResolveTree(t)
	for rel, want := range map[string]Resolution{
		"a.txt":          {Target: "a.txt"},
		"in-rel":         {Target: "dir/b.txt", Links: []string{"in-rel"}},
		"dir/up":         {Target: "a.txt", Links: []string{"dir/up"}},
		"dir-link/b.txt": {Target: "dir/b.txt", Links: []string{"dir-link"}},
	} {
		got, err := r.ResolvePath(rel)
		if err != nil || got.Target != want.Target || !slices.Equal(got.Links, want.Links) {
			t.Errorf("ResolvePath(%q) = %+v, %v; want %+v", rel, got, err, want)
		}
	}
	if _, err := r.ResolvePath("out-rel"); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("ResolvePath(out-rel) = %v; want ErrUnsafePath", err)
	}
}

func TestRepo_ReadFileMax(t *testing.T) {
	root := t.TempDir()
	MustWrite(t, root, map[string]string{"small.txt": "12345", "big.txt": "x"})
	if err := os.Truncate(filepath.Join(root, "big.txt"), 64<<20); err != nil { // sparse: nothing on disk
		t.Fatal(err)
	}
	r := MustOpen(t, root, NewMemCache())
	if data, _, err := r.ReadFileMax("small.txt", 5); err != nil || string(data) != "12345" {
		t.Errorf("ReadFileMax(small.txt, 5) = %q, %v", data, err)
	}
	for _, read := range []func() error{
		func() error { _, _, err := r.ReadFileMax("small.txt", 4); return err },
		func() error { _, _, err := r.ReadFileMax("big.txt", 1<<20); return err },
		func() error { _, err := r.FileDigestMax("big.txt", 1<<20); return err },
	} {
		var tl *FileTooLarge
		if err := read(); !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Size <= tl.Max {
			t.Errorf("over the bound: %v; want ErrTooLarge with the size", err)
		}
	}
	if d, err := r.FileDigestMax("small.txt", 5); err != nil || d == "" {
		t.Errorf("FileDigestMax(small.txt, 5) = %q, %v", d, err)
	}
}

func TestCheckRel_Accepts(t *testing.T) {
	for _, rel := range []string{"a", "a/b", ".hidden", "a/.b/c", "…/ü", "a b"} {
		if err := checkRel(rel); err != nil {
			t.Errorf("checkRel(%q) = %v", rel, err)
		}
	}
}
