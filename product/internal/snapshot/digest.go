package snapshot

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// Domain-separation tags of the digests this package computes. Changing one
// changes every digest of its kind, which makes every recorded dependency
// look stale.
const (
	FileTag     = "needle.file.v1"
	DirTag      = "needle.dir.v1"
	SnapshotTag = "needle.snapshot.v1"
)

// FileDigest returns the digest of the file at rel. When the stat cache
// holds a trusted entry (doc.go) it costs one path resolution and no read;
// otherwise the file is hashed and a fresh entry stored.
func (r *Repo) FileDigest(rel string) (string, error) {
	if _, err := r.gitRepo(); err != nil {
		return "", err
	}
	_, fi, err := r.resolve(rel)
	if err != nil {
		return "", err
	}
	if r.cache != nil {
		if e, ok := r.cache.Get(rel); ok && trusted(e, statOf(fi)) {
			return e.Digest, nil
		}
	}
	_, digest, err := r.ReadFile(rel)
	return digest, err
}

// FileDigestMax is FileDigest for a file of at most max bytes: a larger one
// is ErrTooLarge, found from its stat without reading it.
func (r *Repo) FileDigestMax(rel string, max int64) (string, error) {
	if _, err := r.gitRepo(); err != nil {
		return "", err
	}
	_, fi, err := r.resolve(rel)
	if err != nil {
		return "", err
	}
	if fi.Size() > max {
		return "", tooLarge(rel, fi.Size(), max)
	}
	if r.cache != nil {
		if e, ok := r.cache.Get(rel); ok && trusted(e, statOf(fi)) {
			return e.Digest, nil
		}
	}
	_, digest, err := r.ReadFileMax(rel, max)
	return digest, err
}

// ReadFileMax is ReadFile for a file of at most max bytes: a larger one is
// ErrTooLarge, found from the opened file's stat before anything is read,
// and the read itself stops past max bytes (a file growing under the read).
func (r *Repo) ReadFileMax(rel string, max int64) (data []byte, digest string, err error) {
	return r.readBounded(rel, max)
}

// FileTooLarge is the error ErrTooLarge wraps: the file's size and the bound.
type FileTooLarge struct {
	Path      string
	Size, Max int64
}

func (e *FileTooLarge) Error() string {
	return fmt.Sprintf("%s is %d bytes; the limit is %d", e.Path, e.Size, e.Max)
}

func (e *FileTooLarge) Unwrap() error { return ErrTooLarge }

func tooLarge(rel string, size, max int64) error {
	return &FileTooLarge{Path: rel, Size: size, Max: max}
}

// ReadFile reads the file at rel once and returns its content with the
// digest of exactly those bytes, refreshing the cache entry. Use it rather
// than FileDigest plus a separate read when the content is needed, so the
// content and the digest cannot disagree.
func (r *Repo) ReadFile(rel string) (data []byte, digest string, err error) {
	return r.readBounded(rel, -1)
}

// readBounded reads rel; max < 0 means no bound.
func (r *Repo) readBounded(rel string, max int64) (data []byte, digest string, err error) {
	if _, err := r.gitRepo(); err != nil {
		return nil, "", err
	}
	abs, _, err := r.resolve(rel)
	if err != nil {
		return nil, "", err
	}
	// Stamp before opening: see doc.go for why this ordering is what makes
	// the racy-window test sound.
	recorded := r.now().UnixNano()
	name, err := filepath.Rel(r.root, abs)
	if err != nil {
		return nil, "", err
	}
	data, fi, err := r.readFile(r.root, name, max)
	if fi != nil && max >= 0 && (fi.Size() > max || int64(len(data)) > max) {
		return nil, "", tooLarge(rel, max64(fi.Size(), int64(len(data))), max)
	}
	if err != nil {
		return nil, "", statError(rel, err)
	}
	if !fi.Mode().IsRegular() { // replaced between resolve and open
		return nil, "", fmt.Errorf("%w: %s", ErrNotRegular, rel)
	}
	digest = contentid.OfBytes(FileTag, data)
	if r.cache != nil {
		r.cache.Put(rel, newEntry(statOf(fi), digest, recorded))
	}
	return data, digest, nil
}

// readFile opens name (the resolved path, relative to root) and returns its
// content and the stat of the opened file, taken before reading so that a
// write racing the read changes the stat the next lookup sees. Opening
// through os.Root keeps a directory swapped for a symlink after Resolve from
// leading the read outside the root; a FIFO swapped in is refused before it
// can block the read.
//
// With max >= 0, a file whose stat says it is larger is not read at all,
// and the read stops once it holds more than max bytes.
func readFile(root, name string, max int64) ([]byte, fs.FileInfo, error) {
	f, err := os.OpenInRoot(root, name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fi, err
	}
	if max >= 0 && fi.Size() > max {
		return nil, fi, nil
	}
	data := make([]byte, 0, fi.Size()+1)
	for {
		if max >= 0 && int64(len(data)) > max {
			return data, fi, nil
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, fi, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if len(data) == cap(data) {
			data = slices.Grow(data, len(data))
		}
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// DirDigest returns the digest of the sorted names of the regular files and
// subdirectories directly in relDir ("" or "." is the root), subdirectory
// names ending in "/". For git only what git sees counts — ignored entries
// and directories holding nothing but ignored files are left out. The
// digest is answered from a cache while the inputs of its listing are
// unchanged (dirCache: a few lstats per direct subdirectory); otherwise
// git lists relDir alone, so the cost follows the directory's size, not
// the repository's.
func (r *Repo) DirDigest(ctx context.Context, relDir string) (string, error) {
	dir, err := r.resolveDir(relDir)
	if err != nil {
		return "", err
	}
	digest, err := r.dirDigest(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("list directory %q: %w", relDir, err)
	}
	return digest, nil
}

// resolveDir returns the symlink-free root-relative slash path of the
// directory relDir, "" for the root.
func (r *Repo) resolveDir(relDir string) (string, error) {
	if relDir == "" || relDir == "." {
		return "", nil
	}
	if err := checkRel(relDir); err != nil {
		return "", err
	}
	abs, fi, err := r.walk(relDir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("list directory %s: not a directory", relDir)
	}
	rel, err := filepath.Rel(r.root, abs)
	if err != nil || rel == "." {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

// gitDirNames lists the entries git sees directly in dir: each listed path's
// first component below dir, kept when it is a regular file or a directory.
func (r *Repo) gitDirNames(ctx context.Context, dir string) ([]string, error) {
	var spec []string
	if dir != "" {
		spec = []string{dir + "/"}
	}
	listed, err := r.lsFiles(ctx, spec)
	if err != nil {
		return nil, err
	}
	return r.dirNames(dir, listed)
}

// dirNames is gitDirNames of the paths git listed under dir.
func (r *Repo) dirNames(dir string, listed []string) ([]string, error) {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	names, seen := []string{}, make(map[string]bool)
	for _, p := range listed {
		name, _, sub := strings.Cut(strings.TrimPrefix(p, prefix), "/")
		if seen[name] {
			continue // one lstat per entry, however many files lie below it
		}
		seen[name] = true
		fi, err := os.Lstat(filepath.Join(r.root, filepath.FromSlash(prefix+name)))
		switch {
		case err != nil:
			// deleted but still in the index
		case fi.IsDir():
			names = append(names, name+"/")
		case fi.Mode().IsRegular() && !sub:
			names = append(names, name)
		}
	}
	return names, nil
}

// plainDirNames lists the regular files and directories in dir, less .git.
func (r *Repo) plainDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(r.root, filepath.FromSlash(dir)))
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, e := range entries {
		switch {
		case e.Name() == ".git":
		case e.IsDir():
			names = append(names, e.Name()+"/")
		case e.Type().IsRegular():
			names = append(names, e.Name())
		}
	}
	return names, nil
}
