package product

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/procdir"
	"github.com/needle-dev/needle/product/internal/runlock"
)

// What needle gc removes from a data directory: only what a process made
// for itself and left behind when it ended — the disposable checkouts of
// workers and test runs (DATA_DIR/checkouts), the private CODEX_HOMEs of
// evidence workers (DATA_DIR/codex-homes), the scratch of sandboxed test
// runs (DATA_DIR/testrun/*/runs) and the test binaries a test runner kept
// (DATA_DIR/testrun/*/bins) whose creating process is gone, as
// its marker or name records it (pid and start time; procdir.Alive counts
// an uncertain process as alive). No certificate, lifecycle, approval or
// apply refers to any of them: those are rows of the store, which gc never
// opens, and a lifecycle's checkouts belong to the process running its
// phase. The shared build cache, the store and everything else stay.

// gcKind names what a removed item was.
type gcKind string

const (
	gcCheckout    gcKind = "checkout"      // a disposable checkout and its marker
	gcCodexHome   gcKind = "codex_home"    // an evidence worker's private CODEX_HOME
	gcTestScratch gcKind = "test_scratch"  // a sandboxed test run's scratch directory
	gcTestBins    gcKind = "test_binaries" // the test binaries a process's test runner kept
)

// GCItem is one thing gc removed (or, in a dry run, would remove).
type GCItem struct {
	Kind  gcKind `json:"kind"`
	Path  string `json:"path"` // relative to the data directory
	Bytes int64  `json:"bytes"`
	Files int64  `json:"files"`

	remove func(context.Context) error
}

// GCReport is what needle gc removed, or would remove: the items and
// their totals.
type GCReport struct {
	DryRun bool     `json:"dry_run"`
	Items  []GCItem `json:"items"`
	Bytes  int64    `json:"bytes"`
	Files  int64    `json:"files"`
}

// collectGarbage removes from dataDir what no process, row or runtime
// needs (see above); with dryRun it only lists it. It holds the profile
// lock throughout, so it refuses while a runtime serves dataDir and no
// runtime starts meanwhile; any listing it cannot read fails it before
// anything is removed.
func collectGarbage(ctx context.Context, dataDir string, dryRun bool) (GCReport, error) {
	rep := GCReport{DryRun: dryRun, Items: []GCItem{}}
	if fi, err := os.Stat(filepath.Join(dataDir, storeFileName)); err != nil || !fi.Mode().IsRegular() {
		return rep, &Error{Op: "open store", Kind: kindNotFound, Err: fmt.Errorf("no Needle store in %s", dataDir)}
	}
	lock, err := runlock.Acquire(filepath.Join(dataDir, lockFileName), time.Now())
	if errors.Is(err, runlock.ErrHeld) {
		return rep, &Error{Op: "lock data directory", Kind: kindConflict,
			Err: fmt.Errorf("a runtime serves %s (%w): stop it first; gc removes nothing while one runs", dataDir, err)}
	}
	if err != nil {
		return rep, &Error{Op: "lock data directory", Kind: kindIO, Err: err}
	}
	defer lock.Release()
	items, err := garbage(dataDir)
	if err != nil {
		return rep, &Error{Op: "list garbage", Kind: kindIO, Err: err}
	}
	for _, it := range items {
		if !dryRun {
			if err := it.remove(ctx); err != nil {
				return rep, &Error{Op: "remove " + it.Path, Kind: kindIO, Err: err}
			}
		}
		rep.Items = append(rep.Items, it)
		rep.Bytes += it.Bytes
		rep.Files += it.Files
	}
	return rep, nil
}

// garbage lists, with their sizes, the items of dataDir whose creating
// process is gone.
func garbage(dataDir string) ([]GCItem, error) {
	// Checkouts are listed by their canonical paths; so is everything,
	// so that each is named relative to the data directory.
	dataDir, err := filepath.EvalSymlinks(dataDir)
	if err != nil {
		return nil, err
	}
	var items []GCItem
	// The workers' checkouts, and the test checkouts of the default
	// test cache (DATA/testrun/<repository>/checkouts).
	parents, err := filepath.Glob(filepath.Join(dataDir, "testrun", "*", testCheckouts))
	if err != nil {
		return nil, err
	}
	var cos []*checkout.Checkout
	for _, parent := range append([]string{filepath.Join(dataDir, "checkouts")}, parents...) {
		stale, err := checkout.Stale(parent)
		if err != nil {
			return nil, err
		}
		cos = append(cos, stale...)
	}
	for _, co := range cos {
		it, err := measure(dataDir, gcCheckout, co.Dir, co.Marker())
		if err != nil {
			return nil, err
		}
		it.remove = co.Remove
		items = append(items, it)
	}
	dirs := []struct {
		kind   gcKind
		parent string
	}{{gcCodexHome, filepath.Join(dataDir, "codex-homes")}}
	for _, sub := range []struct {
		kind gcKind
		name string
	}{{gcTestScratch, "runs"}, {gcTestBins, "bins"}} {
		parents, err := filepath.Glob(filepath.Join(dataDir, "testrun", "*", sub.name))
		if err != nil {
			return nil, err
		}
		for _, r := range parents {
			dirs = append(dirs, struct {
				kind   gcKind
				parent string
			}{sub.kind, r})
		}
	}
	for _, d := range dirs {
		more, err := deadDirs(dataDir, d.kind, d.parent)
		if err != nil {
			return nil, err
		}
		items = append(items, more...)
	}
	return items, nil
}

// deadDirs lists the directories procdir made in parent for processes
// that are gone.
func deadDirs(dataDir string, kind gcKind, parent string) ([]GCItem, error) {
	dead, err := procdir.Dead(parent)
	if err != nil {
		return nil, err
	}
	var items []GCItem
	for _, dir := range dead {
		it, err := measure(dataDir, kind, dir)
		if err != nil {
			return nil, err
		}
		it.remove = func(context.Context) error { return os.RemoveAll(dir) }
		items = append(items, it)
	}
	return items, nil
}

// measure sums the sizes of the files (everything but directories) under
// paths; a path already gone counts nothing.
func measure(dataDir string, kind gcKind, paths ...string) (GCItem, error) {
	rel, err := filepath.Rel(dataDir, paths[0])
	if err != nil {
		rel = paths[0]
	}
	it := GCItem{Kind: kind, Path: filepath.ToSlash(rel)}
	for _, p := range paths {
		err := filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			it.Bytes += fi.Size()
			it.Files++
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return it, err
		}
	}
	return it, nil
}
