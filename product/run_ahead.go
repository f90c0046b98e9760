package product

import (
	"path"
	"strings"

	"github.com/needle-dev/needle/product/internal/testrun"
)

// A focused test's run does not depend on the type check: only whether its
// outcome counts does. So the first Go test of a proposal starts running
// while the test's package is type-checked, as its path says it will run
// (the package of its directory in the module of the nearest go.mod, with
// coverage of that package, or of a file subject's). When the type check
// then names exactly that run, its outcome is the proof's and the proof
// costs the longer of the two instead of their sum; when it names another
// run, or rejects the proposal, the early run is waited for before
// anything else runs, and its outcome does not count. It is never
// cancelled halfway: an early run cancelled so waited once, in make
// bench, eleven minutes for its sandboxed test's output to close, until
// the harness was stopped (only the caller's context cancels it). The
// early run is an ordinary run of the session — the same checkout,
// sandbox, deadline and run cache, where its outcome is kept as any run's
// of the snapshot — so it can change nothing a later run would not; it
// only starts sooner.

// runTestsAhead turns the early run on (benchmarks compare without it).
var runTestsAhead = true

// runAhead is a test run started before the type check.
type runAhead struct {
	spec testrun.Spec
	done chan struct{}
	tr   *testRun // when done
	err  error
}

// startRunAhead starts t's run as its path says it will run, on rs; nil
// when the path cannot say (no go.mod above it, a directory the go
// command skips).
func (val *validator) startRunAhead(rs *runSession, t testRef) *runAhead {
	dir := path.Dir(t.Path)
	cover := dir
	if s := val.v.Proposal.Subject; s.Kind == subjectFile {
		cover = path.Dir(s.Name)
	}
	mod, ok := val.moduleDirOf(dir)
	if !runTestsAhead || !ok || skippedDir(dir) || skippedDir(cover) || !inDir(mod, cover) {
		return nil
	}
	ra := &runAhead{
		spec: testrun.Spec{Dir: mod, Package: relPackage(mod, dir), Test: t.Name,
			Cover: []string{relPackage(mod, cover)}, Deadline: val.vs.tests.Deadline},
		done: make(chan struct{}),
	}
	go func() {
		defer close(ra.done)
		ra.tr, ra.err = rs.run(val.ctx, ra.spec, "")
	}()
	return ra
}

// take returns the early run's outcome when it is spec's (and the
// repository has a go.mod); otherwise it waits for the early run to end
// and returns nil. Either way the session is the caller's alone
// afterwards.
func (ra *runAhead) take(spec testrun.Spec, moduleless string) (*testRun, error) {
	if ra == nil {
		return nil, nil
	}
	same := moduleless == "" && ra.spec.Dir == spec.Dir && ra.spec.Package == spec.Package &&
		ra.spec.Test == spec.Test && ra.spec.Deadline == spec.Deadline &&
		strings.Join(ra.spec.Cover, "\x00") == strings.Join(spec.Cover, "\x00")
	if !same {
		ra.wait()
		return nil, nil
	}
	<-ra.done
	return ra.tr, ra.err
}

// wait waits for the early run to end (nil: nothing to wait for).
func (ra *runAhead) wait() {
	if ra != nil {
		<-ra.done
	}
}

// moduleDirOf is the nearest directory at or above dir with a go.mod in
// the snapshot, as the type checker finds it; false when there is none.
func (val *validator) moduleDirOf(dir string) (string, bool) {
	for d := dir; ; d = path.Dir(d) {
		if _, err := val.repo.FileDigest(path.Join(d, "go.mod")); err == nil {
			return d, true
		}
		if d == "." {
			return "", false
		}
	}
}

// skippedDir reports whether the go command leaves dir out of a module's
// packages: a testdata or vendor directory, or one whose name starts with
// "." or "_".
func skippedDir(dir string) bool {
	for _, elem := range strings.Split(dir, "/") {
		if elem == "testdata" || elem == "vendor" || elem != "." && (strings.HasPrefix(elem, ".") || strings.HasPrefix(elem, "_")) {
			return true
		}
	}
	return false
}

// inDir reports whether rel lies at or below dir (both slash-separated and
// relative to the repository; "." is its root).
func inDir(dir, rel string) bool {
	return dir == "." || rel == dir || strings.HasPrefix(rel, dir+"/")
}
