package product

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
)

// Apply keeps each file's mode: a 0600 file stays 0600 (it was 0644 after
// the apply, world-readable); a new file gets the mode the patch says.
func TestApply_KeepsModes(t *testing.T) {
	ctx := context.Background()
	f := newLifecycleFixture(t, &fakeScript{Tests: []lifecycle.TestOutcome{lifecycle.TestPassed}, Verdicts: []string{fakeVerified},
		Executable: []string{"tools/run.sh"}})
	repo := f.te.repo
	f.script.Patches = []map[string]string{{
		"search.go":    splitCommented(t, repo, "// splitCRLF cuts data at CRLF (\\r\\n) or LF line ends."),
		"tools/run.sh": "#!/bin/sh\nexec go test ./...\n",
		"tools/README": "Scripts.\n",
	}}
	search := filepath.Join(repo, "search.go")
	if err := os.Chmod(search, 0o600); err != nil {
		t.Fatal(err)
	}
	req := f.request()
	req.Scopes = append(req.Scopes, pathScope{Path: "tools", Kind: scopeSubtree})
	d, err := f.te.StartLifecycle(ctx, LifecycleStart{Request: req, TestPlans: []string{f.plan}})
	if err != nil {
		t.Fatal(err)
	}
	d = f.run(d.ID)
	f.approve(d)
	if _, err := f.te.Apply(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]fs.FileMode{"search.go": 0o600, "tools/run.sh": 0o755, "tools/README": 0o644} {
		fi, err := os.Stat(filepath.Join(repo, p))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s after apply: %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
}

func TestWriteMode(t *testing.T) {
	for _, c := range []struct {
		existed bool
		mode    fs.FileMode
		exec    bool
		want    fs.FileMode
	}{
		{true, 0o600, false, 0o600},
		{true, 0o640, false, 0o640},
		{true, 0o755, true, 0o755},
		{true, 0o700, true, 0o700},
		{true, 0o644, true, 0o755}, // the patch makes it executable where it is readable
		{true, 0o600, true, 0o700},
		{true, 0o755, false, 0o644}, // the patch takes the executable bits off
		{false, 0, false, 0o644},
		{false, 0, true, 0o755},
	} {
		if got := writeMode(c.existed, c.mode, c.exec); got != c.want {
			t.Errorf("writeMode(%v, %v, %v) = %v, want %v", c.existed, c.mode, c.exec, got, c.want)
		}
	}
}
