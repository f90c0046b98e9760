package checkout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write is one file operation Apply performs: Data with the executable bit
// Exec at Path, or, when Delete is set, the removal of Path.
type Write struct {
	Path   string // slash-separated, relative to the checkout
	Data   []byte
	Exec   bool
	Delete bool
}

// ErrApply: a write could not be applied to the checkout.
var ErrApply = errors.New("checkout apply failed")

// Apply performs writes on the checkout (through an os.Root, so no symlink
// leads a write out of it), then reads the whole tree back and makes it the
// new baseline: Verify and Changes compare against the written tree from
// now on, and Snapshot becomes its id. This is how a patch is laid on a
// fresh checkout before a read-only verifier or a repair runs on it. A
// failure leaves the checkout unusable (its baseline is cleared), so that
// nothing can go on with a half-applied patch; Remove still works.
func (c *Checkout) Apply(ctx context.Context, writes []Write) error {
	if c.base == nil {
		return fmt.Errorf("%w: no baseline: checkout not made by Create", ErrApply)
	}
	err := c.apply(ctx, writes)
	if err != nil {
		c.base = nil
		return fmt.Errorf("%w: %s: %w", ErrApply, c.Dir, err)
	}
	return nil
}

func (c *Checkout) apply(ctx context.Context, writes []Write) error {
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, w := range writes {
		if !filepath.IsLocal(filepath.FromSlash(w.Path)) || w.Path == gitPointer {
			return fmt.Errorf("%s: not a path the checkout may hold", w.Path)
		}
		if w.Delete {
			if err := root.Remove(filepath.FromSlash(w.Path)); err != nil {
				return fmt.Errorf("delete %s: %w", w.Path, err)
			}
			continue
		}
		perm := fs.FileMode(permFile)
		if w.Exec {
			perm = permExec
		}
		if err := writeNew(root, filepath.FromSlash(w.Path), w.Data, perm); err != nil {
			return err
		}
	}
	now, err := scan(ctx, c.Dir)
	if err != nil {
		return err
	}
	if ptr, ok := c.base[gitPointer]; ok {
		if got, ok := now[gitPointer]; !ok || !got.same(ptr) {
			return errors.New("git's worktree pointer changed")
		}
	}
	id, err := treeID(now)
	if err != nil {
		return err
	}
	c.base, c.Snapshot = now, id
	return nil
}

// MaxReadFile bounds what ReadFile returns.
const MaxReadFile = 8 << 20

// ReadFile reads a regular file of the checkout through an os.Root: a
// symlink is never followed, so a worker cannot make Needle read outside
// the checkout. Files over MaxReadFile are an error.
func (c *Checkout) ReadFile(rel string) ([]byte, error) {
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	li, err := root.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	if !li.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", rel)
	}
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The same file that was lstat'ed: not a symlink swapped in since.
	if fi, err := f.Stat(); err != nil || !os.SameFile(li, fi) {
		return nil, fmt.Errorf("%s: changed while being read", rel)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxReadFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxReadFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", rel, MaxReadFile)
	}
	return data, nil
}

// BaseDigest returns the digest (snapshot.FileTag) of rel in the checkout's
// baseline — the snapshot it was created from, or the tree Apply wrote —
// and whether the baseline holds rel as a regular file.
func (c *Checkout) BaseDigest(rel string) (string, bool) {
	e, ok := c.base[rel]
	if !ok || e.kind != KindFile || rel == gitPointer {
		return "", false
	}
	return e.digest, true
}
