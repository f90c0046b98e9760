package snapshot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// watched is the lstat of one path as it was recorded: absent, or its type,
// size, timestamps and inode. What git computed from a set of inputs (a
// directory listing, ignore rules read by a long-lived check-ignore) holds
// while every input is unchanged, and, like a stat-cache entry, only once
// the recording is more than RacyWindow after each input's last change: a
// rewrite within one timestamp tick leaves the stat as it was.
type watched struct {
	path   string // absolute
	exists bool
	mode   fs.FileMode // type bits
	st     fileStat
}

// watch records the lstat of path now.
func watch(path string) watched {
	w := watched{path: path}
	if fi, err := os.Lstat(path); err == nil {
		w.exists, w.mode, w.st = true, fi.Mode().Type(), statOf(fi)
	}
	return w
}

// holds reports whether w's path still has the recorded lstat and the
// recording, at recordedNs, was outside the racy window of its last
// change. Any lstat error other than "does not exist" fails it: unknown is
// never trusted.
func (w watched) holds(recordedNs int64) bool {
	fi, err := os.Lstat(w.path)
	if err != nil {
		return !w.exists && errors.Is(err, fs.ErrNotExist)
	}
	if !w.exists || fi.Mode().Type() != w.mode || statOf(fi) != w.st {
		return false
	}
	return recordedNs-max(w.st.MtimeNs, w.st.CtimeNs) > int64(RacyWindow)
}

// unchanged reports whether w's path still has the recorded lstat, without
// the racy-window condition: for what lives within one unit of work.
func (w watched) unchanged() bool {
	fi, err := os.Lstat(w.path)
	if err != nil {
		return !w.exists && errors.Is(err, fs.ErrNotExist)
	}
	return w.exists && fi.Mode().Type() == w.mode && statOf(fi) == w.st
}

// watchSet is inputs recorded together at recordedNs.
type watchSet struct {
	recordedNs int64
	watches    []watched
}

func (s watchSet) unchanged() bool {
	for _, w := range s.watches {
		if !w.unchanged() {
			return false
		}
	}
	return true
}

func (s watchSet) holds() bool {
	for _, w := range s.watches {
		if !w.holds(s.recordedNs) {
			return false
		}
	}
	return true
}

// gitInputs are the files outside the work tree whose content decides what
// git sees: the index (tracked paths), info/exclude, the excludes file
// (core.excludesFile) and the configuration files that could name another
// one. They are resolved when first needed and again once a configuration
// file changed, or in the next unit of work when one had changed within
// RacyWindow of the resolution; every cache entry watches them all, so
// such a change also recomputes it.
type gitInputs struct {
	mu    sync.Mutex
	paths []string // nil until resolved
	conf  watchSet // the configuration files, as of the resolution
	// fresh: resolved in the current unit of work (Repo.Release ends it),
	// which may rely on it even while a configuration file is within
	// RacyWindow of a change.
	fresh bool
}

// resolve returns the input paths, asking git when they were never
// resolved or a configuration file changed since.
func (g *gitInputs) resolve(ctx context.Context, r *Repo) ([]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paths != nil && g.conf.unchanged() && (g.fresh || g.conf.holds()) {
		return g.paths, nil
	}
	recorded := r.now().UnixNano()
	out, err := runGit(ctx, r.root, "rev-parse", "--git-path", "index", "--git-path", "info/exclude",
		"--git-path", "config", "--git-path", "config.worktree")
	if err != nil {
		return nil, err
	}
	gitPaths := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(gitPaths) != 4 {
		return nil, errors.New("git rev-parse --git-path: unexpected output")
	}
	for i, p := range gitPaths {
		if !filepath.IsAbs(p) {
			gitPaths[i] = filepath.Join(r.root, p)
		}
	}
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	configs := []string{gitPaths[2], gitPaths[3], "/etc/gitconfig"}
	if home != "" {
		configs = append(configs, filepath.Join(home, ".gitconfig"))
	}
	if xdg != "" {
		configs = append(configs, filepath.Join(xdg, "git", "config"))
	}
	excludes := ""
	out, err = runGit(ctx, r.root, "config", "--path", "--get", "core.excludesFile")
	var ge *GitError
	switch {
	case err == nil:
		excludes = strings.TrimRight(string(out), "\n")
		if excludes != "" && !filepath.IsAbs(excludes) {
			excludes = filepath.Join(r.root, excludes)
		}
	case errors.As(err, &ge) && ge.ExitCode == 1: // unset: git's default
		if xdg != "" {
			excludes = filepath.Join(xdg, "git", "ignore")
		}
	default:
		return nil, err
	}
	g.conf = watchSet{recordedNs: recorded}
	for _, c := range configs {
		g.conf.watches = append(g.conf.watches, watch(c))
	}
	g.paths = append([]string{gitPaths[0], gitPaths[1]}, configs...)
	if excludes != "" {
		g.paths = append(g.paths, excludes)
	}
	g.fresh = true
	return g.paths, nil
}

// ignoreFiles are the .gitignore files that rule on paths directly in the
// root-relative directory dir ("" for the root): those of the top level
// and each directory down to the root when the root lies below the top
// level, then the root's and each directory's down to dir.
func (r *Repo) ignoreFiles(dir string) []string {
	var files []string
	if sub := r.Sub(); sub != "" {
		// A root below the top level is under the .gitignore of every
		// directory from the top level down to it.
		up := strings.Count(sub, "/") + 1
		top := r.root
		for range up {
			top = filepath.Dir(top)
		}
		files = append(files, filepath.Join(top, ".gitignore"))
		parts := strings.Split(sub, "/")
		for i := range parts[:len(parts)-1] {
			files = append(files, filepath.Join(top, filepath.FromSlash(strings.Join(parts[:i+1], "/")), ".gitignore"))
		}
	}
	files = append(files, filepath.Join(r.root, ".gitignore"))
	if dir == "" {
		return files
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		files = append(files, filepath.Join(r.root, filepath.FromSlash(strings.Join(parts[:i+1], "/")), ".gitignore"))
	}
	return files
}

// Stamp is the lstat of a set of paths, each recorded at its own moment: a
// cheap way to learn that one of them may have changed since, without
// reading any. It is what a watcher polls (the evidence refresher of
// needle mcp serve) before paying for a look at the content. The zero
// Stamp watches nothing; it is not safe for concurrent use.
type Stamp struct {
	paths map[string]stamped
}

type stamped struct {
	w          watched
	recordedNs int64
}

// Add records, at now, the lstat of each path (absolute) not yet in s.
func (s *Stamp) Add(now time.Time, paths ...string) {
	if s.paths == nil {
		s.paths = map[string]stamped{}
	}
	for _, p := range paths {
		if _, ok := s.paths[p]; !ok {
			s.paths[p] = stamped{w: watch(p), recordedNs: now.UnixNano()}
		}
	}
}

// Len is the number of paths s watches.
func (s *Stamp) Len() int { return len(s.paths) }

// Changed reports whether some path may have changed since it was stamped:
// its lstat differs (or cannot be read), or it had changed within
// RacyWindow before it was stamped and that window has passed by now. The
// second is git's racy-clean rule: a rewrite within one timestamp tick of
// the stamp leaves the lstat as it was, so only a look at the content
// settles it, and waiting out the window first lets the caller's next
// stamp of that path be a trusted one.
func (s *Stamp) Changed(now time.Time) bool {
	for _, p := range s.paths {
		if !p.w.unchanged() {
			return true
		}
		if !p.w.exists {
			continue
		}
		last := max(p.w.st.MtimeNs, p.w.st.CtimeNs)
		if p.recordedNs-last <= int64(RacyWindow) && now.UnixNano()-last > int64(RacyWindow) {
			return true
		}
	}
	return false
}
