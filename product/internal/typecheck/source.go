package typecheck

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/needle-dev/needle/product/internal/contentid"
	"github.com/needle-dev/needle/product/internal/snapshot"
)

// Source is the snapshot a Loader checks: the files of one repository,
// addressed by slash-separated paths relative to its root. Every file the
// proof reads from the repository goes through it, so the caller can record
// exactly those reads (with their digests) as the proof's dependencies and
// can serve them from a stat cache. Files outside the repository (the Go
// root, the module cache) are read directly: they are immutable.
type Source interface {
	// ReadFile returns the content of the regular file rel and the digest of
	// exactly those bytes.
	ReadFile(rel string) (data []byte, digest string, err error)
	// ReadDir lists the directory rel ("." is the root).
	ReadDir(rel string) ([]fs.DirEntry, error)
}

// DirSource is a Source over a plain directory, read through an os.Root so
// that no symlink leads a read outside it. Digests are computed as the
// snapshot package computes file digests, so they compare equal to the
// dependencies Needle records elsewhere.
type DirSource struct {
	root *os.Root
}

// OpenDir returns a DirSource over dir. Close releases it.
func OpenDir(dir string) (*DirSource, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &DirSource{root: r}, nil
}

// Close releases the directory handle.
func (s *DirSource) Close() error { return s.root.Close() }

// ReadFile implements Source.
func (s *DirSource) ReadFile(rel string) ([]byte, string, error) {
	if err := checkRel(rel); err != nil {
		return nil, "", err
	}
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		return nil, "", &fs.PathError{Op: "read", Path: rel, Err: errors.New("not a regular file")}
	}
	data, err := s.root.ReadFile(rel)
	if err != nil {
		return nil, "", err
	}
	return data, FileDigest(data), nil
}

// ReadDir implements Source.
func (s *DirSource) ReadDir(rel string) ([]fs.DirEntry, error) {
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	f, err := s.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// FileDigest is the digest DirSource reports for a file's content: the
// snapshot package's file digest.
func FileDigest(data []byte) string { return contentid.OfBytes(snapshot.FileTag, data) }

// checkRel refuses paths that are not clean, slash-separated and relative:
// a Source never resolves "..", an absolute path or a backslash.
func checkRel(rel string) error {
	if rel == "." {
		return nil
	}
	if rel == "" || path.IsAbs(rel) || strings.Contains(rel, `\`) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
		return &fs.PathError{Op: "open", Path: rel, Err: fs.ErrInvalid}
	}
	return nil
}
