package snapshot

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// lastChange is the oracle for a path's last change: the kernel's own
// mtime and ctime, read here rather than through statOf.
func lastChange(tb testing.TB, path string) time.Time {
	tb.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		tb.Fatal(err)
	}
	return time.Unix(0, max(st.Mtim.Nano(), st.Ctim.Nano()))
}

func TestStamp(t *testing.T) {
	dir := t.TempDir()
	a, b, gone := filepath.Join(dir, "a.go"), filepath.Join(dir, "b.go"), filepath.Join(dir, "gone.go")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("package a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Stamped well after the files' last change: a trusted stamp.
	settled := lastChange(t, a).Add(3 * RacyWindow)
	stamp := func() *Stamp {
		var s Stamp
		s.Add(settled, a, b, gone)
		return &s
	}
	s := stamp()
	if s.Len() != 3 || s.Changed(settled) || s.Changed(settled.Add(time.Hour)) {
		t.Fatalf("nothing changed: Len %d, Changed %v", s.Len(), s.Changed(settled))
	}
	// Stamping a path again keeps its first stamp.
	if err := os.WriteFile(a, []byte("package a // edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Add(settled, a)
	if s.Len() != 3 || !s.Changed(settled) {
		t.Error("an edit that changed a's size: not seen")
	}

	// A file replaced by a rename (same size): another inode.
	s = stamp()
	tmp := filepath.Join(dir, "b.tmp")
	if err := os.WriteFile(tmp, []byte("package b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, b); err != nil {
		t.Fatal(err)
	}
	if !s.Changed(settled) {
		t.Error("b replaced by a rename: not seen")
	}

	// A path that appears, and one that disappears.
	s = stamp()
	if err := os.WriteFile(gone, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !s.Changed(settled) {
		t.Error("a created path: not seen")
	}
	s = stamp()
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if !s.Changed(settled) {
		t.Error("a removed path: not seen")
	}

	// Stamped within RacyWindow of a's last change: unchanged while the
	// window lasts, changed (look at the content) once it has passed.
	last := lastChange(t, a)
	var racy Stamp
	racy.Add(last.Add(RacyWindow/2), a)
	if racy.Changed(last.Add(RacyWindow)) {
		t.Error("a racy stamp is changed before its window passed")
	}
	if !racy.Changed(last.Add(RacyWindow + time.Millisecond)) {
		t.Error("a racy stamp is unchanged after its window passed")
	}

	var none Stamp
	if none.Len() != 0 || none.Changed(time.Now()) {
		t.Error("the zero Stamp")
	}
}
