package snapshot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// Limits of the directory cache: entries kept, and the directories an
// entry may watch below subdirectories that hold nothing git sees (past it
// the directory is listed by git every time).
const (
	maxDirEntries    = 4096
	maxUncountedDirs = 64
)

// dirCache holds directory digests, each with the inputs that prove it
// still holds, the way git's untracked cache validates a directory by its
// own stat instead of reading it again. A digest depends on:
//
//   - the directory's own entries: its lstat (adding, removing or renaming
//     an entry changes its mtime and ctime);
//   - what git tracks and ignores: the index, info/exclude, the excludes
//     file, the configuration, and the .gitignore of the root and of each
//     directory down to this one (gitInputs, ignoreFiles);
//   - for each subdirectory git counts, one path git lists below it (a
//     witness): a tracked one stays listed while the index is unchanged,
//     an untracked one while it exists and the .gitignore files above it
//     are unchanged;
//   - for each subdirectory git does not count, proof that nothing below it
//     becomes visible: none when git ignores the subdirectory itself (a
//     file below an ignored directory cannot be re-included, and an added
//     one is not tracked while the index is unchanged), else the lstat of
//     every directory of its subtree and of their .gitignore files.
//
// So validating an entry costs a few lstats per direct subdirectory,
// whatever lies below them. Every input is watched with the racy-window
// rule (watched.holds). A plain directory depends on its own lstat only:
// its digest counts every subdirectory.
type dirCache struct {
	mu      sync.Mutex
	entries map[string]dirEntry // by symlink-free root-relative directory, "" for the root
	hits    int                 // digests answered from an entry (tests count them)
}

type dirEntry struct {
	digest string
	inputs watchSet
}

func newDirCache() *dirCache { return &dirCache{entries: map[string]dirEntry{}} }

func (c *dirCache) get(dir string) (dirEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[dir]
	return e, ok
}

func (c *dirCache) put(dir string, e dirEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxDirEntries {
		clear(c.entries)
	}
	c.entries[dir] = e
}

// dirDigest is DirDigest of the resolved directory dir, through the cache.
func (r *Repo) dirDigest(ctx context.Context, dir string) (string, error) {
	if e, ok := r.dirs.get(dir); ok && e.inputs.holds() {
		r.dirs.mu.Lock()
		r.dirs.hits++
		r.dirs.mu.Unlock()
		return e.digest, nil
	}
	// Stamped before anything is read: a change after this instant fails
	// the racy-window test of the entry's inputs.
	set := watchSet{recordedNs: r.now().UnixNano()}
	var names []string
	cacheable := true
	git, err := r.gitRepo()
	if err != nil {
		return "", err
	}
	if git {
		names, set.watches, cacheable, err = r.gitDirListing(ctx, dir)
	} else {
		set.watches = []watched{watch(r.abs(dir))}
		names, err = r.plainDirNames(dir)
	}
	if err != nil {
		return "", err
	}
	slices.Sort(names)
	digest, err := contentid.Of(DirTag, slices.Compact(names))
	if err != nil {
		return "", err
	}
	if cacheable {
		r.dirs.put(dir, dirEntry{digest: digest, inputs: set})
	}
	return digest, nil
}

// abs is the absolute path of the root-relative slash path rel ("" for
// the root).
func (r *Repo) abs(rel string) string {
	return filepath.Join(r.root, filepath.FromSlash(rel))
}

// gitDirListing lists dir as gitDirNames does and returns the inputs its
// listing depends on (dirCache). cacheable is false when proving a
// subdirectory empty would watch more than maxUncountedDirs directories.
func (r *Repo) gitDirListing(ctx context.Context, dir string) (names []string, watches []watched, cacheable bool, err error) {
	inputs, err := r.inputs.resolve(ctx, r)
	if err != nil {
		return nil, nil, false, err
	}
	w := &watchList{seen: map[string]bool{}}
	w.add(r.abs(dir))
	for _, p := range inputs {
		w.add(p)
	}
	for _, f := range r.ignoreFiles(dir) {
		w.add(f)
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	listed, witness, err := r.lsFilesTagged(ctx, dir, prefix)
	if err != nil {
		return nil, nil, false, err
	}
	if names, err = r.dirNames(dir, listed); err != nil {
		return nil, nil, false, err
	}
	for _, n := range names {
		name, isDir := strings.CutSuffix(n, "/")
		if wit := witness[name]; isDir && wit != "" {
			w.add(r.abs(strings.TrimSuffix(wit, "/")))
			for _, f := range r.ignoreFiles(path.Dir(strings.TrimSuffix(wit, "/"))) {
				w.add(f)
			}
		}
	}
	cacheable, err = r.watchUncountedDirs(ctx, dir, prefix, names, w)
	if err != nil {
		return nil, nil, false, err
	}
	if !cacheable {
		return names, nil, false, nil
	}
	return names, w.list, true, nil
}

// watchList is a list of watched paths without repeats.
type watchList struct {
	seen map[string]bool
	list []watched
}

// add watches p unless it is watched already.
func (w *watchList) add(p string) {
	if !w.seen[p] {
		w.seen[p] = true
		w.list = append(w.list, watch(p))
	}
}

// lsFilesTagged returns the paths git ls-files lists below dir (tracked
// and untracked, not ignored) and, for each subdirectory name, a witness:
// a path listed below it, "" when one is tracked (the index proves it).
func (r *Repo) lsFilesTagged(ctx context.Context, dir, prefix string) (listed []string, witness map[string]string, err error) {
	var spec []string
	if dir != "" {
		spec = []string{dir + "/"}
	}
	args := []string{"--literal-pathspecs", "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard", "--"}
	out, err := runGit(ctx, r.root, append(args, spec...)...)
	if err != nil {
		return nil, nil, err
	}
	witness = map[string]string{}
	for _, rec := range splitNUL(out) {
		tag, p, ok := strings.Cut(rec, " ")
		if !ok {
			return nil, nil, errors.New("git ls-files -t: unexpected output")
		}
		listed = append(listed, p)
		name, _, sub := strings.Cut(strings.TrimPrefix(p, prefix), "/")
		if !sub {
			continue
		}
		if w, ok := witness[name]; !ok || w != "" && tag != "?" {
			if tag == "?" {
				witness[name] = p
			} else {
				witness[name] = ""
			}
		}
	}
	return listed, witness, nil
}

// watchUncountedDirs watches every directory below the subdirectories of
// dir on disk that git does not count and does not ignore, and their
// .gitignore files, since a file appearing there would add a name.
// cacheable is false when that would take more than maxUncountedDirs.
func (r *Repo) watchUncountedDirs(ctx context.Context, dir, prefix string, names []string, w *watchList) (cacheable bool, err error) {
	entries, err := os.ReadDir(r.abs(dir))
	if err != nil {
		return false, err
	}
	budget := maxUncountedDirs
	for _, e := range entries {
		if !e.IsDir() || e.Name() == ".git" || slices.Contains(names, e.Name()+"/") {
			continue // git never looks inside .git
		}
		sub := prefix + e.Name()
		if r.dirIgnored(ctx, sub) {
			continue
		}
		err := filepath.WalkDir(r.abs(sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			if budget--; budget < 0 {
				return errTooManyDirs
			}
			w.add(p)
			w.add(filepath.Join(p, ".gitignore"))
			return nil
		})
		if errors.Is(err, errTooManyDirs) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

var errTooManyDirs = errors.New("too many directories to watch")

// dirIgnored reports whether git ignores the directory sub itself (a
// pattern matches it or a directory above it), so that nothing below it can
// become visible but by the index. Any doubt (a name check-ignore would
// read as a pathspec, a failure) is false: the subtree is watched instead.
func (r *Repo) dirIgnored(ctx context.Context, sub string) bool {
	if strings.HasPrefix(sub, ":") || strings.ContainsAny(sub, "*?[\\") {
		return false
	}
	if ignored, ok := r.ign.query(ctx, r, sub+"/"); ok {
		return ignored
	}
	_, err := runGit(ctx, r.root, "check-ignore", "-q", "--", sub+"/")
	return err == nil
}
