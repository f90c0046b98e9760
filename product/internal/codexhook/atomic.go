package codexhook

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/needle-dev/needle/product/internal/atomicfile"
)

// maxFile bounds a hooks file or config read: codex's own files are a
// few kilobytes.
const maxFile = 4 << 20

// readTarget resolves path through symbolic links (a hooks file or config
// kept in a dotfiles repository stays a link after we write it) and reads
// the file there. A missing file reads as nil with exists false. Anything
// but a regular file (a named pipe, a device, a directory) is a
// *FileError, found without blocking: the file is opened non-blocking and
// judged by what the open descriptor is, so a FIFO put in its place can
// neither hang the read nor slip in after a check.
func readTarget(path string) (target string, data []byte, mode fs.FileMode, exists bool, err error) {
	target = path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", nil, 0, false, err
	}
	f, err := os.OpenFile(target, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return target, nil, 0, false, nil
	}
	if err != nil {
		return "", nil, 0, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, 0, false, err
	}
	if !st.Mode().IsRegular() {
		return "", nil, 0, false, &FileError{path, fmt.Sprintf("is not a regular file (%s); codex reads a regular file there", kindOf(st.Mode()))}
	}
	if st.Size() > maxFile {
		return "", nil, 0, false, &FileError{path, fmt.Sprintf("is larger than %d bytes", maxFile)}
	}
	if data, err = io.ReadAll(io.LimitReader(f, maxFile+1)); err != nil {
		return "", nil, 0, false, err
	}
	if len(data) > maxFile {
		return "", nil, 0, false, &FileError{path, fmt.Sprintf("is larger than %d bytes", maxFile)}
	}
	return target, data, st.Mode().Perm(), true, nil
}

// kindOf names a file type that is not a regular file.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, written and synced, renamed over path, then the directory
// synced, so a reader (codex starting a session) sees the old file or the
// new one and never a part. The parent directory is created if missing.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}
