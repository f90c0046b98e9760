package codexhook

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// readTarget resolves path through symbolic links (a hooks file or config
// kept in a dotfiles repository stays a link after we write it) and reads
// the file there. A missing file reads as nil with exists false.
func readTarget(path string) (target string, data []byte, mode fs.FileMode, exists bool, err error) {
	target = path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", nil, 0, false, err
	}
	data, err = os.ReadFile(target)
	if errors.Is(err, fs.ErrNotExist) {
		return target, nil, 0, false, nil
	}
	if err != nil {
		return "", nil, 0, false, err
	}
	st, err := os.Stat(target)
	if err != nil {
		return "", nil, 0, false, err
	}
	return target, data, st.Mode().Perm(), true, nil
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, written and synced, renamed over path, then the directory
// synced, so a reader (codex starting a session) sees the old file or the
// new one and never a part. The parent directory is created if missing.
func writeAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
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
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
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
