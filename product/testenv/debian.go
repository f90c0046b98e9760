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
	// Suite is the Debian release to fetch it from when it is not the
	// machine's own ("trixie"): apt reads that release's package lists
	// from a directory of its own under .cache/debs, not the system's.
	Suite string
}

// PythonClick is python3-click of Debian 12 (bookworm): the click library
// (argparse's rival for command-line options), 8.1.3.
var PythonClick = Deb{"python3-click", "8.1.3-2", "c3af7e231d711f7fdb9a2fac4954061fe423ea517279bc30bf95a0920738279b", ""}

// PythonPygments is python3-pygments of Debian 12: a syntax highlighter
// whose command line (pygments/cmdline.py) is argparse's, 2.14.0.
var PythonPygments = Deb{"python3-pygments", "2.14.0+dfsg-1", "405734a57b8d2722d10413c511d9b63ee78bbbdab8b2b689d7295260bc9618a2", ""}

// PythonFlask is python3-flask of Debian 12: a web framework whose
// command line (flask/cli.py) is click's, 2.2.2.
var PythonFlask = Deb{"python3-flask", "2.2.2-3", "2c8c9a408c2373d8b42f0d3434f17fc1a710bc81e52273b96597b25c57b399d7", ""}

// PythonTyper is python3-typer of Debian 13 (trixie): command lines from
// type hints, on click, 0.15.2 (Annotated parameters came with 0.9; Debian
// 12 has 0.7). It needs typing_extensions.
var PythonTyper = Deb{"python3-typer", "0.15.2-1", "fe1dae27effa023a1656ecd0bfaafb67777bb692ca8970d56d609ad950fd7ee4", "trixie"}

// PythonTypingExtensions is python3-typing-extensions of Debian 12, 4.4.0.
var PythonTypingExtensions = Deb{"python3-typing-extensions", "4.4.0-1", "e2f88fe73b6dac2907b29d709647eb66302776f7693f45b1e95e116ddedbddd3", ""}

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
