package fsinfo

import (
	"os"
	"testing"
)

// TestOf_Writable: a fresh temporary directory is none of full, read-only
// or denied. (The failing states need a file system made to fail; the
// testscripts tier builds one in a user and mount namespace.)
func TestOf_Writable(t *testing.T) {
	if got := Of(t.TempDir()); got != (State{}) {
		t.Errorf("a fresh temporary directory: %+v", got)
	}
}

// TestOf_Denied: a directory without write permission is denied, unless
// this process ignores permissions (root).
func TestOf_Denied(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	_, probeErr := os.Create(dir + "/probe") // the kernel's own answer
	if got := Of(dir); got.Denied != (probeErr != nil) {
		t.Errorf("Of(%s).Denied = %v; creating a file there: %v", dir, got.Denied, probeErr)
	}
}
