package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: Write and Replace replace a file with the content and mode
// asked for and leave no temporary file behind.
func TestWrite(t *testing.T) {
	for name, write := range map[string]func(string, []byte, os.FileMode) error{"Write": Write, "Replace": Replace} {
		t.Run(name, func(t *testing.T) { testWrite(t, write) })
	}
}

func testWrite(t *testing.T, write func(string, []byte, os.FileMode) error) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := write(path, []byte("new content"), 0o640); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != "new content" {
		t.Fatalf("read back %q, %v", data, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, %v; want 0640", fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v (%v); want only f", entries, err)
	}
}

// TestWrite_FailureKeepsOld: a write that cannot complete (the target is a
// directory, so the rename fails) leaves the target and the directory as
// they were.
func TestWrite_FailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "d")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("new"), 0o600); err == nil {
		t.Fatal("replaced a non-empty directory")
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || !entries[0].IsDir() {
		t.Fatalf("directory holds %v (%v); want only d", entries, err)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("wrote into a missing directory")
	}
}
