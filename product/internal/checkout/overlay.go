package checkout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// Permissions of the files a checkout writes: git records only whether a
// file is executable, and so does the snapshot's baseline.
const (
	permFile = 0o644
	permExec = 0o755
)

// overlay makes the tree at dir hold exactly files (a snapshot's, sorted),
// with the content the snapshot recorded and the source's executable bits,
// and returns that expected tree. Whatever dir already holds — a fresh
// worktree of HEAD, or nothing — is only a head start: matching files stay,
// everything else is removed or rewritten. A source file that no longer has
// its snapshot digest is an error, never a silent copy of newer content.
func overlay(ctx context.Context, repo *snapshot.Repo, dir string, files []snapshot.FileDigest) (map[string]entry, error) {
	want, err := expected(repo, files)
	if err != nil {
		return nil, err
	}
	have, err := scan(ctx, dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if err := prune(root, have, want); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := place(root, repo, f.Path, have[f.Path], want[f.Path]); err != nil {
			return nil, err
		}
	}
	return want, nil
}

// expected returns the tree files describe, each file's executable bit read
// from the source.
func expected(repo *snapshot.Repo, files []snapshot.FileDigest) (map[string]entry, error) {
	want := make(map[string]entry, len(files))
	for _, f := range files {
		abs, err := repo.Resolve(f.Path)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, err
		}
		perm := fs.FileMode(permFile)
		if fi.Mode()&0o100 != 0 {
			perm = permExec
		}
		want[f.Path] = entry{kind: KindFile, mode: perm, digest: f.Digest}
	}
	return want, nil
}

// prune removes every entry of the checkout that the snapshot does not hold
// as a regular file: files deleted or ignored in the source, and symlinks
// and the like, which are not snapshot content. Git's pointer stays.
func prune(root *os.Root, have, want map[string]entry) error {
	for rel, e := range have {
		if _, ok := want[rel]; (ok && e.kind == KindFile) || rel == gitPointer {
			continue
		}
		if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", rel, err)
		}
	}
	return nil
}

// place makes rel in the checkout match want: nothing to do when it already
// does, a chmod when only the executable bit differs, else a fresh copy of
// the source's bytes.
func place(root *os.Root, repo *snapshot.Repo, rel string, have, want entry) error {
	if have.kind == KindFile && have.digest == want.digest {
		if have.exec() == want.exec() {
			return nil
		}
		return root.Chmod(rel, want.mode)
	}
	data, digest, err := repo.ReadFile(rel)
	if err != nil {
		return err
	}
	if digest != want.digest {
		return fmt.Errorf("%s changed since the snapshot", rel)
	}
	return writeNew(root, rel, data, want.mode)
}

// writeNew writes data to rel as a new inode, so that the checkout never
// shares a file with anything (a hard link git or a tool might have made).
// Whatever was at rel goes first, including a directory the snapshot has a
// file in place of; nothing the snapshot holds can be under it.
func writeNew(root *os.Root, rel string, data []byte, perm fs.FileMode) error {
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
	}
	if err := root.RemoveAll(rel); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chmod(rel, perm) // the umask may have cleared bits
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}
