package product

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestChangeRun_ProgressOnATerminal runs a child needle change run with its
// stderr on a real pseudo-terminal: every phase prints a line when its
// worker starts and one when its transition is committed, in the
// lifecycle's order, with where the lifecycle is then. The same run with
// stderr on a pipe (a log) prints the same lines (and, were a phase to
// run 10 s, a plain line telling it still runs; product/progress tests
// that with a fake clock); on /dev/null, a character device but no
// terminal, it runs as well.
func TestChangeRun_ProgressOnATerminal(t *testing.T) {
	probe := MustFixtureRepo(t, "grepx", false)
	sc := crashScenarios(t, probe)[0]
	sc.prepareOnly(t, t.TempDir())

	cmd := needleCommand(t, "change", "run", "--repository", filepath.Join(sc.base, "repo"), "--data-dir", filepath.Join(sc.base, "data"), sc.id)
	cmd.Env = append(os.Environ(), "NEEDLE_FAKE_SCRIPT="+filepath.Join(sc.base, "script.json"))
	stdout, data := runWithTerminalStderr(t, cmd)
	checkProgressLines(t, data)
	if !strings.Contains(stdout.String(), "awaiting_approval") || strings.Contains(stdout.String(), "running…") {
		t.Errorf("stdout (not a terminal) holds progress or lacks the final state:\n%s", stdout.String())
	}

	// Not a terminal: a pipe, and /dev/null.
	for _, null := range []bool{false, true} {
		sc := crashScenarios(t, probe)[0]
		sc.prepareOnly(t, t.TempDir())
		base := sc.base
		cmd := needleCommand(t, "change", "run", "--repository", filepath.Join(base, "repo"), "--data-dir", filepath.Join(base, "data"), sc.id)
		cmd.Env = append(os.Environ(), "NEEDLE_FAKE_SCRIPT="+filepath.Join(base, "script.json"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if null {
			devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer devnull.Close()
			cmd.Stderr = devnull
			if !isCharDevice(t, devnull) || isTerminal(devnull) {
				t.Fatal("/dev/null: want a character device that is no terminal")
			}
		}
		if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "awaiting_approval") {
			t.Fatalf("change run (stderr not a terminal): %v\n%s%s", err, out, stderr.String())
		}
		if !null {
			checkProgressLines(t, []byte(stderr.String()))
		}
	}
}

// openPTY opens a pseudo-terminal pair: the controlling side and the
// terminal a child writes to.
func openPTY(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !isTerminal(pts) {
		t.Fatal("the pseudo-terminal is not a terminal to isTerminal")
	}
	return ptm, pts
}

func isCharDevice(t *testing.T, f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()&os.ModeCharDevice != 0
}

// checkProgressLines holds what a terminal showed of a run of the crash
// harness's verified scenario: each phase starting and committed, in order.
func checkProgressLines(t *testing.T, data []byte) {
	t.Helper()
	got := strings.ReplaceAll(string(data), "\r\n", "\n")
	line := regexp.MustCompile(`(?m)^(\w+) +round 1 attempt 1  (running…|.*\s(\d+\.\d)s\s+(\d+) tokens  → (\S+))$`)
	var seen []string
	for _, m := range line.FindAllStringSubmatch(got, -1) {
		if m[2] == "running…" {
			seen = append(seen, m[1]+" started")
			continue
		}
		seen = append(seen, m[1]+" → "+m[5]+" "+m[4])
	}
	want := []string{"explore started", "explore → implement/running 700", "implement started", "implement → test/running 700",
		"test started", "test → review/running 700", "review started", "review → verify/running 700",
		"verify started", "verify → apply/awaiting_approval 700"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress on the terminal:\n%s\nparsed %q\nwant %q", got, seen, want)
	}
}

// TestChangeRun_ProgressOnATerminalThroughTheRuntime: with a resident
// runtime on the data directory, needle change run runs in the runtime,
// which relays its stderr; the client's terminal shows the same progress.
func TestChangeRun_ProgressOnATerminalThroughTheRuntime(t *testing.T) {
	probe := MustFixtureRepo(t, "grepx", false)
	sc := crashScenarios(t, probe)[0]
	sc.prepareOnly(t, shortDir(t))
	var script fakeScript
	if err := json.Unmarshal(MustReadFile(t, filepath.Join(sc.base, "script.json")), &script); err != nil {
		t.Fatal(err)
	}
	// The runtime runs in this process: it gets the working fakes here.
	changeConfigHook = func(c *Config) {
		a := script.adapters(c.Repository)
		c.Lifecycle = &a
	}
	t.Cleanup(func() { changeConfigHook = nil })
	rt := mustRuntime(t, filepath.Join(sc.base, "data"))

	cmd := needleCommand(t, "change", "run", "--repository", filepath.Join(sc.base, "repo"), "--data-dir", filepath.Join(sc.base, "data"), sc.id)
	_, data := runWithTerminalStderr(t, cmd)
	if n := rt.commands.Load(); n != 1 {
		t.Fatalf("the runtime ran %d commands, want the change run", n)
	}
	checkProgressLines(t, data)
}

// runWithTerminalStderr runs cmd with its stderr on a pseudo-terminal and
// its stdout on a pipe; it returns both once cmd succeeded.
func runWithTerminalStderr(t *testing.T, cmd *exec.Cmd) (*strings.Builder, []byte) {
	t.Helper()
	ptm, pts := openPTY(t)
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, pts
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close()
	// The terminal reads until the child, its last holder, closes it (EIO).
	data, _ := io.ReadAll(ptm)
	ptm.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(cmd.Args[1:], " "), err, stdout.String(), data)
	}
	return &stdout, data
}
