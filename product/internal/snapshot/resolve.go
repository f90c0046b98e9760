package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Errors of Resolve and everything built on it; match them with errors.Is.
var (
	// ErrUnsafePath: the path is not a clean root-relative slash path, or it
	// (through a symlink) leads outside the root.
	ErrUnsafePath = errors.New("unsafe path")
	// ErrNotExist: the path does not name anything under the root.
	ErrNotExist = errors.New("file does not exist")
	// ErrNotRegular: the path names a directory, device, socket or the like.
	ErrNotRegular = errors.New("not a regular file")
	// ErrUnreadable: the path cannot be followed or read for a reason of its
	// own — a name longer than the file system allows, a symlink cycle, a
	// component Needle may not search or read.
	ErrUnreadable = errors.New("path cannot be read")
	// ErrTooLarge: the file is larger than the bound its reader set.
	ErrTooLarge = errors.New("file too large")
)

// maxSymlinks bounds how many symlinks one resolution follows, as the
// kernel's ELOOP limit does, so a cycle fails instead of spinning.
const maxSymlinks = 40

// Resolve returns the absolute, symlink-free path of the regular file at rel.
// rel must be clean, relative and slash-separated; symlinks are followed one
// component at a time and any step that would leave the root is refused, so
// Resolve never even looks outside it. An absolute symlink target counts as
// inside only when it is lexically under Root.
func (r *Repo) Resolve(rel string) (abs string, err error) {
	if _, err := r.gitRepo(); err != nil {
		return "", err
	}
	abs, _, err = r.resolve(rel)
	return abs, err
}

// Resolution is where a path leads.
type Resolution struct {
	// Target is the root-relative path of the regular file the path names,
	// symlinks resolved.
	Target string
	// Links are the root-relative paths of the symlinks followed on the way,
	// in order: the path's own components and those of each link's target.
	Links []string
}

// ResolvePath resolves rel like Resolve and says how: the file it leads to
// and every symlink followed. Callers that must hold every hop to a rule
// (containment, ignore rules) check Links and Target.
func (r *Repo) ResolvePath(rel string) (Resolution, error) {
	if _, err := r.gitRepo(); err != nil {
		return Resolution{}, err
	}
	if err := checkRel(rel); err != nil {
		return Resolution{}, err
	}
	var res Resolution
	abs, fi, err := r.walkLinks(rel, &res.Links)
	if err != nil {
		return Resolution{}, err
	}
	if !fi.Mode().IsRegular() {
		return Resolution{}, fmt.Errorf("%w: %s", ErrNotRegular, rel)
	}
	target, err := filepath.Rel(r.root, abs)
	if err != nil || !filepath.IsLocal(target) {
		return Resolution{}, fmt.Errorf("%w: %s leads outside the root", ErrUnsafePath, rel)
	}
	res.Target = filepath.ToSlash(target)
	return res, nil
}

// resolve is Resolve that also returns the file's lstat, which FileDigest
// compares against the cache.
func (r *Repo) resolve(rel string) (string, fs.FileInfo, error) {
	if err := checkRel(rel); err != nil {
		return "", nil, err
	}
	abs, fi, err := r.walk(rel)
	if err != nil {
		return "", nil, err
	}
	if !fi.Mode().IsRegular() {
		return "", nil, fmt.Errorf("%w: %s", ErrNotRegular, rel)
	}
	return abs, fi, nil
}

// checkRel rejects paths that are not clean root-relative slash paths.
func checkRel(rel string) error {
	switch {
	case rel == "":
		return fmt.Errorf("%w: empty path", ErrUnsafePath)
	case strings.ContainsAny(rel, "\\\x00"):
		return fmt.Errorf("%w: %q contains a backslash or NUL", ErrUnsafePath, rel)
	case path.IsAbs(rel):
		return fmt.Errorf("%w: %s is absolute", ErrUnsafePath, rel)
	case path.Clean(rel) != rel:
		return fmt.Errorf("%w: %s is not clean", ErrUnsafePath, rel)
	case rel == ".." || strings.HasPrefix(rel, "../"):
		return fmt.Errorf("%w: %s leaves the root", ErrUnsafePath, rel)
	}
	return nil
}

// walk follows rel from the root component by component. cur is always a
// symlink-free directory under the root, so ".." from a symlink target is its
// physical parent and stepping above the root is detectable. It returns the
// final path and its lstat (never a symlink).
func (r *Repo) walk(rel string) (string, fs.FileInfo, error) {
	return r.walkLinks(rel, nil)
}

// walkLinks is walk that appends the root-relative path of every symlink it
// follows to links, when links is not nil.
func (r *Repo) walkLinks(rel string, links *[]string) (string, fs.FileInfo, error) {
	cur, fi := r.root, fs.FileInfo(nil)
	todo, nlinks := strings.Split(rel, "/"), 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if cur == r.root {
				return "", nil, fmt.Errorf("%w: %s leads outside the root", ErrUnsafePath, rel)
			}
			cur, fi = filepath.Dir(cur), nil
			continue
		}
		next := filepath.Join(cur, name)
		info, err := os.Lstat(next)
		if err != nil {
			return "", nil, statError(rel, err)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			cur, fi = next, info
			continue
		}
		if nlinks++; nlinks > maxSymlinks {
			return "", nil, fmt.Errorf("%w: %s: too many symlinks", ErrUnreadable, rel)
		}
		if links != nil {
			if at, err := filepath.Rel(r.root, next); err == nil {
				*links = append(*links, filepath.ToSlash(at))
			}
		}
		rest, restart, err := r.linkTarget(rel, next)
		if err != nil {
			return "", nil, err
		}
		if restart {
			cur = r.root
		}
		todo = append(rest, todo...)
	}
	if fi == nil { // rel ended at the root or a ".."-reached directory
		info, err := os.Lstat(cur)
		if err != nil {
			return "", nil, statError(rel, err)
		}
		fi = info
	}
	return cur, fi, nil
}

// linkTarget reads the symlink at link and returns its target's components,
// and whether they are relative to the root (an absolute target) rather than
// to the link's directory.
func (r *Repo) linkTarget(rel, link string) (parts []string, fromRoot bool, err error) {
	target, err := os.Readlink(link)
	if err != nil {
		return nil, false, statError(rel, err)
	}
	target = filepath.ToSlash(target)
	if !path.IsAbs(target) {
		return strings.Split(target, "/"), false, nil
	}
	inside, err := filepath.Rel(r.root, filepath.FromSlash(target))
	if err != nil || !filepath.IsLocal(inside) {
		return nil, false, fmt.Errorf("%w: %s leads outside the root", ErrUnsafePath, rel)
	}
	return strings.Split(filepath.ToSlash(inside), "/"), true, nil
}

// statError maps a failed lstat to ErrNotExist when the path simply is not
// there (including "a component is a file", ENOTDIR), and to ErrUnreadable
// when the path itself is the problem (too long a name, a loop, a component
// that may not be searched or read): either way a fact about the path, not
// a failure of the repository.
func statError(rel string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: %s", ErrNotExist, rel)
	case errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.ELOOP) || errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %s: %w", ErrUnreadable, rel, err)
	}
	return fmt.Errorf("resolve %s: %w", rel, err)
}
