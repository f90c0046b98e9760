// Package atomicfile replaces files durably: a reader sees the old content
// or the new, never a part, and a crash leaves one of the two. It is the
// one atomic write of the module (work-tree files at apply, checkout
// markers, the loopback token, codex's hooks and config files).
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
func Write(path string, data []byte, perm fs.FileMode) (err error) {
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
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return err
	}
	return SyncDir(dir)
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
