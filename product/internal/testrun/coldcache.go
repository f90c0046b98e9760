package testrun

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"

	"github.com/needle-dev/needle/product/internal/filelock"
)

// Build classes: each takes its turns on a cold cache on its own. Both
// build the standard library with the same flags, so what one compiled
// the other reuses; only CGO_ENABLED=0 (the own programs are static) gives
// a few packages (net, os/user) an action of their own. The own programs
// are built without -trimpath for that reason: with it, a new data
// directory's first proof compiled the standard library twice (the
// launcher's build took 8.7 s of a 22 s cold proof; without it the cold
// proof ÷ a bare cold go test -cover went from 2.095× to 1.149× in
// needlebench experiment proof-latency).
const (
	classTest = "test" // go test -c with coverage, go tool test2json, a scenario's go build
	classOwn  = "own"  // the launcher, the probe and needle-cacheprog: CGO_ENABLED=0
)

// coldBuild runs build, alone among the builds of its class into the
// same cache until one of them has completed with this toolchain.
//
// The go command shares no work in flight: two builds into an empty
// GOCACHE, in one process or two, both compile the standard library
// (profiled on make bench with strace: at the start four go commands
// compiled runtime and the rest of the standard library at once, 114
// compiles of actions another was compiling). So until the cache is warm for the class, each build holds
// CacheDir/warm.lock (an flock: another process's Runner on the same
// cache waits too, and a crashed holder leaves no lock) and, once one
// completes, writes CacheDir/warm-HASH (of the toolchain and the class);
// from then on builds of the class run side by side, as before. A build
// that failed warmed the cache as far as it got and counts; one cut short
// (killed, not started) does not. Waiting counts against the caller's ctx.
func (r *Runner) coldBuild(ctx context.Context, class string, build func() procResult) procResult {
	version, _ := r.goVersion(ctx) // "" when the toolchain is broken: the build says why
	sum := sha256.Sum256([]byte(version + "\x00" + class))
	marker := filepath.Join(r.CacheDir, "warm-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(marker); err == nil {
		return build()
	}
	r.coldWaits.Add(1)
	unlock, err := filelock.Lock(ctx, filepath.Join(r.CacheDir, "warm.lock"))
	r.coldWaits.Add(-1)
	if err != nil {
		if ctx.Err() != nil {
			return procResult{exitCode: -1, killed: true, err: context.Cause(ctx)}
		}
		return build() // no lock (a read-only cache directory?): build as before
	}
	defer unlock()
	if _, err := os.Stat(marker); err == nil {
		return build()
	}
	res := build()
	if res.err == nil && !res.killed {
		if f, err := os.OpenFile(marker, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
			f.Close()
		}
	}
	return res
}

// cacheprogSource is needle-cacheprog (cacheprog/main.go), the GOCACHEPROG
// of the go commands a test runs in the sandbox: the shared cache read,
// the run's box written.
//
//go:embed cacheprog/main.go
var cacheprogSource string

// cacheProgram returns the GOCACHEPROG value for a run whose box is box:
// needle-cacheprog over the shared cache, keeping what is built in
// box/gocacheprog. "" when it could not be built, or a path cannot be
// quoted for the go command: the test's go command then builds into the
// box's GOCACHE alone, as it did before.
func (x *execution) cacheProgram(ctx context.Context) string {
	bin, err := x.r.cacheProg.get(ctx, func(ctx context.Context) (string, error) {
		return x.r.buildOwn(ctx, "cacheprog", "needlecacheprog", "needle-cacheprog", cacheprogSource)
	})
	if err != nil {
		return ""
	}
	var fields []string
	for _, p := range []string{bin, filepath.Join(x.r.CacheDir, "go-build"), filepath.Join(x.box, "gocacheprog")} {
		q, err := execFlag(p)
		if err != nil {
			return ""
		}
		fields = append(fields, q)
	}
	return strings.Join(fields, " ")
}
