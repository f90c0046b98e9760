package testenv

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/testenv/debs"
)

// A Deb is a Debian binary package pinned by its file's SHA-256 (package
// debs fetches and unpacks it).
type Deb = debs.Deb

// PythonClick is python3-click of Debian 12 (bookworm): the click library
// (argparse's rival for command-line options), 8.1.3.
var PythonClick = Deb{Package: "python3-click", Version: "8.1.3-2", SHA256: "c3af7e231d711f7fdb9a2fac4954061fe423ea517279bc30bf95a0920738279b"}

// PythonPygments is python3-pygments of Debian 12: a syntax highlighter
// whose command line (pygments/cmdline.py) is argparse's, 2.14.0.
var PythonPygments = Deb{Package: "python3-pygments", Version: "2.14.0+dfsg-1", SHA256: "405734a57b8d2722d10413c511d9b63ee78bbbdab8b2b689d7295260bc9618a2"}

// PythonFlask is python3-flask of Debian 12: a web framework whose
// command line (flask/cli.py) is click's, 2.2.2.
var PythonFlask = Deb{Package: "python3-flask", Version: "2.2.2-3", SHA256: "2c8c9a408c2373d8b42f0d3434f17fc1a710bc81e52273b96597b25c57b399d7"}

// PythonTyper is python3-typer of Debian 13 (trixie): command lines from
// type hints, on click, 0.15.2 (Annotated parameters came with 0.9; Debian
// 12 has 0.7). It needs typing_extensions.
var PythonTyper = Deb{Package: "python3-typer", Version: "0.15.2-1", SHA256: "fe1dae27effa023a1656ecd0bfaafb67777bb692ca8970d56d609ad950fd7ee4", Suite: "trixie"}

// PythonMarkdown is python3-markdown of Debian 12: a Markdown converter
// whose command line (markdown/__main__.py) is optparse's, 3.4.1.
var PythonMarkdown = Deb{Package: "python3-markdown", Version: "3.4.1-2+deb12u1", SHA256: "7f98e975cf0cc5d6b63d1ea76f1e1f2c88df91d873eac58eef8bc89a25a25d93"}

// PythonTypingExtensions is python3-typing-extensions of Debian 12, 4.4.0.
var PythonTypingExtensions = Deb{Package: "python3-typing-extensions", Version: "4.4.0-1", SHA256: "e2f88fe73b6dac2907b29d709647eb66302776f7693f45b1e95e116ddedbddd3"}

// Unpacked returns the directory d's files are unpacked in, under the
// module root's ignored .cache/debs (debs.Unpack; apt's package lists must
// know the version: .ci/run updates them when they do not). Without them
// the test fails, saying what is missing.
func Unpacked(tb testing.TB, d Deb) string {
	tb.Helper()
	dir, err := debs.Unpack(Cache(tb, "debs"), d)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return dir
}

// PythonPackageDir is where a Debian python3-* package unpacked in dir
// keeps its modules (usr/lib/python3/dist-packages).
func PythonPackageDir(dir string) string { return debs.PythonPackageDir(dir) }

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
