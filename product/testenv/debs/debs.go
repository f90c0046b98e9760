// Package debs fetches Debian binary packages pinned by the SHA-256 of
// their file and unpacks them: real source (a Python library with its
// tests, say) that tests and the benchmark's corpora read without
// committing it. Debian's package mirrors are one of the registries this
// project's machines reach.
package debs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// A Deb is a Debian binary package pinned by its file's SHA-256.
type Deb struct {
	Package, Version, SHA256 string
	// Suite is the Debian release to fetch it from when it is not the
	// machine's own ("trixie"): apt reads that release's package lists
	// from a directory of their own under the cache, not the system's.
	Suite string
}

var mu sync.Mutex

// Unpack returns the directory, under cache, that d's files are unpacked
// in: downloaded with apt-get download the first time (apt's package
// lists must know the version), checked against the pin, and unpacked with
// dpkg-deb. A file that does not match the pin is never unpacked.
func Unpack(cache string, d Deb) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(cache, d.Package+"_"+d.Version)
	dir := base + ".d"
	if data, err := os.ReadFile(filepath.Join(dir, ".sha256")); err == nil && string(data) == d.SHA256 {
		return dir, nil
	}
	file := base + ".deb"
	if sum, err := fileSHA256(file); err != nil || sum != d.SHA256 {
		if err := download(d, file); err != nil {
			return "", err
		}
	}
	if sum, err := fileSHA256(file); err != nil || sum != d.SHA256 {
		return "", fmt.Errorf("%s has SHA-256 %s (%v), pinned %s", file, sum, err, d.SHA256)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".unpack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.Command("dpkg-deb", "-x", file, tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x %s: %v\n%s", file, err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".sha256"), []byte(d.SHA256), 0o644); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.Rename(tmp, dir)
}

// SHA256 is the hex SHA-256 of the file at name.
func SHA256(name string) (string, error) { return fileSHA256(name) }

// download fetches d into file with apt-get download, in a directory of
// its own (apt names the file itself).
func download(d Deb, file string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(file), ".download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var opts []string
	if d.Suite != "" {
		if opts, err = suiteLists(filepath.Dir(file), d.Suite); err != nil {
			return err
		}
	}
	cmd := exec.Command("apt-get", append(opts, "download", d.Package+"="+d.Version)...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get download %s=%s: %v\n%s(.ci/run runs apt-get update when apt does not know it)", d.Package, d.Version, err, out)
	}
	got, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil || len(got) != 1 {
		return fmt.Errorf("apt-get download %s=%s left %v", d.Package, d.Version, got)
	}
	return os.Rename(got[0], file)
}

// suiteLists returns apt's options that make it read the package lists
// of Debian's suite from a directory of their own under cache, fetching
// them the first time (about 15 MB for trixie's main).
func suiteLists(cache, suite string) ([]string, error) {
	dir := filepath.Join(cache, "apt-"+suite)
	opts := []string{
		"-o", "Dir::Etc::sourcelist=" + filepath.Join(dir, "sources.list"), "-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"), "-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		"-o", "APT::Get::List-Cleanup=0",
	}
	if _, err := os.Stat(filepath.Join(dir, "updated")); err == nil {
		return opts, nil
	}
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "sources.list"), []byte("deb http://deb.debian.org/debian "+suite+" main\n"), 0o644); err != nil {
		return nil, err
	}
	if out, err := exec.Command("apt-get", append(opts, "-q", "update")...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("apt-get update of %s's lists: %v\n%s", suite, err, out)
	}
	return opts, os.WriteFile(filepath.Join(dir, "updated"), nil, 0o644)
}

func fileSHA256(name string) (string, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// PythonPackageDir is where a Debian python3-* package unpacked in dir
// keeps its modules (usr/lib/python3/dist-packages).
func PythonPackageDir(dir string) string {
	return filepath.Join(dir, "usr", "lib", "python3", "dist-packages")
}
