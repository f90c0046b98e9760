package product

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/atomicfile"
	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/filelock"
	"github.com/needle-dev/needle/product/internal/runlock"
	"github.com/needle-dev/needle/product/internal/snapshot"
)

// Writing the work tree: the locks an apply holds, the base a file must
// have, and the durable write of one file.

// applyLock serializes applies (and their recovery) of one repository
// across processes. Its flock dies with its holder, so holding it proves
// that no other apply of the repository is live.
func (e *Engine) applyLock() (func(), error) {
	sum := sha256.Sum256([]byte(e.root))
	return e.lock("apply-"+hex.EncodeToString(sum[:8]), "an apply of this repository")
}

// lease is the lock a runner, an approval or an apply of one lifecycle
// holds: a second one stops at once with the holder's pid rather than pay
// for a worker the compare-and-swap would throw away. The lease is an
// optimisation; the compare-and-swap alone decides what commits.
func (e *Engine) lease(lid string) (func(), error) {
	return e.lock(lid, "lifecycle "+lid)
}

// lockSettle bounds how long lock waits for a holder that names no live
// process: one between taking the flock and writing its record, or between
// emptying it and closing, or a crashed holder's child that has the file
// open from fork until its exec closes it. A holder a live process names
// is refused at once.
const lockSettle = 3 * time.Second

func (e *Engine) lock(name, what string) (func(), error) {
	dir := filepath.Join(e.cfg.DataDir, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &Error{Op: "lifecycle.lock", Kind: kindIO, Err: err}
	}
	path := filepath.Join(dir, name+".lock")
	var l *runlock.Lock
	var err error
	var held *runlock.HeldError
	for deadline := time.Now().Add(lockSettle); ; {
		l, err = runlock.Acquire(path, time.Now())
		if !errors.As(err, &held) || held.Holder.PID > 0 && held.Holder.ID.Alive() || !waitUnlocked(path, deadline) {
			break
		}
	}
	if errors.As(err, &held) {
		who := "another process"
		if held.Holder.PID > 0 {
			who = held.Holder.String()
		}
		return nil, &Error{Op: "lifecycle.lock", Kind: kindConflict, Err: fmt.Errorf("%s is being run by %s; wait for it to finish", what, who)}
	}
	if err != nil {
		return nil, &Error{Op: "lifecycle.lock", Kind: kindIO, Err: err}
	}
	return func() { _ = l.Release() }, nil
}

// waitUnlocked waits, until deadline, for the flock of the lock file at
// path to be free (it takes it and lets it go at once), and reports
// whether it was.
func waitUnlocked(path string, deadline time.Time) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if filelock.LockFile(ctx, f) != nil {
		return false // LockFile closes f
	}
	return f.Close() == nil // closing the only descriptor releases the flock
}

// guardDataDir refuses a data directory inside the repository: the
// journal's own writes would change the tree apply promises to leave as it
// was.
func (e *Engine) guardDataDir() error {
	if inside(e.root, e.cfg.DataDir) {
		return invalidf("change", "data-dir", "the data directory %s is inside the repository %s; keep it outside", e.cfg.DataDir, e.root)
	}
	return nil
}

// treeDigest is the content digest of a work-tree file, "" when it is
// absent. A path through a symbolic link, or to anything but a regular
// file, is refused: apply never writes through a link.
func (e *Engine) treeDigest(rel string) (string, error) {
	abs, err := treePath(e.root, rel)
	if err != nil {
		return "", err
	}
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", &Error{Op: opApply, Kind: kindIO, Err: err}
	case !fi.Mode().IsRegular():
		return "", conflictf("409 conflict: %s is not a regular file in the work tree; nothing was written", rel)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", &Error{Op: opApply, Kind: kindIO, Err: err}
	}
	return contentid.OfBytes(snapshot.FileTag, data), nil
}

// baseContent reads a work-tree file when it still has the digest want
// ("" = absent): its content, its permission bits, and ok false when it
// drifted.
func (e *Engine) baseContent(rel, want string) ([]byte, fs.FileMode, bool, error) {
	got, err := e.treeDigest(rel)
	if KindOf(err) == kindConflict {
		return nil, 0, false, nil
	}
	if err != nil || got != want {
		return nil, 0, false, err
	}
	if want == "" {
		return nil, 0, true, nil
	}
	abs, _ := treePath(e.root, rel)
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, 0, false, &Error{Op: opApply, Kind: kindIO, Err: err}
	}
	fi, err := os.Lstat(abs)
	if err != nil || contentid.OfBytes(snapshot.FileTag, data) != want {
		return nil, 0, false, err
	}
	return data, fi.Mode().Perm(), true, nil
}

// writeMode is the mode apply writes a file with: an existing file keeps
// its own (only its executable bits follow the patch, where the patch
// changes them: set where it is readable, or cleared), so a 0600 file
// stays 0600; a new file gets the mode the patch says, 0755 for an
// executable, else 0644.
func writeMode(existed bool, mode fs.FileMode, exec bool) fs.FileMode {
	switch {
	case !existed && exec:
		return 0o755
	case !existed:
		return 0o644
	case exec && mode&0o100 == 0:
		return mode | (mode&0o444)>>2
	case !exec && mode&0o100 != 0:
		return mode &^ 0o111
	}
	return mode
}

// treePath is the absolute path of a repository path, refusing any parent
// directory that is a symbolic link.
func treePath(root, rel string) (string, error) {
	if checkScopePath(rel, scopeExact) != nil {
		return "", conflictf("409 conflict: %s is not a path a patch may write", showPath(rel))
	}
	dir := root
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", &Error{Op: opApply, Kind: kindIO, Err: err}
		}
		if !fi.IsDir() {
			return "", conflictf("409 conflict: %s is not a directory in the work tree (a link or a file); nothing was written", path.Join(parts[:len(parts)-1]...))
		}
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

// writeTreeFile writes (or deletes) one work-tree file durably, with the
// permission bits mode: a temporary file in the same directory, fsync,
// rename over, fsync of the directory.
func writeTreeFile(root, rel string, del bool, data []byte, mode fs.FileMode) error {
	abs, err := treePath(root, rel)
	if err != nil {
		return err
	}
	dir := filepath.Dir(abs)
	if del {
		if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return atomicfile.SyncDir(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return atomicfile.Write(abs, data, mode)
}

const opApply = "change.apply"

// conflictf is the 409-class error of apply and approval.
func conflictf(format string, args ...any) error {
	return &Error{Op: opApply, Kind: kindConflict, Err: fmt.Errorf(format, args...)}
}
