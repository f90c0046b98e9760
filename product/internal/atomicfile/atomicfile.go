// Package atomicfile replaces files atomically: a reader sees the old
// content or the new, never a part. Write is also durable (a crash leaves
// one of the two); Replace is not (for caches, where a crash may lose the
// new file but never leaves it torn). It is the one atomic write of the
// module (work-tree files at apply, checkout markers, the loopback token,
// codex's hooks and config files; the test runner's kept baselines and
// binary records).
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data and the permission bits perm: a temporary
// file in the same directory (so the rename cannot cross file systems),
// written, chmod'ed and fsync'ed, renamed over path, then the directory
// fsync'ed so the rename itself survives a crash. The directory must exist.
// On any failure the temporary file is removed and path is as it was.
func Write(path string, data []byte, perm fs.FileMode) error {
	if err := replace(path, data, perm, true); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Replace replaces path with data and the permission bits perm as Write
// does, without its fsyncs: atomic, not durable.
func Replace(path string, data []byte, perm fs.FileMode) error {
	return replace(path, data, perm, false)
}

func replace(path string, data []byte, perm fs.FileMode, durable bool) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".needle-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	return err
}

// SyncDir makes the entries of dir durable: a rename, a creation or a
// removal in it.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
