package product

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
	"github.com/needle-dev/needle/product/internal/testrun"
)

// The drift rule. A lifecycle's patch is applied on the strength of a
// proof: its tests ran, and its verifier judged, on the frozen snapshot
// with the patch laid on it. Drift is whatever that proof depended on and
// no longer holds. The test phase records what its runs compiled
// (TestDependencies, bound by content id to the test evidence the
// verification cites, so to the approval): every file of the checkout
// the test binaries compiled (and the go.mod, go.sum and go.work that
// decide what they compile), with its digest in the snapshot, and, per
// directory of a compiled package, the snapshot's files in it. Apply then
// refuses (the 409: kindConflict, exit 3) when a file the patch touches
// is not its base, a compiled file changed or is gone, or a new file
// appeared in the directory of a compiled package (go would compile a new
// .go file there), naming every one; nothing is written. Other changes —
// HEAD moved with the same content, files the proof did not depend on —
// are reported in the apply's result and allowed. A change without a
// lifecycle ran no tests: its proof is the files its patch touches. Test
// evidence recorded before Needle recorded dependencies names none: then
// the whole snapshot must be unchanged.

// testDependencyFile is a compiled file with its digest in the snapshot: ""
// for a file the patch adds.
type testDependencyFile struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// testDependencyDir is the directory of a compiled package ("." for the
// root) and the snapshot's files directly in it, sorted.
type testDependencyDir struct {
	Dir   string   `json:"dir"`
	Files []string `json:"files"`
}

// ID is the content id the test evidence binds.
func (d *TestDependencies) ID() string { return mustID(tagTestDependencies, d) }

// check refuses dependencies that are not clean, sorted repository paths.
func (d *TestDependencies) check() error {
	for i, f := range d.Files {
		if checkScopePath(f.Path, scopeExact) != nil || (i > 0 && d.Files[i-1].Path >= f.Path) {
			return fmt.Errorf("dependency %s: not a clean repository path in order", showPath(f.Path))
		}
		if f.Digest != "" && !contentid.Valid(f.Digest) {
			return fmt.Errorf("dependency %s: malformed digest", f.Path)
		}
	}
	for i, dir := range d.Dirs {
		if (dir.Dir != "." && checkScopePath(dir.Dir, scopeExact) != nil) || (i > 0 && d.Dirs[i-1].Dir >= dir.Dir) {
			return fmt.Errorf("dependency directory %s: not a clean repository path in order", showPath(dir.Dir))
		}
		for j, f := range dir.Files {
			if path.Dir(f) != dir.Dir || checkScopePath(f, scopeExact) != nil || (j > 0 && dir.Files[j-1] >= f) {
				return fmt.Errorf("dependency directory %s: %s is not a file of it in order", dir.Dir, showPath(f))
			}
		}
	}
	return nil
}

// testDependencies builds the dependencies of test runs that compiled
// pkgs (paths relative to a checkout of snap with patch laid on it) in the
// modules at modules (their go.mod and go.sum, and the repository's
// go.work, decide what is compiled too).
func testDependencies(snap snapshot.Snapshot, pkgs []testrun.CompiledPackage, modules []string) *TestDependencies {
	digests := map[string]string{}
	inDir := map[string][]string{}
	for _, f := range snap.Files {
		digests[f.Path] = f.Digest
		inDir[path.Dir(f.Path)] = append(inDir[path.Dir(f.Path)], f.Path)
	}
	files, dirs := map[string]bool{}, map[string]bool{}
	for _, m := range modules {
		for _, name := range []string{path.Join(m, "go.mod"), path.Join(m, "go.sum"), "go.work", "go.work.sum"} {
			if _, ok := digests[name]; ok {
				files[name] = true
			}
		}
	}
	for _, p := range pkgs {
		dirs[p.Dir] = true
		for _, f := range p.Files {
			files[f] = true
		}
	}
	d := &TestDependencies{Head: snap.Head, Files: []testDependencyFile{}, Dirs: []testDependencyDir{}}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		d.Files = append(d.Files, testDependencyFile{Path: f, Digest: digests[f]})
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		names := slices.Clone(inDir[dir])
		slices.Sort(names)
		d.Dirs = append(d.Dirs, testDependencyDir{Dir: dir, Files: append([]string{}, names...)})
	}
	return d
}

// proofDrift is what changed since the snapshot: drifted, the files the
// proof depended on that changed or appeared (sorted; the patch's own
// files are apply's to check against their base), and notes, the changes
// it did not depend on, for the apply's result.
func (e *Engine) proofDrift(ctx context.Context, v lifecycleView, files []patchFile) (drifted, notes []string, err error) {
	deps, err := e.testDependencies(ctx, v)
	if err != nil {
		return nil, nil, err
	}
	snap, err := e.repo.Snapshot(ctx)
	if err != nil {
		return nil, nil, &Error{Op: opApply, Kind: kindIO, Err: err}
	}
	frozen := v.State.Freeze.Snapshot
	if deps == nil {
		if snap.ID != frozen {
			return nil, nil, conflictf("409 conflict: the work tree changed since snapshot %s, and the tests of lifecycle %s ran before Needle "+
				"recorded what they compiled, so any change is drift; nothing was written: restore the tree, or start the change again", frozen, v.ID)
		}
		return nil, nil, nil
	}
	touched := map[string]bool{}
	for _, f := range files {
		touched[f.Path] = true
	}
	for _, f := range deps.Files {
		if touched[f.Path] {
			continue
		}
		got, err := e.workTreeDigest(f.Path)
		if err != nil {
			return nil, nil, err
		}
		if got != f.Digest {
			drifted = append(drifted, f.Path)
		}
	}
	current := map[string][]string{}
	for _, f := range snap.Files {
		current[path.Dir(f.Path)] = append(current[path.Dir(f.Path)], f.Path)
	}
	for _, dir := range deps.Dirs {
		for _, f := range current[dir.Dir] {
			if !touched[f] && !slices.Contains(dir.Files, f) {
				drifted = append(drifted, f) // new in a compiled package
			}
		}
	}
	slices.Sort(drifted)
	drifted = slices.Compact(drifted)
	if head, err := e.repo.Head(ctx); err == nil && head != deps.Head {
		notes = append(notes, fmt.Sprintf("HEAD moved from %s to %s since the tests ran; what they depended on is unchanged", orNone(deps.Head), orNone(head)))
	}
	if len(drifted) == 0 && snap.ID != frozen {
		notes = append(notes, fmt.Sprintf("the work tree differs from snapshot %s in files the tests did not depend on", frozen))
	}
	return drifted, notes, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// testDependencies reads the dependencies of the test evidence the
// lifecycle's verification cites (nil when the evidence records none).
func (e *Engine) testDependencies(ctx context.Context, v lifecycleView) (*TestDependencies, error) {
	a, ok, err := e.store.artifactByID(ctx, v.ID, v.State.Tests.Evidence)
	if err != nil || !ok {
		return nil, orMissing(err, "the test evidence")
	}
	return a.Blobs.Dependencies, nil
}

// workTreeDigest is the digest of a work-tree file through the stat
// cache: "" when it is absent, "not a regular file" when it is anything
// but a regular file.
func (e *Engine) workTreeDigest(rel string) (string, error) {
	d, err := e.repo.FileDigest(rel)
	switch {
	case errors.Is(err, snapshot.ErrNotExist):
		return "", nil
	case errors.Is(err, snapshot.ErrNotRegular) || errors.Is(err, snapshot.ErrUnsafePath):
		return "not a regular file", nil
	case err != nil:
		return "", &Error{Op: opApply, Kind: kindIO, Err: err}
	}
	return d, nil
}
