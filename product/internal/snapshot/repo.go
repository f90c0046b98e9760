package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Repo is a source repository opened at a root directory. It holds no view
// of the files: every method looks at the disk as it is now. A Repo is safe
// for concurrent use.
type Repo struct {
	root  string    // absolute, symlinks evaluated
	cache StatCache // nil: no caching

	// Shared by the copies WithCache makes.
	det    *detection     // whether root is a git work tree
	inputs *gitInputs     // what git reads besides the work tree
	ign    *ignoreChecker // the long-lived check-ignore
	dirs   *dirCache      // directory digests

	// Seams for tests: the clock that stamps Entry.RecordedNs, and the read
	// of one file's content and stat (see readFile).
	now      func() time.Time
	readFile func(root, name string, max int64) ([]byte, fs.FileInfo, error)
}

// Open opens the repository at root, which must be a directory. It is a git
// repository iff root lies in a git work tree — its top level or a
// subdirectory, whose file set is then what git sees below it, under the
// whole work tree's ignore rules. A directory with no .git entry at or above
// it is a plain directory. A repository git refuses to work in (a
// safe.directory ownership check, a corrupt .git, a .git git does not
// recognize, no git installed while a .git exists) is an error, not a plain
// directory, so that ignore rules are never silently dropped. cache may be
// nil.
func Open(ctx context.Context, root string, cache StatCache) (*Repo, error) {
	abs, err := RootOf(root)
	if err != nil {
		return nil, err
	}
	r := newRepo(abs, cache)
	r.det.decide(ctx, abs)
	if _, err := r.gitRepo(); err != nil {
		return nil, err
	}
	return r, nil
}

// OpenAsync is Open that returns as soon as root is known to be a
// directory: whether it is a git work tree (a git rev-parse) is decided in
// the background, and every method that reads the repository waits for
// the decision first and fails, as Open would have, when git refuses the
// repository. A server opens its repository this way and answers its
// first request while git starts.
func OpenAsync(ctx context.Context, root string, cache StatCache) (*Repo, error) {
	abs, err := RootOf(root)
	if err != nil {
		return nil, err
	}
	r := newRepo(abs, cache)
	// The decision outlives the call that opened the repository.
	go r.det.decide(context.WithoutCancel(ctx), abs)
	return r, nil
}

func newRepo(abs string, cache StatCache) *Repo {
	return &Repo{root: abs, cache: cache, now: time.Now, readFile: readFile,
		det: &detection{done: make(chan struct{})}, inputs: &gitInputs{}, ign: &ignoreChecker{}, dirs: newDirCache()}
}

// detection is whether a repository's root lies in a git work tree, and
// where below its top level, decided once.
type detection struct {
	done chan struct{} // closed once git, sub and err are set
	git  bool
	sub  string // git: root relative to the work tree's top level, "" at the top
	err  error
}

func (d *detection) decide(ctx context.Context, abs string) {
	defer close(d.done)
	d.git, d.sub, d.err = workTree(ctx, abs)
	if d.err != nil {
		d.err = fmt.Errorf("open %s: %w", abs, d.err)
	}
}

// gitRepo waits for the detection and returns it: whether the root is a
// git work tree, or why git refused it.
func (r *Repo) gitRepo() (bool, error) {
	<-r.det.done
	return r.det.git, r.det.err
}

// WithCache returns r answering digests through cache (nil: no caching).
// Opening once and attaching the cache afterwards spares a second git
// rev-parse when the cache is keyed by the resolved root.
func (r *Repo) WithCache(cache StatCache) *Repo {
	c := *r
	c.cache = cache
	return &c
}

// WithClock returns r stamping what it records (stat-cache entries,
// directory listings) with now instead of the wall clock. Benchmarks use a
// clock ahead of the wall clock to have recordings count as older than
// RacyWindow without waiting it out.
func (r *Repo) WithClock(now func() time.Time) *Repo {
	c := *r
	c.now = now
	return &c
}

// RootOf returns the root a Repo opened at root has: its absolute path with
// symlinks evaluated. It fails as Open does when root is not a directory,
// and runs no git: a caller can know the root before the repository is
// opened.
func RootOf(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", root, err)
	}
	abs, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", root, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("open %s: %w", root, err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("open %s: not a directory", root)
	}
	return abs, nil
}

// workTree reports whether dir (absolute, symlink-free) lies in a git work
// tree, and where relative to its top level ("" at the top). When git says
// "not a repository" but a .git entry exists at or above dir, git does not
// accept what is there: that is an error, never a plain directory.
func workTree(ctx context.Context, dir string) (bool, string, error) {
	out, err := runGit(ctx, dir, "rev-parse", "--show-toplevel")
	if isNotRepo(err) {
		if at := dotGitAbove(dir); at != "" {
			return false, "", fmt.Errorf("%s exists, but git does not read it as a repository: %w", at, err)
		}
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	top := strings.TrimRight(string(out), "\n")
	if top == "" { // a bare repository has no work tree
		return false, "", nil
	}
	top, err = filepath.EvalSymlinks(top)
	if err != nil {
		return false, "", fmt.Errorf("git top level: %w", err)
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return false, "", fmt.Errorf("git places %s in the work tree %s, which does not hold it", dir, top)
	}
	if rel == "." {
		return true, "", nil
	}
	return true, filepath.ToSlash(rel), nil
}

// dotGitAbove returns the first .git entry at or above dir, "" if none.
func dotGitAbove(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return filepath.Join(d, ".git")
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Root returns the repository's absolute root with symlinks evaluated.
func (r *Repo) Root() string { return r.root }

// IsGit reports whether the root lies in a git work tree, at its top level
// or below it (false when git refused it: every other method reports that).
func (r *Repo) IsGit() bool {
	git, err := r.gitRepo()
	return git && err == nil
}

// Sub returns the root's path relative to the top level of its git work
// tree: "" at the top level and for a plain directory.
func (r *Repo) Sub() string {
	if git, err := r.gitRepo(); err != nil || !git {
		return ""
	}
	return r.det.sub
}

// Head returns the hex id of the HEAD commit, or "" for a plain directory
// or a git repository with no commit yet.
func (r *Repo) Head(ctx context.Context) (string, error) {
	if git, err := r.gitRepo(); err != nil || !git {
		return "", err
	}
	out, err := runGit(ctx, r.root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	var ge *GitError
	if errors.As(err, &ge) && ge.ExitCode == 1 && ge.Stderr == "" {
		return "", nil // unborn branch: --verify --quiet fails silently
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Files returns the sorted paths of the repository's regular files. For git
// that is the index plus untracked files git does not ignore, less paths no
// longer on disk (deleted but still in the index) and anything that is not a
// regular file (symlinks, submodules). For a plain directory it is a walk
// that skips .git. Paths Resolve would refuse (a backslash in a name) are
// left out, since no caller could name them.
func (r *Repo) Files(ctx context.Context) ([]string, error) {
	git, err := r.gitRepo()
	if err != nil {
		return nil, err
	}
	var paths []string
	if git {
		paths, err = r.gitFiles(ctx, nil)
	} else {
		paths, err = r.walkFiles(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", r.root, err)
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// Ignored reports whether rel, a root-relative path that need not exist, is
// outside the repository's file set because it is ignored: any path with a
// .git component (git's database, or a worktree's pointer to one), and for
// git whatever `git check-ignore` says is ignored (.gitignore files,
// .git/info/exclude, core.excludesFile). A tracked file is never ignored,
// even when a pattern matches it, just as Files lists it. For a plain
// directory nothing else is ignored. rel must be clean, relative and
// slash-separated (ErrUnsafePath otherwise).
func (r *Repo) Ignored(ctx context.Context, rel string) (bool, error) {
	if err := checkRel(rel); err != nil {
		return false, err
	}
	if slices.Contains(strings.Split(rel, "/"), ".git") {
		return true, nil
	}
	if git, err := r.gitRepo(); err != nil || !git {
		return false, err
	}
	ignored, err := r.checkIgnore(ctx, rel)
	if err != nil {
		return false, fmt.Errorf("check whether %s is ignored: %w", rel, err)
	}
	return ignored, nil
}

// checkIgnore asks `git check-ignore` about rel. It reads its arguments as
// pathspecs and refuses --literal-pathspecs, so a name with a leading ':'
// (pathspec magic) or a wildcard, which could match some other, tracked
// file and pass for tracked, is asked differently: whether rel itself is
// tracked goes to ls-files with a literal pathspec, and check-ignore
// --no-index, which consults only the ignore rules, gets "./"+rel, which
// no magic can start.
//
// Any other name is asked of the repository's long-lived check-ignore
// (ignoreChecker) while what that process read is unchanged, and of a
// one-shot check-ignore otherwise.
func (r *Repo) checkIgnore(ctx context.Context, rel string) (bool, error) {
	magic := strings.HasPrefix(rel, ":") || strings.ContainsAny(rel, "*?[")
	if !magic {
		if ignored, ok := r.ign.query(ctx, r, rel); ok {
			return ignored, nil
		}
	}
	args := []string{"check-ignore", "-q", "--", rel}
	if magic {
		tracked, err := runGit(ctx, r.root, "--literal-pathspecs", "ls-files", "-z", "--cached", "--", rel)
		if err != nil || len(tracked) > 0 {
			return false, err
		}
		args = []string{"check-ignore", "-q", "--no-index", "--", "./" + rel}
	}
	_, err := runGit(ctx, r.root, args...)
	var ge *GitError
	switch {
	case err == nil: // exit 0: ignored
		return true, nil
	case errors.As(err, &ge) && ge.ExitCode == 1: // exit 1: not ignored
		return false, nil
	default:
		return false, err
	}
}

// lsFiles lists the paths git sees under pathspec (nil: everything), tracked
// or untracked-and-not-ignored, exactly as recorded (possibly not on disk).
func (r *Repo) lsFiles(ctx context.Context, pathspec []string) ([]string, error) {
	args := []string{"--literal-pathspecs", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--"}
	out, err := runGit(ctx, r.root, append(args, pathspec...)...)
	if err != nil {
		return nil, err
	}
	return splitNUL(out), nil
}

// gitFiles is lsFiles filtered to safe paths of regular files on disk.
func (r *Repo) gitFiles(ctx context.Context, pathspec []string) ([]string, error) {
	listed, err := r.lsFiles(ctx, pathspec)
	if err != nil {
		return nil, err
	}
	paths := listed[:0]
	for _, p := range listed {
		if checkRel(p) != nil {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(r.root, filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// walkFiles lists the regular files of a plain directory.
func (r *Repo) walkFiles(ctx context.Context) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(r.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && p != r.root {
			return skipGit(d)
		}
		if !d.Type().IsRegular() {
			return ctx.Err() // checked once per entry: cheap, and walks can be long
		}
		rel, err := filepath.Rel(r.root, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); checkRel(rel) == nil {
			paths = append(paths, rel)
		}
		return nil
	})
	return paths, err
}

// skipGit leaves out a .git entry: a directory is git's database and a file
// is a worktree's pointer to one; neither is source.
func skipGit(d fs.DirEntry) error {
	if d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}
