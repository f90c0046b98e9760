package codexhook

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Find reports the owned handler where Install put it, with the key and
// hash Install reported, and TrustedHash reads back what Trust recorded.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	path, config := filepath.Join(dir, "hooks.json"), filepath.Join(dir, "config.toml")
	spec := needleSpec("/opt/needle")
	if got, err := Find(path, spec); err != nil || got != nil {
		t.Fatalf("Find of a missing file = %v, %v", got, err)
	}
	writeFile(t, path, theirs)
	if got, err := Find(path, spec); err != nil || got != nil {
		t.Fatalf("Find with no owned handler = %v, %v", got, err)
	}
	res, err := Install(path, spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Find(path, spec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Found{{Trusted{Key: res.Key, Hash: res.Hash}, spec.Handler.Command}}, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
	if h, err := TrustedHash(config, res.Key); err != nil || h != "" {
		t.Errorf("TrustedHash of a missing config = %q, %v", h, err)
	}
	if _, err := Trust(config, res.Key, res.Hash); err != nil {
		t.Fatal(err)
	}
	if h, err := TrustedHash(config, res.Key); err != nil || h != res.Hash {
		t.Errorf("TrustedHash = %q, %v; want %q", h, err, res.Hash)
	}
	writeFile(t, path, "{not json")
	var fe *FileError
	if _, err := Find(path, spec); !errors.As(err, &fe) {
		t.Errorf("Find of a broken file = %v; want a *FileError", err)
	}
}
