package checkout

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/needle-dev/needle/product/internal/filelock"
)

// lockName is the lock file, in a repository's git common dir, that every
// git worktree command of this package on that repository holds.
const lockName = "needle-worktrees.lock"

// A repository's worktree registry (<common dir>/worktrees) is not safe
// under concurrent git worktree commands: `worktree add` creates an entry
// and only then fills it in, while an add, a list or a prune that reads the
// registry meanwhile fails on the half-made entry ("failed to read
// .../commondir", "Invalid path") or deletes it. So add, remove, prune and
// list of one repository run one at a time: in this process under a mutex
// per lock file, across processes under an exclusive flock of the lock
// file. The mutex is not needed for exclusion (a flock belongs to an open
// file description, so two opens in one process exclude each other), but
// it lets a goroutine wait cancellably and without tying up an OS thread
// in flock. The lock covers only the git commands, never the copying of
// files into a checkout.

// worktreeGit runs a git worktree command (args) in the repository at
// source, holding the repository's worktree lock.
func worktreeGit(ctx context.Context, source string, args ...string) ([]byte, error) {
	unlock, err := lockWorktrees(ctx, source)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return runGit(ctx, source, args...)
}

// lockWorktrees takes the worktree lock of the repository at source and
// returns its release.
func lockWorktrees(ctx context.Context, source string) (unlock func(), err error) {
	path, err := lockPath(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("worktree lock of %s: %w", source, err)
	}
	release, err := procLocks.acquire(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("worktree lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		err = filelock.LockFile(ctx, f) // closes f on failure
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("worktree lock %s: %w", path, err)
	}
	return func() {
		f.Close() // closing the only descriptor releases the flock
		release()
	}, nil
}

// lockPath returns the lock file of the repository at source: lockName in
// its git common dir, which all of its worktrees share, so a source that is
// itself a linked worktree locks the registry it is listed in.
func lockPath(ctx context.Context, source string) (string, error) {
	out, err := runGit(ctx, source, "rev-parse", "--git-common-dir")
	if err != nil {
		return "", err
	}
	dir := strings.TrimRight(string(out), "\n")
	if dir == "" {
		return "", fmt.Errorf("git rev-parse --git-common-dir printed nothing")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(source, dir)
	}
	// One spelling per repository, so that the in-process mutex is shared.
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, lockName), nil
}

// procLocks are the in-process halves of the worktree locks.
var procLocks = &mutexes{m: make(map[string]*mutex)}

// mutexes is a set of cancellable mutexes by name, each kept only while
// someone holds or awaits it.
type mutexes struct {
	mu sync.Mutex
	m  map[string]*mutex
}

type mutex struct {
	sem  chan struct{} // holds a token while locked
	refs int           // holders and waiters, guarded by mutexes.mu
}

// acquire locks name's mutex, giving up when ctx ends, and returns its
// release.
func (s *mutexes) acquire(ctx context.Context, name string) (release func(), err error) {
	s.mu.Lock()
	m := s.m[name]
	if m == nil {
		m = &mutex{sem: make(chan struct{}, 1)}
		s.m[name] = m
	}
	m.refs++
	s.mu.Unlock()
	select {
	case m.sem <- struct{}{}:
		return func() {
			<-m.sem
			s.done(name, m)
		}, nil
	case <-ctx.Done():
		s.done(name, m)
		return nil, ctx.Err()
	}
}

// done drops one reference to name's mutex m, forgetting m with the last.
func (s *mutexes) done(name string, m *mutex) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.refs--; m.refs == 0 {
		delete(s.m, name)
	}
}
