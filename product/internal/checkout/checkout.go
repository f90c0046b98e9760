package checkout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// Errors of this package; match them with errors.Is.
var (
	// ErrVerify: the checkout could not be shown to be the snapshot (Create
	// failed and removed what it made, or Verify could not read the tree).
	ErrVerify = errors.New("checkout not verified")
	// ErrModified: the checkout's tree differs from its snapshot.
	ErrModified = errors.New("checkout modified")
	// ErrCleanup: the checkout could not be shown to be gone.
	ErrCleanup = errors.New("checkout cleanup failed")
)

// rollbackTimeout bounds the cleanup of a failed Create, which runs even when
// the caller's context has ended.
const rollbackTimeout = time.Minute

// addTimeout bounds a `git worktree add`, which a cancellation does not
// interrupt (materialize says why).
const addTimeout = 10 * time.Minute

// kind is how a checkout was materialized.
type kind string

const (
	kindWorktree kind = "worktree" // a linked git worktree of HEAD plus overlay
	kindCopy     kind = "copy"     // a plain directory holding a copy
)

// Checkout is a disposable directory holding exactly one snapshot of a
// source repository. Its methods only read the checkout (and, for Remove,
// the source's worktree registry), so they are safe for concurrent use,
// except that nothing should run concurrently with Remove.
type Checkout struct {
	Dir      string // absolute path of the checkout
	Snapshot string // snapshot.Snapshot.ID of the source at creation, verified equal in the checkout

	kind   kind
	source string           // the source repository's root
	marker string           // <parent>/<name>.lock
	base   map[string]entry // the verified tree at creation; nil for a swept checkout
}

// Create materializes repo's current snapshot in a new directory under
// parent (created 0700 if missing), which must not lie inside the source
// (doc.go describes how). Every failure removes what was created and
// returns an error wrapping ErrVerify, joined with ErrCleanup when even the
// removal failed.
func Create(ctx context.Context, repo *snapshot.Repo, parent string) (*Checkout, error) {
	src, err := repo.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: checkout of %s: %w", ErrVerify, repo.Root(), err)
	}
	c, err := create(ctx, repo, src, parent)
	if err != nil {
		return nil, fmt.Errorf("%w: checkout of %s: %w", ErrVerify, repo.Root(), err)
	}
	return c, nil
}

// create materializes src, a snapshot of repo.
func create(ctx context.Context, repo *snapshot.Repo, src snapshot.Snapshot, parent string) (*Checkout, error) {
	parent, err := prepareParent(repo.Root(), parent)
	if err != nil {
		return nil, err
	}
	name := newName()
	c := &Checkout{
		Dir:      filepath.Join(parent, name),
		Snapshot: src.ID,
		kind:     kindCopy,
		source:   repo.Root(),
		marker:   filepath.Join(parent, name+markerExt),
	}
	if repo.IsGit() && repo.Sub() == "" && src.Head != "" {
		c.kind = kindWorktree
	}
	m, err := newMarker(c)
	if err != nil {
		return nil, err
	}
	// The marker comes first: a crash at any later point leaves something
	// Sweep can attribute and remove.
	if err := writeMarker(c.marker, m); err != nil {
		return nil, err
	}
	if stable := stableName(repo.Root(), src.ID); claimName(parent, name, stable) {
		c.Dir, c.marker = filepath.Join(parent, stable), filepath.Join(parent, stable+markerExt)
	}
	if err := c.populate(ctx, repo, src); err != nil {
		return nil, c.rollback(ctx, err)
	}
	return c, nil
}

// prepareParent creates parent if needed and returns its absolute,
// symlink-free path, which is how git records a worktree's path. A parent
// inside the source is refused: the source's own listing would then include
// the checkouts, and a worker writing there would write into the source.
func prepareParent(source, parent string) (string, error) {
	abs, err := filepath.Abs(parent)
	if err != nil {
		return "", fmt.Errorf("parent %s: %w", parent, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("parent %s: %w", parent, err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("parent %s: %w", parent, err)
	}
	if rel, err := filepath.Rel(source, abs); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return "", fmt.Errorf("parent %s lies inside the source %s", abs, source)
	}
	return abs, nil
}

// populate materializes the tree, brings it to the snapshot, records the
// baseline and reads the whole tree back to prove it.
func (c *Checkout) populate(ctx context.Context, repo *snapshot.Repo, src snapshot.Snapshot) error {
	if err := c.materialize(ctx, src.Head); err != nil {
		return err
	}
	base, err := overlay(ctx, repo, c.Dir, src.Files)
	if err != nil {
		return err
	}
	if c.kind == kindWorktree {
		// git's pointer to the worktree's admin directory: not content, but
		// part of the baseline so that a rewrite of it shows.
		ptr, err := scanOne(c.Dir, gitPointer)
		if err != nil {
			return fmt.Errorf("worktree %s: %w", gitPointer, err)
		}
		base[gitPointer] = ptr
	}
	c.base = base
	return c.Verify(ctx)
}

// materialize creates c.Dir: a detached worktree of head, or an empty
// directory. ctx bounds the wait for the worktree lock, not `worktree
// add` itself: git fills a new registry entry in steps, and one killed
// between them (no commondir yet) makes every later worktree command of
// the repository fail, the user's own included. So the add runs to its
// end, bounded by addTimeout, and a cancelled Create then rolls it back.
func (c *Checkout) materialize(ctx context.Context, head string) error {
	if c.kind == kindCopy {
		return os.Mkdir(c.Dir, 0o700)
	}
	unlock, err := lockWorktrees(ctx, c.source)
	if err != nil {
		return err
	}
	defer unlock()
	addCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), addTimeout)
	defer cancel()
	if _, err := runGit(addCtx, c.source, "worktree", "add", "--detach", c.Dir, head); err != nil {
		return err
	}
	return ctx.Err()
}

// rollback removes a checkout whose creation failed with cause, under a
// context of its own so that a cancelled Create still cleans up.
func (c *Checkout) rollback(ctx context.Context, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if err := c.Remove(ctx); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}
