package product

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/lifecycle"
	"golang.org/x/sys/unix"
)

// ptyCols is the width of the tests' pseudo-terminal: narrower than
// progress.DefaultColumns, so a live line not fitted to this terminal
// (its width not asked, or not relayed through the resident runtime)
// would wrap and leave a row behind.
const ptyCols = 72

// terminalCommitted is what a terminal keeps of a run of each crash
// harness scenario: every committed transition, in the lifecycle's order,
// as "phase round/attempt → where the lifecycle is then, tokens".
var terminalCommitted = map[string][]string{
	"verified": {"explore 1/1 → implement/running 700", "implement 1/1 → test/running 700", "test 1/1 → review/running 700",
		"review 1/1 → verify/running 700", "verify 1/1 → apply/awaiting_approval 700"},
	// The first review crashes (a retry: a new attempt), the first
	// verification asks for a repair (round 2). Attempts count a phase's
	// runs over the lifecycle.
	"repair": {"explore 1/1 → implement/running 700", "implement 1/1 → test/running 700", "test 1/1 → review/running 700",
		"review 1/1 → review/running 700", "review 1/2 → verify/running 700", "verify 1/1 → implement/running 700",
		"implement 2/2 → test/running 700", "test 2/2 → review/running 700", "review 2/3 → verify/running 700",
		"verify 2/2 → apply/awaiting_approval 700"},
}

// TestChangeRun_ProgressOnATerminal runs a child needle change run with its
// stderr on a real pseudo-terminal and reads what it showed from the raw
// bytes: a live line with a bar was drawn for every phase run, the bar
// never moved back nor passed its end (a retry and a repair round
// included, the latter saying "round 2"), the committed transitions stay
// as lines of their own in the lifecycle's order, and the screen ends with
// no live line left and the cursor at the start of an empty line. The same
// run with stderr on a pipe (a log) prints plain lines, a line as each
// phase starts and one as it commits, with no carriage return or escape
// (were a phase to run 10 s, a line telling it still runs: product/progress
// tests that with a fake clock); on /dev/null, a character device but no
// terminal, it runs as well.
func TestChangeRun_ProgressOnATerminal(t *testing.T) {
	probe := MustFixtureRepo(t, "grepx", false)
	for _, sc := range crashScenarios(t, probe)[:2] {
		t.Run(sc.name, func(t *testing.T) {
			sc.prepareOnly(t, t.TempDir())
			cmd := needleCommand(t, "change", "run", "--repository", filepath.Join(sc.base, "repo"), "--data-dir", filepath.Join(sc.base, "data"), sc.id)
			cmd.Env = append(os.Environ(), "NEEDLE_FAKE_SCRIPT="+filepath.Join(sc.base, "script.json"))
			wait, stdout := startWithTerminalStderr(t, cmd)
			data, err := wait()
			if err != nil {
				t.Fatalf("change run: %v\n%s%q", err, stdout, data)
			}
			live := checkTerminalProgress(t, data, terminalCommitted[sc.name])
			if round2 := slices.ContainsFunc(live, func(l string) bool { return strings.Contains(l, "round 2") }); round2 != (sc.name == "repair") {
				t.Errorf("a live line says round 2: %v, want %v (%q)", round2, sc.name == "repair", live)
			}
			if !strings.Contains(stdout.String(), "awaiting_approval") || strings.Contains(stdout.String(), "running…") {
				t.Errorf("stdout (not a terminal) holds progress or lacks the final state:\n%s", stdout)
			}
		})
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
			checkPlainProgress(t, stderr.String())
		}
	}
}

// TestChangeRun_ProgressOnATerminalThroughTheRuntime: with a resident
// runtime on the data directory, needle change run runs in the runtime,
// which relays its stderr; the client's terminal shows the same progress,
// fitted to the client's terminal's width.
func TestChangeRun_ProgressOnATerminalThroughTheRuntime(t *testing.T) {
	probe := MustFixtureRepo(t, "grepx", false)
	sc := crashScenarios(t, probe)[1] // repair: a retry and round 2
	sc.prepareOnly(t, shortDir(t))
	rt := runtimeWithFakes(t, sc, "")

	cmd := needleCommand(t, "change", "run", "--repository", filepath.Join(sc.base, "repo"), "--data-dir", filepath.Join(sc.base, "data"), sc.id)
	wait, stdout := startWithTerminalStderr(t, cmd)
	data, err := wait()
	if err != nil {
		t.Fatalf("change run: %v\n%s%q", err, stdout, data)
	}
	if n := rt.commands.Load(); n != 1 {
		t.Fatalf("the runtime ran %d commands, want the change run", n)
	}
	live := checkTerminalProgress(t, data, terminalCommitted[sc.name])
	if !slices.ContainsFunc(live, func(l string) bool { return strings.Contains(l, "round 2") }) {
		t.Errorf("no live line says round 2: %q", live)
	}
}

// TestChangeRun_ProgressOnATerminalInterrupted: a run interrupted (SIGINT,
// as Ctrl-C sends it; the context of the command ends) while its explore
// phase runs, here and through the resident runtime, leaves its terminal
// clean: the live line it drew is gone, the one line left says the run
// stopped, and the cursor is at the start of an empty line.
func TestChangeRun_ProgressOnATerminalInterrupted(t *testing.T) {
	probe := MustFixtureRepo(t, "grepx", false)
	for _, resident := range []bool{false, true} {
		t.Run(map[bool]string{false: "here", true: "runtime"}[resident], func(t *testing.T) {
			sc := crashScenarios(t, probe)[0]
			sc.prepareOnly(t, shortDir(t))
			gate := filepath.Join(sc.base, "gate")
			if err := syscall.Mkfifo(gate, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := needleCommand(t, "change", "run", "--repository", filepath.Join(sc.base, "repo"), "--data-dir", filepath.Join(sc.base, "data"), sc.id)
			if resident {
				runtimeWithFakes(t, sc, gate)
			} else {
				sc.setGate(t, gate)
				cmd.Env = append(os.Environ(), "NEEDLE_FAKE_SCRIPT="+filepath.Join(sc.base, "script.json"))
			}
			wait, stdout := startWithTerminalStderr(t, cmd)
			// Opening the FIFO for writing returns once explore's adapter
			// opened it for reading: the live line is drawn, the phase runs.
			w, err := os.OpenFile(gate, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			data, err := wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("interrupted change run: %v, want exit 1\n%s%q", err, stdout, data)
			}
			live := liveLines(data)
			if !slices.ContainsFunc(live, func(l string) bool { return strings.HasPrefix(l, "explore: phase 1 of 5: [") }) {
				t.Errorf("no live line with a bar for explore was drawn: %q", live)
			}
			lines := checkCleanEnd(t, data)
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "needle change run: ") {
				t.Errorf("the terminal shows %q, want the one line saying why the run stopped\nraw: %q", lines, data)
			}
		})
	}
}

// runtimeWithFakes starts a resident runtime on sc's data directory, in
// this process, whose change commands run sc's working fakes (waiting at
// gate, when not "").
func runtimeWithFakes(t *testing.T, sc *crashScenario, gate string) *Runtime {
	t.Helper()
	var script fakeScript
	if err := json.Unmarshal(MustReadFile(t, filepath.Join(sc.base, "script.json")), &script); err != nil {
		t.Fatal(err)
	}
	script.Gate = gate
	changeConfigHook = func(c *Config) {
		a := script.adapters(c.Repository)
		c.Lifecycle = &a
	}
	t.Cleanup(func() { changeConfigHook = nil })
	return mustRuntime(t, filepath.Join(sc.base, "data"))
}

// liveRE is a live line of needle change run: the phase, its place among
// the five, its round and attempt (after the first), then (once drawn with
// its count) the bar and the phase runs it stands for, and the time the
// phase has run.
var liveRE = regexp.MustCompile(`^(\w+): phase (\d) of 5(?:, round (\d))?(?:, attempt (\d))?(?:: (?:\[(#*)(\.*)\] )?(\d+)/(\d+) runs)?, \d+s$`)

// checkTerminalProgress checks what a terminal received of a change run
// that committed want (terminalCommitted's form) and returns the live
// lines it drew. (a) Every phase run drew a live line with a bar, and in
// the order drawn its phase runs never go back, never pass their end and
// fill the bar as they say. (b) Read as a terminal shows it, the screen
// holds the committed transitions in order, each a line of its own, and
// nothing else. (c) The cursor ends at the start of an empty line.
func checkTerminalProgress(t *testing.T, data []byte, want []string) []string {
	t.Helper()
	live := liveLines(data)
	lastRan, barred, runs := -1, map[string]bool{}, []string{}
	for _, l := range live {
		m := liveRE.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("a live line of another form: %q", l)
			continue
		}
		run := fmt.Sprintf("%s %s/%s", m[1], cmp.Or(m[3], "1"), cmp.Or(m[4], "1"))
		if len(runs) == 0 || runs[len(runs)-1] != run {
			runs = append(runs, run)
		}
		if m[7] == "" {
			continue // drawn as the phase started, before its count
		}
		ran, _ := strconv.Atoi(m[7])
		most, _ := strconv.Atoi(m[8])
		phase, _ := strconv.Atoi(m[2])
		round, _ := strconv.Atoi(cmp.Or(m[3], "1"))
		wantRan := phase - 1 // round 1: the phases before; round 2: round 1's five and the repair's before (no explore)
		if round == 2 {
			wantRan = 5 + phase - 2
		}
		cells, filled := len(m[5])+len(m[6]), len(m[5])
		switch {
		case most != 9 || ran != wantRan:
			t.Errorf("%q: %d/%d phase runs, want %d/9", l, ran, most, wantRan)
		case ran < lastRan:
			t.Errorf("%q: the bar moved back from %d phase runs", l, lastRan)
		case cells > 0 && filled != cells*ran/most:
			t.Errorf("%q: %d of %d cells filled for %d/%d", l, filled, cells, ran, most)
		}
		lastRan = ran
		if cells > 0 {
			barred[run] = true
		}
	}
	var committed []string
	for _, w := range want {
		f := strings.Fields(w)
		committed = append(committed, f[0]+" "+f[1])
	}
	for _, run := range committed {
		if !barred[run] {
			t.Errorf("phase run %s drew no live line with a bar; live lines:\n%s", run, strings.Join(live, "\n"))
		}
	}
	if !slices.Equal(runs, committed) {
		t.Errorf("live lines for the phase runs %q, want %q", runs, committed)
	}

	lines := checkCleanEnd(t, data)
	line := regexp.MustCompile(`^(\w+) +round (\d) attempt (\d)  .*\s\d+\.\ds\s+(\d+) tokens  → (\S+)$`)
	var seen []string
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("the terminal shows a line that is no committed transition: %q", l)
			continue
		}
		seen = append(seen, fmt.Sprintf("%s %s/%s → %s %s", m[1], m[2], m[3], m[5], m[4]))
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the terminal shows:\n%s\nparsed %q\nwant %q", strings.Join(lines, "\n"), seen, want)
	}
	return live
}

// checkCleanEnd reads data as a terminal shows it and checks that the
// cursor ends at the start of an empty line; it returns the lines above.
func checkCleanEnd(t *testing.T, data []byte) []string {
	t.Helper()
	s := renderTerminal(t, data)
	lines := s.lines()
	if s.col != 0 || lines[len(lines)-1] != "" {
		t.Errorf("the terminal ends with the cursor at column %d of %q, want the start of an empty line\nraw: %q", s.col, lines[len(lines)-1], data)
	}
	return lines[:len(lines)-1]
}

// liveLines returns every live line drawn in data: what follows each
// "\r\033[K" (the progress package's redraw) up to the next carriage
// return, unless a newline ends it (a line written above the live line).
func liveLines(data []byte) []string {
	var out []string
	for _, seg := range strings.Split(string(data), "\r\033[K")[1:] {
		if i := strings.IndexAny(seg, "\r\n"); i >= 0 {
			if strings.HasPrefix(seg[i:], "\r\n") || seg[i] == '\n' {
				continue
			}
			seg = seg[:i]
		}
		if seg != "" {
			out = append(out, seg)
		}
	}
	return out
}

// termScreen is what a terminal ptyCols wide shows of the bytes it
// received: a printable rune takes the cell at the cursor and moves it on
// (a rune past the last column goes to the start of a new row first), \r
// moves the cursor to the start of its row, \n a row down (the terminal's
// ONLCR sends \r before it), ESC [ K erases from the cursor to the end of
// its row. Any other control or escape fails the test: the model would not
// know what the terminal shows.
type termScreen struct {
	rows     [][]rune
	wrapped  []bool // the row continues the one above (a line wider than the terminal)
	row, col int
}

func renderTerminal(t *testing.T, data []byte) *termScreen {
	t.Helper()
	s := &termScreen{rows: [][]rune{nil}, wrapped: []bool{false}}
	for text := string(data); text != ""; {
		if rest, ok := strings.CutPrefix(text, "\033[K"); ok {
			s.rows[s.row] = s.rows[s.row][:min(s.col, len(s.rows[s.row]))]
			text = rest
			continue
		}
		r, n := utf8.DecodeRuneInString(text)
		text = text[n:]
		switch {
		case r == '\r':
			s.col = 0
		case r == '\n':
			s.down(false)
		case r < ' ' || r == 0x7f || r == utf8.RuneError:
			t.Fatalf("the terminal received %q, which its model does not know; raw: %q", r, data)
		default:
			if s.col >= ptyCols {
				s.down(true)
				s.col = 0
			}
			row := s.rows[s.row]
			for len(row) < s.col {
				row = append(row, ' ')
			}
			if s.col < len(row) {
				row[s.col] = r
			} else {
				row = append(row, r)
			}
			s.rows[s.row] = row
			s.col++
		}
	}
	return s
}

// down moves the cursor a row down, to a new row (the model never moves
// up): one that continues the row above when wrap.
func (s *termScreen) down(wrap bool) {
	s.row++
	s.rows = append(s.rows, nil)
	s.wrapped = append(s.wrapped, wrap)
}

// lines returns the screen's lines: its rows, each continued row joined to
// the one above.
func (s *termScreen) lines() []string {
	var out []string
	for i, r := range s.rows {
		if s.wrapped[i] {
			out[len(out)-1] += string(r)
			continue
		}
		out = append(out, string(r))
	}
	return out
}

// checkPlainProgress holds what a log (no terminal) got of a run of the
// crash harness's verified scenario: plain lines, no carriage return nor
// escape, each phase starting and committed, in order.
func checkPlainProgress(t *testing.T, got string) {
	t.Helper()
	if strings.ContainsAny(got, "\r\033") {
		t.Errorf("progress off a terminal holds a carriage return or an escape: %q", got)
	}
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
		t.Errorf("progress off a terminal:\n%s\nparsed %q\nwant %q", got, seen, want)
	}
}

// openPTY opens a pseudo-terminal pair ptyCols wide: the controlling side
// and the terminal a child writes to.
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
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: ptyCols}); err != nil {
		t.Fatal(err)
	}
	if n := terminalColumns(pts); n != ptyCols {
		t.Fatalf("the pseudo-terminal is %d columns wide to terminalColumns, want %d", n, ptyCols)
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

// startWithTerminalStderr starts cmd with its stderr on a pseudo-terminal
// and its stdout on a pipe; wait waits for cmd to end and returns the
// bytes its terminal received and how it ended. The terminal is read all
// the while, so a child writing to it never blocks.
func startWithTerminalStderr(t *testing.T, cmd *exec.Cmd) (wait func() ([]byte, error), stdout *strings.Builder) {
	t.Helper()
	ptm, pts := openPTY(t)
	stdout = &strings.Builder{}
	cmd.Stdout, cmd.Stderr = stdout, pts
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close()
	read := make(chan []byte, 1)
	go func() {
		// The terminal reads until the child, its last holder, closes it (EIO).
		data, _ := io.ReadAll(ptm)
		read <- data
	}()
	return func() ([]byte, error) {
		data := <-read
		ptm.Close()
		return data, cmd.Wait()
	}, stdout
}

// TestRunPlace: a change run's bar places the phase runs of a lifecycle
// that uses its repair one after the other, 0 to 8 of at most 9: round 2's
// runs follow round 1's (never back), the last never reaches the end (it
// would run again otherwise), and a lifecycle verified in round 1 leaves
// the repair round's four unfilled.
func TestRunPlace(t *testing.T) {
	var got []string
	for round, phases := range [][]lifecycle.Phase{workerPhases, workerPhases[1:]} {
		for _, p := range phases {
			ran, most := runPlace(p, round+1)
			got = append(got, fmt.Sprintf("%s/%d %d/%d", p, round+1, ran, most))
		}
	}
	want := []string{"explore/1 0/9", "implement/1 1/9", "test/1 2/9", "review/1 3/9", "verify/1 4/9",
		"implement/2 5/9", "test/2 6/9", "review/2 7/9", "verify/2 8/9"}
	if !slices.Equal(got, want) {
		t.Errorf("places %q, want %q", got, want)
	}
}
