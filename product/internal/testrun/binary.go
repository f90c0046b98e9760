package testrun

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"lukechampine.com/blake3"

	"github.com/needle-dev/needle/product/internal/procdir"
)

// testBinary is a test binary the go command built, outside the sandbox,
// into the Runner's binary directory, which no sandbox can write: every
// run of it executes exactly the bytes digest names.
type testBinary struct {
	path   string
	digest string // hex BLAKE3-256 of the file
	users  int    // runs using it now: never evicted under them
}

// binCache holds a Runner's test binaries by source key (binKey), at most
// maxBinaries of them, the least recently used evicted first, and the
// baselines and outcomes proven with them: what a later run of the same
// binary does not need to run again.
type binCache struct {
	mu    sync.Mutex
	dir   string // this process's directory of binaries (procdir): swept once the process is gone
	bins  map[string]*testBinary
	order []string // keys, least recently used first
	// building serializes the builds of one key: a second run of the
	// same package waits for the first's binary instead of linking it
	// again.
	building map[string]*sync.Mutex
	// baselines are baseline profiles by baseKey; proven are outcomes by
	// memoKey, each with a lock a second run of the same key waits on.
	baselines map[string]*Profile
	proven    map[string]*memoEntry
}

// maxBinaries bounds the test binaries a Runner keeps on disk.
const maxBinaries = 32

// memoEntry is one outcome a Runner proved, or is proving: a run of the
// same key waits on mu for it rather than proving it again.
type memoEntry struct {
	mu  sync.Mutex
	res *Result
}

func (c *binCache) init() {
	if c.bins == nil {
		c.bins = map[string]*testBinary{}
		c.building = map[string]*sync.Mutex{}
		c.baselines = map[string]*Profile{}
		c.proven = map[string]*memoEntry{}
	}
}

// sourceDigest names what a test binary is built from, wherever the
// checkout lies: the module, the package, the cover packages, the
// toolchain, the module mode, and the path and content of every file of
// the checkout the binary compiles, with go.mod, go.sum and
// vendor/modules.txt. A file a test changed changes it.
func (x *execution) sourceDigest(goVersion string) (string, error) {
	h := blake3.New(32, nil)
	field := func(s string) { fmt.Fprintf(h, "%d:%s\n", len(s), s) }
	field(x.spec.dir())
	field(x.spec.Package)
	field(goVersion)
	field(strconv.FormatBool(x.modfile == "")) // vendored, or not a module
	field(strings.Join(x.res.CoverPackages, ","))
	var files []string
	for _, p := range x.res.Packages {
		files = append(files, p.Files...)
		// A source file added to the package's directory since the
		// listing (by a test: Prepared skips the listing) changes it too.
		names, err := sourceNames(filepath.Join(x.spec.Checkout, filepath.FromSlash(p.Dir)))
		if err != nil {
			return "", err
		}
		field(p.Dir + ": " + strings.Join(names, "/"))
	}
	for _, f := range []string{"go.mod", "go.sum", "vendor/modules.txt"} {
		files = append(files, pathJoin(x.spec.dir(), f))
	}
	for _, f := range files {
		field(f)
		data, err := os.ReadFile(filepath.Join(x.spec.Checkout, filepath.FromSlash(f)))
		switch {
		case errors.Is(err, os.ErrNotExist):
			field("\x00absent")
		case err != nil:
			return "", err
		default:
			field(string(data))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sourceExts are the extensions of the files the go command may compile
// or link into a package (go/build's).
var sourceExts = []string{".go", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".m", ".s", ".S", ".sx",
	".f", ".F", ".for", ".f90", ".swig", ".swigcxx", ".syso"}

// sourceNames are the names of dir's files the go command may build,
// sorted (os.ReadDir's order).
func sourceNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(sourceExts, filepath.Ext(e.Name())) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// binKey names a test binary: its source, and the checkout's directory,
// since the binary records its source paths (which a test may read
// through runtime.Caller).
func binKey(checkout, source string) string {
	h := blake3.New(32, nil)
	fmt.Fprintf(h, "%d:%s\n%s", len(checkout), checkout, source)
	return hex.EncodeToString(h.Sum(nil))
}

func pathJoin(dir, f string) string {
	if dir == "" || dir == "." {
		return f
	}
	return dir + "/" + f
}

// fileDigest is the hex BLAKE3-256 of the file at name.
func fileDigest(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := blake3.New(32, nil)
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// binary returns the test binary of the run's package, built once per
// binKey (key): a second test of the same package on the same source reuses it,
// neither listing (with Spec.Prepared) nor linking again. A kept binary
// is digested again before it is used: a file that no longer has its
// digest is built anew (fail closed). ok is false when the run failed
// (its Status set); bin is nil with ok true when the package has no test
// files (the go command builds no binary): NoTest. release must be called
// once the run no longer needs the binary.
func (x *execution) binary(ctx context.Context, key string) (bin *testBinary, release func(), ok bool) {
	c := &x.r.bins
	c.mu.Lock()
	c.init()
	lock := c.building[key]
	if lock == nil {
		lock = &sync.Mutex{}
		c.building[key] = lock
	}
	c.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	if bin := x.r.keptBinary(key); bin != nil {
		x.res.BinaryDigest = bin.digest
		return bin, func() { x.r.releaseBinary(bin) }, true
	}
	dir, err := x.r.binDir()
	if err != nil {
		x.fail(Errored, "the test binaries' directory: "+err.Error())
		return nil, nil, false
	}
	out := filepath.Join(dir, key[:32]+".test")
	_ = os.Remove(out) // a binary that failed its digest
	args := x.buildArgs(out)
	skey := sharedKey(key, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == out }))
	if digest := x.r.linkShared(skey, out); digest != "" { // an earlier process's (sharedbin.go)
		bin = &testBinary{path: out, digest: digest, users: 1}
		x.r.keepBinary(key, bin)
		x.res.BinaryDigest = digest
		return bin, func() { x.r.releaseBinary(bin) }, true
	}
	if !x.build(ctx, args) {
		return nil, nil, false
	}
	x.res.Built = true
	if _, err := os.Stat(out); errors.Is(err, os.ErrNotExist) {
		return nil, func() {}, true // no test files: no binary
	}
	digest, err := fileDigest(out)
	if err != nil {
		x.fail(Errored, "digest the test binary: "+err.Error())
		return nil, nil, false
	}
	bin = &testBinary{path: out, digest: digest, users: 1}
	x.r.keepBinary(key, bin)
	x.r.keepShared(skey, out, digest)
	x.res.BinaryDigest = digest
	return bin, func() { x.r.releaseBinary(bin) }, true
}

// buildArgs are the go command's arguments that build the test binary
// with coverage of the cover packages into out.
func (x *execution) buildArgs(out string) []string {
	return []string{"test", "-c", "-json", "-o", out, "-vet=off",
		"-covermode=count", "-coverpkg=" + strings.Join(x.res.CoverPackages, ","), x.spec.Package}
}

// build has the go command, outside the sandbox, build the test binary
// (buildArgs): go test -c, which runs none of the module's code.
func (x *execution) build(ctx context.Context, args []string) bool {
	maxOut := x.r.MaxOutput
	if maxOut <= 0 {
		maxOut = 1 << 20
	}
	log := newEventLog(maxOut)
	x.r.countGo()
	pr := x.r.coldBuild(ctx, classTest, x.goProc(log.read, args...).runner(ctx))
	switch {
	case pr.killed:
		x.fail(TimedOut, "deadline passed while building the test binary")
	case pr.err != nil:
		x.fail(Errored, "go test -c: "+pr.err.Error())
	case pr.exitCode != 0 || log.build:
		out := strings.TrimSpace(log.output.String() + "\n" + string(pr.stderr))
		x.fail(BuildFailed, "the test binary did not build: "+tail(out, 2048))
	default:
		return true
	}
	return false
}

// keptBinary returns the binary kept for key, counted as in use, after
// checking its file still has its digest; nil when there is none (or it
// was dropped for a digest that no longer holds).
func (r *Runner) keptBinary(key string) *testBinary {
	c := &r.bins
	c.mu.Lock()
	bin := c.bins[key]
	if bin != nil {
		bin.users++
		c.touch(key)
	}
	c.mu.Unlock()
	if bin == nil {
		return nil
	}
	if d, err := fileDigest(bin.path); err == nil && d == bin.digest {
		return bin
	}
	c.mu.Lock()
	bin.users--
	if c.bins[key] == bin {
		delete(c.bins, key)
		c.order = removeString(c.order, key)
	}
	c.mu.Unlock()
	return nil
}

// keepBinary records bin under key and evicts the least recently used
// binaries no run is using past maxBinaries, removing their files.
func (r *Runner) keepBinary(key string, bin *testBinary) {
	c := &r.bins
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bins[key] = bin
	c.touch(key)
	for i := 0; len(c.bins) > maxBinaries && i < len(c.order); {
		k := c.order[i]
		if old := c.bins[k]; old.users == 0 {
			_ = os.Remove(old.path)
			delete(c.bins, k)
			c.order = append(c.order[:i], c.order[i+1:]...)
			continue
		}
		i++
	}
}

func (r *Runner) releaseBinary(bin *testBinary) {
	r.bins.mu.Lock()
	bin.users--
	r.bins.mu.Unlock()
}

// touch makes key the most recently used; c.mu is held.
func (c *binCache) touch(key string) {
	c.order = append(removeString(c.order, key), key)
}

func removeString(list []string, s string) []string {
	for i, x := range list {
		if x == s {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// binDir is this process's directory of test binaries, made on first use
// in CacheDir/bins (procdir: the first Runner to use the directory after
// this process is gone sweeps it). It lies outside every writable root of
// the sandbox.
func (r *Runner) binDir() (string, error) {
	c := &r.bins
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir != "" {
		return c.dir, nil
	}
	parent := filepath.Join(r.CacheDir, "bins")
	_ = procdir.Sweep(parent) // best effort: what stays is swept next time
	dir, err := procdir.Make(parent, "bins")
	if err != nil {
		return "", err
	}
	c.dir = dir
	return dir, nil
}

// test2json returns the path of the toolchain's test2json, which turns a
// test binary's -test.v=test2json output into go test -json's events,
// exactly as go test does. The go command builds it into the shared build
// cache on first use (outside the sandbox), once per Runner.
func (r *Runner) test2json(ctx context.Context) (string, error) {
	return r.t2j.get(ctx, func(ctx context.Context) (string, error) {
		env := r.goEnv("")
		where := func() (string, error) {
			var out bytes.Buffer
			res := proc{argv: []string{r.Go, "tool", "-n", "test2json"}, dir: r.CacheDir, env: env, maxErr: 4096,
				stdout: func(rd io.Reader) error { _, err := io.Copy(&out, io.LimitReader(rd, 4096)); return err }}.run(ctx)
			if res.err != nil || res.exitCode != 0 {
				return "", fmt.Errorf("go tool -n test2json: %v %s", res.err, res.stderr)
			}
			return strings.TrimSpace(out.String()), nil
		}
		p, err := where()
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(p); err != nil {
			// Not built yet: running it once builds it into the cache.
			res := r.coldBuild(ctx, classTest, proc{argv: []string{r.Go, "tool", "test2json", "-h"}, dir: r.CacheDir, env: env, maxErr: 4096}.runner(ctx))
			if res.err != nil {
				return "", fmt.Errorf("go tool test2json: %v %s", res.err, res.stderr)
			}
			if p, err = where(); err != nil {
				return "", err
			}
		}
		if fi, err := os.Stat(p); err != nil || !filepath.IsAbs(p) || fi.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("go tool -n test2json named %q, not an executable file", p)
		}
		return p, nil
	})
}

// runBinary runs the test binary in the sandbox under the launcher, in the
// package's directory (as go test does), with the -run pattern, writing
// its coverage profile to profile (in the box: the sandbox may write
// only there and in the checkout; the profile is read bounded and parsed
// like any untrusted input). Its output, stdout and stderr merged as go
// test merges them, goes through test2json into the event log.
func (x *execution) runBinary(ctx context.Context, bin *testBinary, pattern, profile string) (*eventLog, *procResult) {
	maxOut := x.r.MaxOutput
	if maxOut <= 0 {
		maxOut = 1 << 20
	}
	log := newEventLog(maxOut)
	t2j, err := x.r.test2json(ctx)
	if err != nil {
		x.fail(Errored, err.Error())
		return nil, nil
	}
	// A profile a test left at the path (the box is writable to it) must
	// never pass for this run's: a binary that cannot write its profile
	// still exits 0.
	if err := os.Remove(profile); err != nil && !errors.Is(err, os.ErrNotExist) {
		x.fail(Errored, err.Error())
		return nil, nil
	}
	covdir, err := os.MkdirTemp(filepath.Join(x.box, "tmp"), "gocover-")
	if err != nil {
		x.fail(Errored, err.Error())
		return nil, nil
	}
	argv, err := x.sandboxed(x.pkgDir, []string{bin.path, "-test.run=" + pattern, "-test.count=1", "-test.v=test2json",
		"-test.paniconexit0", "-test.timeout=" + x.spec.Deadline.String(),
		"-test.coverprofile=" + profile, "-test.gocoverdir=" + covdir})
	if err != nil {
		x.fail(Errored, err.Error())
		return nil, nil
	}
	// As go test -cover runs a test binary: GOCOVERDIR as well as the flag
	// (a tool the test builds and runs writes its coverage there instead of
	// warning on stderr), and PWD naming the package's directory.
	env := append(append([]string{}, x.env...), "GOCACHE="+filepath.Join(x.box, "gocache"), "GOCOVERDIR="+covdir, "PWD="+x.pkgDir)
	if x.cacheprog != "" {
		env = append(env, "GOCACHEPROG="+x.cacheprog)
	}
	pr := proc{argv: argv, dir: x.pkgDir, env: env, maxErr: 64 << 10, sandbox: x.box, mergeErr: true,
		stdout: func(rd io.Reader) error { return convert(ctx, t2j, x.importPath, rd, log.read) }}.run(ctx)
	if pr.err != nil && !pr.killed {
		x.fail(Errored, "run the test binary: "+pr.err.Error())
		return nil, nil
	}
	return log, &pr
}

// convert pipes a test binary's output through test2json into read.
func convert(ctx context.Context, t2j, pkg string, in io.Reader, read func(io.Reader) error) error {
	cmd := exec.CommandContext(ctx, t2j, "-p", pkg)
	cmd.Stdin = in
	cmd.Env = []string{}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	rerr := read(out)
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if rerr != nil {
		return rerr
	}
	if werr != nil && ctx.Err() == nil {
		return fmt.Errorf("test2json: %w", werr)
	}
	return nil
}

// goCalls counts the go commands that built a test binary, for the
// tests: a second test of a package must not build again.
func (r *Runner) countGo() { r.builds.Add(1) }

// Builds is how many test binaries this Runner has had the go command
// build (go test -c): runs that reused a binary add none.
func (r *Runner) Builds() int64 { return r.builds.Load() }

// baseKey names a baseline: the binary's digest and the caller's word for
// the checkout's content (Spec.Snapshot). The binary fixes the code
// package initialization and TestMain run; Snapshot fixes the files they
// may read. Without a Snapshot no baseline is kept.
func baseKey(digest, snapshot string) string {
	return strconv.Quote(digest) + " " + strconv.Quote(snapshot)
}

// memoKey names an outcome: the binary, the test, the cover packages, the
// deadline and limits, and Spec.Snapshot.
func memoKey(spec Spec, digest string, cover []string, lim Limits) string {
	return strings.Join([]string{strconv.Quote(digest), strconv.Quote(spec.Test), strconv.Quote(strings.Join(cover, ",")),
		spec.Deadline.String(), strconv.Quote(fmt.Sprint(lim)), strconv.Quote(spec.Snapshot)}, " ")
}

// parallel is how many runs a Runner executes at once: Runner.Parallel,
// else the number of CPUs.
func (r *Runner) parallel() int {
	if r.Parallel > 0 {
		return r.Parallel
	}
	return runtime.NumCPU()
}

// acquire takes one of the Runner's Parallel slots, false when ctx ends
// first.
func (r *Runner) acquire(ctx context.Context) bool {
	r.semOnce.Do(func() { r.sem = make(chan struct{}, r.parallel()) })
	select {
	case r.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *Runner) releaseSlot() { <-r.sem }

// memo returns the entry of an outcome, made on first use.
func (r *Runner) memo(key string) *memoEntry {
	c := &r.bins
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	e := c.proven[key]
	if e == nil {
		e = &memoEntry{}
		c.proven[key] = e
	}
	return e
}

// baseline returns the baseline kept under key, nil for none.
func (r *Runner) baseline(key string) *Profile {
	c := &r.bins
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	return c.baselines[key]
}

func (r *Runner) keepBaseline(key string, p *Profile) {
	c := &r.bins
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	c.baselines[key] = p
}
