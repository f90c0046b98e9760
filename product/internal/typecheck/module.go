package typecheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// A gomod is one module of a build: the main module, a dependency in the
// module cache, or a replacement inside the repository.
type gomod struct {
	path      string
	version   string // "" for the main module and local replacements
	goVersion string // the go directive, "" when unknown
	// Exactly one of rel and abs is set: rel is a directory of the Source
	// (mutable, hashed), abs one in the module cache (immutable).
	rel, abs string
	// missing says why the module's files cannot be read, "" when they can.
	missing string
}

// buildList is the module graph the loader resolves imports through: what
// the go command would select, computed from go.mod files alone so that it
// works — and degrades one module at a time — when some are not in the
// module cache.
type buildList struct {
	main *gomod
	mods map[string]*gomod // by module path, the selected version
	// vendor: third-party imports resolve to the main module's vendor
	// directory, as the go command does when vendor/modules.txt exists.
	vendor bool
	// deps are the go.mod and vendor/modules.txt files read from the Source.
	deps []FileDep
	// moduleless: the repository has no go.mod; main stands in for one.
	moduleless bool
}

// readBuildList reads the main module rooted at rel (a directory of src
// holding go.mod) and selects its dependencies' versions by minimal version
// selection over the go.mod files the module cache holds. A main module at
// go 1.17 or later lists every module that provides a package to it (the
// go command's pruned graph), so its requirements are used as they stand.
func readBuildList(src Source, rel, modCache string) (*buildList, error) {
	data, digest, err := src.ReadFile(path.Join(rel, "go.mod"))
	if err != nil {
		return nil, err
	}
	mf, err := modfile.Parse(path.Join(rel, "go.mod"), data, nil)
	if err != nil {
		return nil, &Error{Kind: KindGoMod, Path: path.Join(rel, "go.mod"), Err: err}
	}
	if mf.Module == nil {
		return nil, &Error{Kind: KindGoMod, Path: path.Join(rel, "go.mod"), Err: errors.New("no module directive")}
	}
	bl := &buildList{
		main: &gomod{path: mf.Module.Mod.Path, rel: rel, goVersion: goDirective(mf)},
		mods: map[string]*gomod{},
		deps: []FileDep{{Path: path.Join(rel, "go.mod"), Digest: digest}},
	}
	if _, vdigest, err := src.ReadFile(path.Join(rel, "vendor/modules.txt")); err == nil && semver.Compare("v"+bl.main.goVersion, "v1.14") >= 0 {
		bl.vendor = true
		bl.deps = append(bl.deps, FileDep{Path: path.Join(rel, "vendor/modules.txt"), Digest: vdigest})
		return bl, nil
	}
	reps := replacements(mf)
	selected := map[string]string{}
	var queue []module.Version
	need := func(m module.Version) {
		if m.Path == bl.main.path {
			return
		}
		if v, ok := selected[m.Path]; !ok || semver.Compare(m.Version, v) > 0 {
			selected[m.Path] = m.Version
			queue = append(queue, m)
		}
	}
	for _, r := range mf.Require {
		need(r.Mod)
	}
	pruned := semver.Compare("v"+bl.main.goVersion, "v1.17") >= 0
	for !pruned && len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		if selected[m.Path] != m.Version {
			continue // superseded by a higher version since it was queued
		}
		for _, r := range requirements(src, bl.main, modCache, reps, m) {
			need(r)
		}
	}
	for p, v := range selected {
		bl.mods[p] = locate(src, bl.main, modCache, reps, module.Version{Path: p, Version: v})
	}
	return bl, nil
}

func goDirective(mf *modfile.File) string {
	if mf.Go == nil {
		return ""
	}
	return mf.Go.Version
}

// replacements indexes the replace directives: "path@version" for a
// version-specific one, "path" for one that replaces every version.
func replacements(mf *modfile.File) map[string]module.Version {
	reps := map[string]module.Version{}
	for _, r := range mf.Replace {
		key := r.Old.Path
		if r.Old.Version != "" {
			key += "@" + r.Old.Version
		}
		reps[key] = r.New
	}
	return reps
}

func replacement(reps map[string]module.Version, m module.Version) (module.Version, bool) {
	if r, ok := reps[m.Path+"@"+m.Version]; ok {
		return r, true
	}
	r, ok := reps[m.Path]
	return r, ok
}

// locate finds where the selected version m of a dependency lives: in the
// module cache, or (replaced by a directory) in the repository. A local
// replacement outside the repository is not part of the snapshot and is
// treated as missing, never read.
func locate(src Source, main *gomod, modCache string, reps map[string]module.Version, m module.Version) *gomod {
	mod := &gomod{path: m.Path, version: m.Version}
	target := m
	if r, ok := replacement(reps, m); ok {
		target = r
		if r.Version == "" {
			mod.version = ""
			if filepath.IsAbs(r.Path) || strings.HasPrefix(r.Path, "/") {
				mod.missing = "replaced by " + r.Path + ", outside the repository"
				return mod
			}
			rel := path.Clean(path.Join(main.rel, filepath.ToSlash(r.Path)))
			if rel == ".." || strings.HasPrefix(rel, "../") {
				mod.missing = "replaced by " + r.Path + ", outside the repository"
				return mod
			}
			mod.rel = rel
			if data, _, err := src.ReadFile(path.Join(rel, "go.mod")); err == nil {
				if mf, err := modfile.ParseLax(path.Join(rel, "go.mod"), data, nil); err == nil {
					mod.goVersion = goDirective(mf)
				}
			} else {
				mod.missing = "replaced by " + r.Path + ", which has no go.mod"
			}
			return mod
		}
	}
	ep, err1 := module.EscapePath(target.Path)
	ev, err2 := module.EscapeVersion(target.Version)
	if err := errors.Join(err1, err2); err != nil || modCache == "" {
		mod.missing = fmt.Sprintf("%s@%s: not in the module cache", target.Path, target.Version)
		return mod
	}
	dir := filepath.Join(modCache, filepath.FromSlash(ep)+"@"+ev)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		mod.missing = fmt.Sprintf("%s@%s: not in the module cache", target.Path, target.Version)
		return mod
	}
	mod.abs = dir
	if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
		if mf, err := modfile.ParseLax("go.mod", data, nil); err == nil {
			mod.goVersion = goDirective(mf)
		}
	}
	return mod
}

// requirements returns what module m requires, read from its go.mod in the
// module cache (the download directory keeps go.mod files of modules whose
// source was never extracted) or, for a local replacement, from the
// repository. A go.mod that cannot be read contributes nothing: the
// modules only it would have selected resolve as missing.
func requirements(src Source, main *gomod, modCache string, reps map[string]module.Version, m module.Version) []module.Version {
	var data []byte
	if r, ok := replacement(reps, m); ok && r.Version == "" {
		rel := path.Clean(path.Join(main.rel, filepath.ToSlash(r.Path)))
		if filepath.IsAbs(r.Path) || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil
		}
		data, _, _ = src.ReadFile(path.Join(rel, "go.mod"))
	} else {
		if ok {
			m = r
		}
		data = cachedGoMod(modCache, m)
	}
	if data == nil {
		return nil
	}
	mf, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return nil
	}
	out := make([]module.Version, 0, len(mf.Require))
	for _, r := range mf.Require {
		out = append(out, r.Mod)
	}
	return out
}

func cachedGoMod(modCache string, m module.Version) []byte {
	ep, err1 := module.EscapePath(m.Path)
	ev, err2 := module.EscapeVersion(m.Version)
	if err1 != nil || err2 != nil || modCache == "" {
		return nil
	}
	for _, p := range []string{
		filepath.Join(modCache, "cache", "download", filepath.FromSlash(ep), "@v", ev+".mod"),
		filepath.Join(modCache, filepath.FromSlash(ep)+"@"+ev, "go.mod"),
	} {
		if data, err := os.ReadFile(p); err == nil {
			return data
		}
	}
	return nil
}

// moduleFor returns the module providing importPath: the one whose path is
// the longest element-wise prefix of it.
func (bl *buildList) moduleFor(importPath string) *gomod {
	var best *gomod
	consider := func(m *gomod) {
		if (importPath == m.path || strings.HasPrefix(importPath, m.path+"/")) && (best == nil || len(m.path) > len(best.path)) {
			best = m
		}
	}
	consider(bl.main)
	for _, m := range bl.mods {
		consider(m)
	}
	return best
}

// isStd reports whether an import path names a standard-library package:
// as for the go command, one whose first element has no dot.
func isStd(importPath string) bool {
	first, _, _ := strings.Cut(importPath, "/")
	return !strings.Contains(first, ".")
}

// nestedModule reports whether a directory between the module root and dir
// (both Source paths, dir below root) holds a go.mod: then dir belongs to
// another module, not to the one rooted at root.
func nestedModule(src Source, root, dir string) bool {
	for d := dir; d != root && d != "." && d != "/"; d = path.Dir(d) {
		if _, _, err := src.ReadFile(path.Join(d, "go.mod")); err == nil {
			return true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return true // unreadable: not provably part of this module
		}
	}
	return false
}
