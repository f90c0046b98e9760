package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/needle-dev/needle/product/testenv/debs"
)

// The source of a Python subject's version. Debian's binary packages ship
// a Python library (networkx ships its test suite with it) under
// usr/lib/python3/dist-packages; the corpus takes the package's own
// directory, pinned by the .deb's SHA-256. A fixture is a txtar archive
// the project wrote, pinned by its own SHA-256. Compiled files are left
// out.

// debCache is where Debian packages are fetched and unpacked: the user's
// cache directory (NEEDLEBENCH_DEBS overrides it).
func debCache() (string, error) {
	if d := os.Getenv("NEEDLEBENCH_DEBS"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for Debian packages (set NEEDLEBENCH_DEBS): %w", err)
	}
	return filepath.Join(d, "needlebench", "debs"), nil
}

// pythonSource returns the files of a Python subject's version, checked
// against its pin.
func pythonSource(corpusDir string, s Subject, v ModuleVersion) (tree, error) {
	want := strings.TrimPrefix(v.Sum, "sha256:")
	if v.Fixture != "" {
		file := filepath.Join(corpusDir, filepath.FromSlash(v.Fixture))
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != want {
			return nil, fmt.Errorf("%s@%s: %s has SHA-256 %x, the corpus pins %s", s.Module, v.Version, v.Fixture, sum, want)
		}
		t := tree{}
		for _, f := range txtar.Parse(data).Files {
			if name := path.Clean(f.Name); !filepath.IsLocal(filepath.FromSlash(name)) || name != f.Name {
				return nil, fmt.Errorf("%s: file name %q", v.Fixture, f.Name)
			}
			t[f.Name] = f.Data
		}
		return t, nil
	}
	cache, err := debCache()
	if err != nil {
		return nil, err
	}
	dir, err := debs.Unpack(cache, debs.Deb{Package: v.Deb.Package, Version: v.Version, SHA256: want, Suite: v.Deb.Suite})
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", s.Module, v.Version, err)
	}
	pkg := filepath.Join(debs.PythonPackageDir(dir), s.Module)
	t := tree{}
	err = filepath.WalkDir(pkg, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "__pycache__":
			return filepath.SkipDir
		case d.IsDir() || !d.Type().IsRegular() || strings.HasSuffix(p, ".pyc"):
			return nil
		}
		rel, err := filepath.Rel(filepath.Dir(pkg), p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		t[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %s has no package %s: %w", s.Module, v.Version, v.Deb.Package, s.Module, err)
	}
	return t, nil
}
