package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"
)

// downloaded is a module version fetched through the module proxy.
type downloaded struct {
	Dir   string // the module cache directory holding its source
	Sum   string // the go.sum h1: hash of its zip
	GoMod string // the module cache file holding its go.mod
}

// moduleDownload fetches module@version with `go mod download -json` run
// in an empty directory (no main module involved); the go command verifies
// the zip against the checksum database as usual.
func moduleDownload(ctx context.Context, module, version string) (downloaded, error) {
	tmp, err := os.MkdirTemp("", "needlebench-download-")
	if err != nil {
		return downloaded{}, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Sum, GoMod, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
		err = jerr
	}
	if err != nil || info.Error != "" || info.Dir == "" {
		return downloaded{}, fmt.Errorf("go mod download %s@%s: %v %s %s", module, version, err, info.Error, strings.TrimSpace(stderr.String()))
	}
	return downloaded{Dir: info.Dir, Sum: info.Sum, GoMod: info.GoMod}, nil
}

// source reads the module's files. A module that predates modules has no
// go.mod in its zip; it gets the one the go command uses for it (the
// proxy's), as a checkout would after `go mod init`.
func (d downloaded) source() (tree, error) {
	t, err := readModule(d.Dir)
	if err != nil {
		return nil, err
	}
	if _, ok := t["go.mod"]; !ok {
		mod, err := os.ReadFile(d.GoMod)
		if err != nil {
			return nil, err
		}
		t["go.mod"] = mod
	}
	return t, nil
}

// readModule reads every regular file of a module directory: the module
// as a checkout holds it, test data and go.sum included, so that its tests
// run in the corpus repositories as they do upstream.
func readModule(dir string) (tree, error) {
	t := tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		t[filepath.ToSlash(rel)] = data
		return err
	})
	return t, err
}

// moduleRepo is a throwaway git repository in which each pinned version of
// a module is a commit: a version bump is real source drift.
type moduleRepo struct {
	Module  string
	Dir     string
	commits map[string]string // version → commit
	trees   map[string]tree
	// srcs holds each version's source in a directory of its own (the
	// truth type-checks it there); the go commands run on it are hermetic.
	srcs    map[string]string
	current string
}

// materialize downloads every version of every subject, checks each
// against its pinned go.sum hash, and builds one git repository per module
// under root. progress, if set, is told what happens.
func materialize(ctx context.Context, c *Corpus, root string, progress func(string)) (map[string]*moduleRepo, error) {
	repos := map[string]*moduleRepo{}
	for _, s := range c.Manifest.Subjects {
		r := &moduleRepo{Module: s.Module, Dir: filepath.Join(root, strings.NewReplacer("/", "_", "@", "_").Replace(s.Module)),
			commits: map[string]string{}, trees: map[string]tree{}, srcs: map[string]string{}}
		if err := os.MkdirAll(r.Dir, 0o755); err != nil {
			return nil, err
		}
		if _, err := git(ctx, r.Dir, "init", "-q"); err != nil {
			return nil, err
		}
		for _, v := range s.Versions {
			if progress != nil {
				progress(fmt.Sprintf("module %s@%s", s.Module, v.Version))
			}
			t, err := versionSource(ctx, c.Dir, s, v)
			if err != nil {
				return nil, err
			}
			src := filepath.Join(root, "src", filepath.Base(r.Dir)+"@"+v.Version)
			if err := syncTree(src, t); err != nil {
				return nil, err
			}
			if s.Language == languageGo {
				if err := downloadDeps(ctx, src); err != nil {
					return nil, fmt.Errorf("%s@%s: %w", s.Module, v.Version, err)
				}
			}
			r.srcs[v.Version] = src
			if err := syncTree(r.Dir, t); err != nil {
				return nil, err
			}
			if _, err := git(ctx, r.Dir, "add", "-A"); err != nil {
				return nil, err
			}
			if _, err := git(ctx, r.Dir, "commit", "-q", "--allow-empty", "-m", s.Module+" "+v.Version); err != nil {
				return nil, err
			}
			head, err := git(ctx, r.Dir, "rev-parse", "HEAD")
			if err != nil {
				return nil, err
			}
			r.commits[v.Version], r.trees[v.Version], r.current = head, t, v.Version
		}
		repos[s.Module] = r
	}
	return repos, nil
}

// versionSource returns the files of a subject's version, checked against
// its pin: a Go module's through the module proxy (its go.sum hash, and
// the extracted source hashed again: a module cache edited after download
// must not pass for the pinned module), a Python package's from its
// Debian package or fixture (pythonSource).
func versionSource(ctx context.Context, corpusDir string, s Subject, v ModuleVersion) (tree, error) {
	if s.Language == languagePython {
		return pythonSource(corpusDir, s, v)
	}
	d, err := moduleDownload(ctx, s.Module, v.Version)
	if err != nil {
		return nil, err
	}
	if d.Sum != v.Sum {
		return nil, fmt.Errorf("%s@%s: the module proxy served %s, the corpus pins %s", s.Module, v.Version, d.Sum, v.Sum)
	}
	if h, err := dirhash.HashDir(d.Dir, s.Module+"@"+v.Version, dirhash.Hash1); err != nil || h != v.Sum {
		return nil, fmt.Errorf("%s@%s: the source in %s hashes to %s (%v), the corpus pins %s", s.Module, v.Version, d.Dir, h, err, v.Sum)
	}
	return d.source()
}

// downloadDeps fetches, through the module proxy, every module the module
// in dir needs to build and test its packages, so that everything run on
// it later (the truth, the coverage runs, the product's test runs) works
// with GOPROXY=off from the module cache. It may add go.sum lines in dir,
// never in the repository.
func downloadDeps(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "mod", "download")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod download: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// checkout makes the work tree hold version.
func (r *moduleRepo) checkout(ctx context.Context, version string) error {
	if r.current == version {
		return nil
	}
	commit, ok := r.commits[version]
	if !ok {
		return fmt.Errorf("%s has no version %s", r.Module, version)
	}
	if _, err := git(ctx, r.Dir, "checkout", "-q", "--force", "--detach", commit); err != nil {
		return err
	}
	if _, err := git(ctx, r.Dir, "clean", "-q", "-f", "-d"); err != nil {
		return err
	}
	r.current = version
	return nil
}

// syncTree makes dir (less .git) hold exactly t.
func syncTree(dir string, t tree) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var stale []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if _, ok := t[filepath.ToSlash(rel)]; !ok {
			stale = append(stale, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range stale {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	for _, rel := range slices.Sorted(mapKeys(t)) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, t[rel], 0o644); err != nil {
			return err
		}
	}
	return nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// git runs git in dir with a fixed identity and dates and no inherited
// GIT_* variables, returning trimmed stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	full := append([]string{"-c", "user.name=needlebench", "-c", "user.email=bench@needle.invalid",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", "-c", "core.hooksPath=/dev/null"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// No user or system configuration (autocrlf, excludes, hooks) may make
	// the work tree differ from the source the truth is computed from.
	cmd.Env = append(cmd.Env, "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func tempDir() (string, error) { return os.MkdirTemp("", "needlebench-") }

func removeAll(dir string) { _ = os.RemoveAll(dir) }
