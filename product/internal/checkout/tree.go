package checkout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
)

// gitPointer is the file git writes at a linked worktree's root.
const gitPointer = ".git"

// maxReported bounds the paths an ErrModified error names.
const maxReported = 10

// Operations and kinds of a Change.
const (
	OpAdd    = "add"
	OpModify = "modify"
	OpDelete = "delete"

	KindFile    = "file"
	KindSymlink = "symlink"
	KindOther   = "other" // a FIFO, socket or device
)

// Change is one path that differs between a checkout's snapshot and its
// tree now. Directories are not changes; what they hold is.
type Change struct {
	Path string      // slash-separated, relative to the checkout
	Op   string      // OpAdd, OpModify or OpDelete
	Kind string      // what is at Path now (KindFile for a delete: what was there)
	Mode fs.FileMode // Path's type and permission bits now; 0 for a delete
}

// entry is one non-directory path of a tree.
type entry struct {
	kind   string
	mode   fs.FileMode // type and permission bits, as lstat reports them
	digest string      // KindFile only: snapshot.FileTag digest of the content
}

// exec reports the owner-executable bit, the one mode bit git records.
func (e entry) exec() bool { return e.mode&0o100 != 0 }

// same reports whether two entries hold the same content.
func (e entry) same(o entry) bool {
	return e.kind == o.kind && e.digest == o.digest && e.exec() == o.exec()
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return KindFile
	case m&fs.ModeSymlink != 0:
		return KindSymlink
	default:
		return KindOther
	}
}

// Verify reads the whole checkout back and compares it with the snapshot it
// was created from, path by path and by snapshot id; for a read-only worker
// nothing may have changed. A difference is ErrModified naming (at most
// maxReported of) the changed paths; a tree that cannot be read or a
// checkout not made by Create is ErrVerify.
func (c *Checkout) Verify(ctx context.Context) error {
	now, err := c.scan(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrVerify, c.Dir, err)
	}
	if changes := diff(c.base, now); len(changes) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrModified, c.Dir, describe(changes))
	}
	id, err := treeID(now)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrVerify, c.Dir, err)
	}
	if id != c.Snapshot {
		return fmt.Errorf("%w: %s holds snapshot %s, want %s", ErrVerify, c.Dir, id, c.Snapshot)
	}
	return nil
}

// Changes reports the paths that differ between the snapshot and the
// checkout now, sorted by path. Symlinks and other non-regular files a
// worker made are reported with their kind so that the caller can reject
// them; so is any change to git's worktree pointer.
func (c *Checkout) Changes(ctx context.Context) ([]Change, error) {
	now, err := c.scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("changes of %s: %w", c.Dir, err)
	}
	return diff(c.base, now), nil
}

// scan reads the checkout's tree, refusing a checkout without a baseline
// (one Sweep rebuilt from a marker).
func (c *Checkout) scan(ctx context.Context) (map[string]entry, error) {
	if c.base == nil {
		return nil, errors.New("no baseline: checkout not made by Create")
	}
	return scan(ctx, c.Dir)
}

// diff lists the changes from base to now, sorted by path.
func diff(base, now map[string]entry) []Change {
	var changes []Change
	for rel, e := range now {
		if b, ok := base[rel]; !ok {
			changes = append(changes, Change{Path: rel, Op: OpAdd, Kind: e.kind, Mode: e.mode})
		} else if !b.same(e) {
			changes = append(changes, Change{Path: rel, Op: OpModify, Kind: e.kind, Mode: e.mode})
		}
	}
	for rel, b := range base {
		if _, ok := now[rel]; !ok {
			changes = append(changes, Change{Path: rel, Op: OpDelete, Kind: b.kind})
		}
	}
	slices.SortFunc(changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return changes
}

// describe names the first maxReported changes.
func describe(changes []Change) string {
	var b strings.Builder
	for i, ch := range changes[:min(len(changes), maxReported)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s (%s)", ch.Op, ch.Path, ch.Kind)
	}
	if n := len(changes) - maxReported; n > 0 {
		fmt.Fprintf(&b, " and %d more", n)
	}
	return b.String()
}

// treeID is the snapshot id of a tree, computed as the snapshot package does
// for a plain directory: the sorted [path, digest] list of its regular files,
// less git's worktree pointer.
func treeID(tree map[string]entry) (string, error) {
	files := []snapshot.FileDigest{} // never nil: an empty tree is "[]"
	for _, rel := range slices.Sorted(maps.Keys(tree)) {
		if e := tree[rel]; e.kind == KindFile && rel != gitPointer {
			files = append(files, snapshot.FileDigest{Path: rel, Digest: e.digest})
		}
	}
	return contentid.Of(snapshot.SnapshotTag, files)
}

// scan walks dir without following symlinks and returns every
// non-directory entry by slash path, regular files with their digests.
// Unlike a snapshot's walk it hides nothing — no .git, no odd names — so
// anything a worker leaves shows up.
func scan(ctx context.Context, dir string) (map[string]entry, error) {
	tree := make(map[string]entry)
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return errors.Join(err, ctx.Err())
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		tree[rel] = entry{kind: kindOf(info.Mode()), mode: info.Mode()}
		if info.Mode().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tree, digestFiles(ctx, dir, files, tree)
}

// scanOne returns the entry at rel under dir.
func scanOne(dir, rel string) (entry, error) {
	info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return entry{}, err
	}
	tree := map[string]entry{rel: {kind: kindOf(info.Mode()), mode: info.Mode()}}
	if info.Mode().IsRegular() {
		err = digestFiles(context.Background(), dir, []string{rel}, tree)
	}
	return tree[rel], err
}

// digestFiles fills in the digests of files (regular entries of tree), one
// reader per CPU.
func digestFiles(ctx context.Context, dir string, files []string, tree map[string]entry) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	digests := make([]string, len(files))
	errs := make([]error, len(files))
	err = snapshot.ForEach(ctx, len(files), func(i int) { digests[i], errs[i] = digestFile(root, files[i]) })
	if err != nil {
		return err
	}
	for i, rel := range files {
		if errs[i] != nil {
			return errs[i]
		}
		e := tree[rel]
		e.digest = digests[i]
		tree[rel] = e
	}
	return nil
}

// digestFile hashes the file at rel. Opening through root keeps a file
// swapped for a symlink after the walk from leading the read outside.
func digestFile(root *os.Root, rel string) (string, error) {
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", err
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: %w", rel, snapshot.ErrNotRegular)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", rel, err)
	}
	return contentid.OfBytes(snapshot.FileTag, data), nil
}
