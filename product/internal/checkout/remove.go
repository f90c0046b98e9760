package checkout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/needle-dev/needle/product/internal/filelock"
	"github.com/needle-dev/needle/product/internal/procdir"
)

// Remove deletes the checkout — `git worktree remove --force --force` then `git
// worktree prune` for a worktree, RemoveAll for a copy — and then checks
// that the directory is gone and that the source's registry no longer lists
// it. Only then is the marker deleted, so a failed cleanup is retried by a
// later Sweep. Failure wraps ErrCleanup. Removing a removed checkout
// succeeds.
func (c *Checkout) Remove(ctx context.Context) error {
	if err := c.remove(ctx); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCleanup, c.Dir, err)
	}
	return nil
}

func (c *Checkout) remove(ctx context.Context) error {
	// The steps' errors are only evidence: what counts is the final check,
	// and a step that failed may have been made good by the next one (git
	// refuses a worktree whose pointer a worker rewrote; RemoveAll and
	// prune do not care).
	//
	// A `git worktree add` killed mid-way (a cancelled Create) leaves its
	// worktree locked ("initializing"): a single --force refuses it and
	// prune skips it, so the lock is overridden (-f twice), which also
	// unregisters a worktree whose directory is already gone.
	//
	// A half-made registry entry of this checkout (an add killed before it
	// wrote commondir) makes every worktree command fail, so it goes first.
	var steps []error
	if c.kind == kindWorktree {
		steps = append(steps, c.removeHalfMade(ctx))
		_, err := worktreeGit(ctx, c.source, "worktree", "remove", "--force", "--force", c.Dir)
		steps = append(steps, err)
	}
	steps = append(steps, removeTree(c.Dir))
	if c.kind == kindWorktree {
		_, err := worktreeGit(ctx, c.source, "worktree", "prune")
		steps = append(steps, err)
	}
	if err := c.checkGone(ctx); err != nil {
		return errors.Join(append([]error{err}, steps...)...)
	}
	if err := os.Remove(c.marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeHalfMade removes the registry entries of this checkout that git
// left half made: GIT_COMMON_DIR/worktrees/NAME, or NAME followed by
// digits (git's suffix when NAME's entry exists, as for a checkout of the
// same snapshot under another parent), whose gitdir file is missing or
// names this checkout, and which lacks gitdir, commondir or HEAD. A `git
// worktree add` killed part way (a crash, or its deadline) leaves one;
// `worktree remove` cannot find it by path, prune skips it while it is
// locked, and git's registry commands fail on it. It runs under the
// worktree lock, which every add of this package holds, so no entry is
// half made because an add is still filling it in. Whole entries are left
// to git.
func (c *Checkout) removeHalfMade(ctx context.Context) error {
	unlock, err := lockWorktrees(ctx, c.source)
	if err != nil {
		return err
	}
	defer unlock()
	lock, err := lockPath(ctx, c.source)
	if err != nil {
		return err
	}
	registry := filepath.Join(filepath.Dir(lock), "worktrees")
	entries, err := os.ReadDir(registry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	base := filepath.Base(c.Dir)
	var errs []error
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), base)
		if !ok || strings.Trim(suffix, "0123456789") != "" || !e.IsDir() {
			continue
		}
		admin := filepath.Join(registry, e.Name())
		gitdir, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, err) // unreadable: never taken for a half-made entry
			continue
		case gitdirOf(admin, gitdir) != filepath.Join(c.Dir, ".git"):
			continue // another worktree's
		case exists(filepath.Join(admin, "commondir")) && exists(filepath.Join(admin, "HEAD")):
			continue // whole: git removes it
		}
		errs = append(errs, os.RemoveAll(admin))
	}
	return errors.Join(errs...)
}

// gitdirOf is the path a registry entry's gitdir file names, made
// absolute against the entry when git wrote it relative
// (worktree.useRelativePaths).
func gitdirOf(admin string, content []byte) string {
	p := strings.TrimSpace(string(content))
	if !filepath.IsAbs(p) {
		p = filepath.Join(admin, p)
	}
	return filepath.Clean(p)
}

// checkGone verifies that the directory does not exist and, for a worktree,
// that the source no longer registers it.
func (c *Checkout) checkGone(ctx context.Context) error {
	if _, err := os.Lstat(c.Dir); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory still present (%v)", err)
	}
	if c.kind != kindWorktree {
		return nil
	}
	registered, err := worktrees(ctx, c.source)
	if err != nil {
		return err
	}
	for _, dir := range registered {
		if dir == c.Dir {
			return errors.New("still registered as a worktree")
		}
	}
	return nil
}

// worktrees returns the paths of the worktrees registered in the repository
// at source, the main one included.
func worktrees(ctx context.Context, source string) ([]string, error) {
	out, err := worktreeGit(ctx, source, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, field := range splitNUL(out) {
		if dir, ok := strings.CutPrefix(field, "worktree "); ok {
			dirs = append(dirs, filepath.Clean(dir))
		}
	}
	return dirs, nil
}

func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

// removeTree is os.RemoveAll that also copes with directories a worker left
// without write or search permission, which RemoveAll cannot empty.
func removeTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	if werr := makeWritable(dir); werr != nil {
		return errors.Join(err, werr)
	}
	return os.RemoveAll(dir)
}

// makeWritable gives every directory under dir (dir included) owner rwx.
// Directories are chmodded before WalkDir reads them, so an unreadable one
// is opened up before it is listed. Going through an os.Root keeps a
// directory swapped for a symlink from aiming a chmod outside the checkout.
func makeWritable(dir string) error {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == "." {
			return err
		}
		return root.Chmod(p, 0o700)
	})
}

// Sweep removes every checkout under parent whose creating process is no
// longer running, pruning its source's worktree registry, and returns the
// directories it removed. Markers of live processes and entries that are not
// this package's are left alone. A missing parent holds nothing to sweep.
func Sweep(ctx context.Context, parent string) ([]string, error) {
	found, err := Stale(parent)
	var removed []string
	errs := []error{err}
	for _, c := range found {
		ok, err := c.sweep(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			removed = append(removed, c.Dir)
		}
	}
	return removed, errors.Join(errs...)
}

// sweep removes the stale checkout c, unless another process sweeps it or
// it is stale no longer. Sweepers exclude each other by a flock of the
// marker, and once they hold it check that the marker is still the one
// they read and still names a dead process: a sweeper that lost the race
// would otherwise remove, at the same path, the checkout a live process
// made after the winner's removal freed the name. removed is false when
// it left c alone.
func (c *Checkout) sweep(ctx context.Context) (removed bool, err error) {
	f, err := os.Open(c.marker)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	held, cancel := context.WithCancel(ctx)
	cancel() // no wait: a held flock means another sweeper has it
	if err := filelock.LockFile(held, f); err != nil {
		return false, nil // LockFile closes f
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(c.marker)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !os.SameFile(fi, now) {
		return false, nil // swept meanwhile, and perhaps the name taken again
	}
	if err != nil {
		return false, err
	}
	m, err := readMarker(c.marker)
	if err != nil || procdir.Alive(m.PID, m.Start) {
		return false, err
	}
	return true, c.Remove(ctx)
}

// Stale returns the checkouts under parent whose creating process is no
// longer running: what Sweep removes, each with Marker set (Remove deletes
// both). A marker it cannot read is an error, and its checkout is left out.
// A missing parent holds none.
func Stale(parent string) ([]*Checkout, error) {
	entries, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", parent, err)
	}
	// Canonical, as Create made it: git compares registered paths as strings.
	dir, err := filepath.Abs(parent)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", parent, err)
	}
	var found []*Checkout
	var errs []error
	for _, e := range entries {
		c, err := stale(dir, e.Name())
		if c == nil || err != nil {
			errs = append(errs, err)
			continue
		}
		found = append(found, c)
	}
	return found, errors.Join(errs...)
}

// Marker is the path of the checkout's marker file, <parent>/<name>.lock.
func (c *Checkout) Marker() string { return c.marker }

// stale returns the checkout a marker named name describes when its
// creator is gone; nil when name is not a marker or its creator lives. The
// directory comes from the marker's name, never its content, so a marker
// cannot aim a removal anywhere but its own sibling. A marker gone since
// the directory was listed was removed with its checkout, by its creator
// or another sweep: there is nothing left to sweep.
func stale(parent, name string) (*Checkout, error) {
	base, ok := strings.CutSuffix(name, markerExt)
	if !ok || !namePattern.MatchString(base) {
		return nil, nil
	}
	path := filepath.Join(parent, name)
	m, err := readMarker(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if procdir.Alive(m.PID, m.Start) {
		return nil, nil
	}
	return &Checkout{Dir: filepath.Join(parent, base), Snapshot: m.Snapshot,
		kind: m.Kind, source: m.Source, marker: path}, nil
}
