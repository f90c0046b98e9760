package snapshot

import (
	"context"
	"errors"
	"fmt"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// FileDigest is one file of a Snapshot.
type FileDigest struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// Snapshot is the repository's content at a moment.
type Snapshot struct {
	ID    string       // contentid over Files: same content ⇒ same id on any machine
	Head  string       // HEAD commit or ""
	Dirty bool         // git: the work tree differs from HEAD (tracked changes or untracked non-ignored files)
	Files []FileDigest // sorted by Path
}

// Snapshot lists the repository's files and digests each through the stat
// cache, hashing in parallel. A file that disappears or stops being a
// regular file between the listing and its digest is left out: the snapshot
// then reflects the tree as it was when that file was reached.
func (r *Repo) Snapshot(ctx context.Context) (Snapshot, error) {
	paths, err := r.Files(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	files, err := r.digestAll(ctx, paths)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", r.root, err)
	}
	id, err := contentid.Of(SnapshotTag, files)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", r.root, err)
	}
	s := Snapshot{ID: id, Files: files}
	if s.Head, err = r.Head(ctx); err != nil {
		return Snapshot{}, err
	}
	if s.Dirty, err = r.dirty(ctx); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

// digestAll digests paths with one worker per CPU and returns them in the
// same (sorted) order, less the vanished ones. The result is never nil, so an
// empty tree has the id of "[]", not of "null".
func (r *Repo) digestAll(ctx context.Context, paths []string) ([]FileDigest, error) {
	digests := make([]string, len(paths))
	errs := make([]error, len(paths))
	err := ForEach(ctx, len(paths), func(i int) { digests[i], errs[i] = r.FileDigest(paths[i]) })
	if err != nil {
		return nil, err
	}
	files := make([]FileDigest, 0, len(paths))
	for i, p := range paths {
		switch {
		case errors.Is(errs[i], ErrNotExist) || errors.Is(errs[i], ErrNotRegular):
		case errs[i] != nil:
			return nil, errs[i]
		default:
			files = append(files, FileDigest{Path: p, Digest: digests[i]})
		}
	}
	return files, nil
}

// dirty reports whether a git work tree differs from HEAD: staged or
// unstaged changes to tracked files, or untracked files git does not ignore.
// A plain directory has no HEAD to differ from and is never dirty.
func (r *Repo) dirty(ctx context.Context) (bool, error) {
	if git, err := r.gitRepo(); err != nil || !git {
		return false, err
	}
	out, err := runGit(ctx, r.root, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
	if err != nil {
		return false, err
	}
	return len(out) > 0, nil
}
