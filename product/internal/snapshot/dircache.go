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
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			watches = append(watches, watch(p))
		}
	}
	add(r.abs(dir))
	for _, p := range inputs {
		add(p)
	}
	for _, f := range r.ignoreFiles(dir) {
		add(f)
	}
	prefix, spec := "", []string(nil)
	if dir != "" {
		prefix, spec = dir+"/", []string{dir + "/"}
	}
	args := []string{"--literal-pathspecs", "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard", "--"}
	out, err := runGit(ctx, r.root, append(args, spec...)...)
	if err != nil {
		return nil, nil, false, err
	}
	// witness[name] is a path listed below the subdirectory name, tracked
	// when it has one ("" for a tracked witness: the index proves it).
	witness := map[string]string{}
	var listed []string
	for _, rec := range splitNUL(out) {
		tag, p, ok := strings.Cut(rec, " ")
		if !ok {
			return nil, nil, false, errors.New("git ls-files -t: unexpected output")
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
	if names, err = r.dirNames(dir, listed); err != nil {
		return nil, nil, false, err
	}
	for _, n := range names {
		name, isDir := strings.CutSuffix(n, "/")
		if w := witness[name]; isDir && w != "" {
			add(r.abs(strings.TrimSuffix(w, "/")))
			for _, f := range r.ignoreFiles(path.Dir(strings.TrimSuffix(w, "/"))) {
				add(f)
			}
		}
	}
	// Subdirectories on disk that git does not count.
	entries, err := os.ReadDir(r.abs(dir))
	if err != nil {
		return nil, nil, false, err
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
			add(p)
			add(filepath.Join(p, ".gitignore"))
			return nil
		})
		if errors.Is(err, errTooManyDirs) {
			return names, nil, false, nil
		}
		if err != nil {
			return nil, nil, false, err
		}
	}
	return names, watches, true, nil
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
