package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A Deb is a Debian binary package pinned by its file's SHA-256: real
// source (a Python library with its tests, say) that the tests read
// without committing it. Debian's package mirrors are one of the
// registries this project's machines reach.
type Deb struct {
	Package, Version, SHA256 string
}

// PythonClick is python3-click of Debian 12 (bookworm): the click library
// (argparse's rival for command-line options), 8.1.3.
var PythonClick = Deb{"python3-click", "8.1.3-2", "c3af7e231d711f7fdb9a2fac4954061fe423ea517279bc30bf95a0920738279b"}

var debMu sync.Mutex

// Unpacked returns the directory d's files are unpacked in, under the
// module root's ignored .cache/debs: downloaded with apt-get download the
// first time (apt's package lists must know the version: .ci/run updates
// them when they do not), checked against the pin, and unpacked with
// dpkg-deb. Without them the test fails, saying what is missing.
func Unpacked(tb testing.TB, d Deb) string {
	tb.Helper()
	debMu.Lock()
	defer debMu.Unlock()
	cache := Cache(tb, "debs")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		tb.Fatal(err)
	}
	base := filepath.Join(cache, d.Package+"_"+d.Version)
	dir := base + ".d"
	if data, err := os.ReadFile(filepath.Join(dir, ".sha256")); err == nil && string(data) == d.SHA256 {
		return dir
	}
	file := base + ".deb"
	if sum, err := fileSHA256(file); err != nil || sum != d.SHA256 {
		if err := download(d, file); err != nil {
			tb.Fatalf("testenv: %v", err)
		}
	}
	if sum, err := fileSHA256(file); err != nil || sum != d.SHA256 {
		tb.Fatalf("testenv: %s has SHA-256 %s (%v), pinned %s", file, sum, err, d.SHA256)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".unpack-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.Command("dpkg-deb", "-x", file, tmp).CombinedOutput(); err != nil {
		tb.Fatalf("testenv: dpkg-deb -x %s: %v\n%s", file, err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".sha256"), []byte(d.SHA256), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// download fetches d into file with apt-get download, in a directory of
// its own (apt names the file itself).
func download(d Deb, file string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(file), ".download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("apt-get", "download", d.Package+"="+d.Version)
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

// Python3 returns python3 on PATH, made absolute; the test fails without
// it (.ci/run installs Debian's).
func Python3(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("python3")
	if err == nil {
		p, err = filepath.Abs(p)
	}
	if err != nil {
		tb.Fatalf("testenv: no python3 on PATH (%v): .ci/run installs Debian's python3", err)
	}
	return strings.TrimSpace(p)
}
