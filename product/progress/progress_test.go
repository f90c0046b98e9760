package progress

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves; ticks are sent by the test.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	ticks chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ticks: make(chan time.Time)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// advance moves the clock by d and delivers a tick. The tick channel is
// unbuffered and a second tick is sent after it: when advance returns,
// the reporter has handled the first completely.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
	c.ticks <- c.now()
	c.ticks <- c.now()
}

func (c *fakeClock) clock() Clock { return Clock{Now: c.now, Ticks: c.ticks} }

// syncBuffer is a buffer safe for the reporter's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// take returns what was written since the last take.
func (b *syncBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.String()
	b.b.Reset()
	return s
}

// TestReporter_PlainLines: off a terminal, a phase writes a line at once;
// statuses and counts write nothing until Interval passed since the last
// line, then the next tick writes the state; the tick after writes
// nothing until Interval passes again.
func TestReporter_PlainLines(t *testing.T) {
	c, out := newFakeClock(), &syncBuffer{}
	r := NewWith(out, "needlebench: ", Options{}, c.clock())
	defer r.Close()
	c.advance(3 * time.Second)
	if got := out.take(); got != "" {
		t.Fatalf("a line before any phase: %q", got)
	}
	r.Phase("play")
	if got, want := out.take(), "needlebench: play, 3s\n"; got != want {
		t.Fatalf("phase line %q, want %q", got, want)
	}
	r.Count(120, 582, "needs")
	c.advance(9 * time.Second)
	if got := out.take(); got != "" {
		t.Fatalf("a line 9 s after the last: %q", got)
	}
	c.advance(time.Second)
	if got, want := out.take(), "needlebench: play: 120/582 needs, 13s\n"; got != want {
		t.Fatalf("line due after 10 s: %q, want %q", got, want)
	}
	c.advance(time.Second)
	if got := out.take(); got != "" {
		t.Fatalf("a line 1 s after the last: %q", got)
	}
	r.Phase("validation")
	r.Status("module example.com/m@v1.0.0")
	c.advance(10 * time.Second)
	want := "needlebench: validation, 14s\nneedlebench: validation: module example.com/m@v1.0.0, 24s\n"
	if got := out.take(); got != want {
		t.Fatalf("phase then status:\n%q\nwant\n%q", got, want)
	}
	r.Step("coverage", "example.com/m@v1.0.0 ./cmd")
	if got, want := out.take(), "needlebench: coverage: example.com/m@v1.0.0 ./cmd, 24s\n"; got != want {
		t.Fatalf("step line %q, want %q", got, want)
	}
	r.Close()
	if got := out.take(); got != "" {
		t.Fatalf("Close off a terminal wrote %q", got)
	}
}

// TestReporter_LineAndEnter: a caller's own line is written at once and
// counts as the last line; a phase entered quietly is told by the next
// line due; on a terminal a line goes above the live line.
func TestReporter_LineAndEnter(t *testing.T) {
	c, out := newFakeClock(), &syncBuffer{}
	r := NewWith(out, "needle change run: ", Options{}, c.clock())
	defer r.Close()
	r.Line("explore   round 1 attempt 1  running…\n")
	r.Enter("explore round 1 attempt 1 running")
	c.advance(9 * time.Second)
	if got, want := out.take(), "explore   round 1 attempt 1  running…\n"; got != want {
		t.Fatalf("Line then Enter: %q, want %q", got, want)
	}
	c.advance(time.Second)
	c.advance(8 * time.Second)
	r.Line("explore done")
	c.advance(2 * time.Second)
	c.advance(8 * time.Second)
	want := "needle change run: explore round 1 attempt 1 running, 10s\nexplore done\nneedle change run: explore round 1 attempt 1 running, 28s\n"
	if got := out.take(); got != want {
		t.Fatalf("heartbeats:\n%q\nwant\n%q", got, want)
	}

	tc, tout := newFakeClock(), &syncBuffer{}
	tr := NewWith(tout, "p: ", Options{Terminal: true}, tc.clock())
	tr.Enter("play")
	tr.Line("a line")
	tr.Close()
	if got, want := tout.take(), "\r\033[Kp: play, 0s\r\033[Ka line\n\r\033[Kp: play, 0s\r\033[K"; got != want {
		t.Fatalf("a line on a terminal: %q, want %q", got, want)
	}
}

// TestReporter_TerminalBar: on a terminal every report redraws one line in
// place, a count as a bar, a tick redraws it with the clock moved, and
// Close clears it; no newline is ever written.
func TestReporter_TerminalBar(t *testing.T) {
	c, out := newFakeClock(), &syncBuffer{}
	r := NewWith(out, "needlebench: ", Options{Terminal: true}, c.clock())
	r.Phase("play")
	r.Count(15, 30, "needs")
	got := out.take()
	want := "\r\033[Kneedlebench: play, 0s\r\033[Kneedlebench: play: [###############...............] 15/30 needs, 0s"
	if got != want {
		t.Fatalf("terminal:\n%q\nwant\n%q", got, want)
	}
	c.advance(time.Second)
	if got, want := out.take(), "\r\033[Kneedlebench: play: [###############...............] 15/30 needs, 1s"; got != want {
		t.Fatalf("tick on a terminal: %q, want %q", got, want)
	}
	r.Close()
	if got := out.take(); got != "\r\033[K" {
		t.Fatalf("Close on a terminal wrote %q, want the line cleared", got)
	}
}

// TestIsTerminal: a pipe and /dev/null (a character device) are no
// terminals.
func TestIsTerminal(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, w := range []*os.File{pw, null} {
		if IsTerminal(w) {
			t.Errorf("%s: a terminal", w.Name())
		}
	}
	if IsTerminal(&strings.Builder{}) {
		t.Error("a strings.Builder: a terminal")
	}
}

// TestReporter_NilWriter: a caller with nowhere to show progress (a
// library caller's nil stderr) gets a Reporter that shows none, not a
// panic.
func TestReporter_NilWriter(t *testing.T) {
	r := New(nil, "x: ")
	r.Phase("play")
	r.Line("a line")
	r.Close()
}

// TestReporter_PhaseTime: with PhaseTime the time a line tells starts
// again with each phase (Phase, Step, Enter), not with the command; a
// status or a count leaves it running.
func TestReporter_PhaseTime(t *testing.T) {
	c, out := newFakeClock(), &syncBuffer{}
	r := NewWith(out, "x: ", Options{PhaseTime: true}, c.clock())
	defer r.Close()
	c.advance(5 * time.Second)
	r.Phase("explore")
	c.advance(4 * time.Second)
	r.Status("reading")
	c.advance(6 * time.Second)
	r.Enter("implement")
	c.advance(10 * time.Second)
	want := "x: explore, 0s\nx: explore: reading, 10s\nx: implement, 10s\n"
	if got := out.take(); got != want {
		t.Fatalf("plain lines with PhaseTime:\n%q\nwant\n%q", got, want)
	}

	tc, tout := newFakeClock(), &syncBuffer{}
	tr := NewWith(tout, "", Options{Terminal: true, PhaseTime: true}, tc.clock())
	tc.advance(7 * time.Second)
	tr.Step("test", "phase 3 of 5")
	tc.advance(2 * time.Second)
	tr.Count(2, 9, "runs")
	tr.Close()
	want = "\r\033[Ktest: phase 3 of 5, 0s\r\033[Ktest: phase 3 of 5, 2s" +
		"\r\033[Ktest: phase 3 of 5: [######........................] 2/9 runs, 2s\r\033[K"
	if got := tout.take(); got != want {
		t.Fatalf("a terminal with PhaseTime:\n%q\nwant\n%q", got, want)
	}
}

// TestReporter_FitsTheTerminal: a live line is one cell narrower than the
// terminal, so it never wraps: the bar narrows first (keeping room for the
// time to grow to "59m59s", so it does not narrow as the time grows), is
// left out when fewer than minBar cells fit, and a line too wide even then
// is cut.
func TestReporter_FitsTheTerminal(t *testing.T) {
	line := "p: a phase: 3/4 units, 0s" // the line without its bar: 25 cells
	for _, tc := range []struct {
		cols int
		want string
	}{
		{80, "p: a phase: [######################........] 3/4 units, 0s"}, // the full bar: 58 cells
		{41, "p: a phase: [######..] 3/4 units, 0s"},                       // 40 cells, 4 for the time: a bar of 8
		{38, "p: a phase: [###..] 3/4 units, 0s"},                          // minBar
		{37, line},          // no room for minBar cells: no bar
		{26, line},          // exactly one cell narrower
		{12, "p: a phase…"}, // cut
		{1, ""},             // no room at all
	} {
		c, out := newFakeClock(), &syncBuffer{}
		r := NewWith(out, "p: ", Options{Terminal: true, Columns: tc.cols}, c.clock())
		r.Enter("a phase")
		out.take()
		r.Count(3, 4, "units")
		got := out.take()
		r.Close()
		if got != "\r\033[K"+tc.want {
			t.Errorf("%d columns: %q, want %q", tc.cols, got, "\r\033[K"+tc.want)
		}
		if n := len([]rune(strings.TrimPrefix(got, "\r\033[K"))); n >= tc.cols {
			t.Errorf("%d columns: a line of %d cells", tc.cols, n)
		}
	}

	c, out := newFakeClock(), &syncBuffer{}
	r := NewWith(out, "p: ", Options{Terminal: true, Columns: 41}, c.clock())
	defer r.Close()
	r.Enter("a phase")
	r.Count(3, 4, "units")
	out.take()
	c.advance(10 * time.Second)
	c.advance(50 * time.Minute)
	want := "\r\033[Kp: a phase: [######..] 3/4 units, 10s\r\033[Kp: a phase: [######..] 3/4 units, 50m10s"
	if got := out.take(); got != want {
		t.Errorf("as the time grows:\n%q\nwant\n%q", got, want)
	}
}

// TestNewFor: a Reporter on the wall clock told that w relays a terminal
// (w itself is no file) draws the live line and clears it; told nothing,
// it writes plain lines. (The wall clock may tick between: any number of
// seconds, any number of redraws.)
func TestNewFor(t *testing.T) {
	tty, plain := &syncBuffer{}, &syncBuffer{}
	r := NewFor(tty, "p: ", Options{Terminal: true})
	r.Phase("play")
	r.Close()
	if got := tty.take(); !regexp.MustCompile(`^(\r\033\[Kp: play, \d+s)+\r\033\[K$`).MatchString(got) {
		t.Errorf("told a terminal: %q, want the live line drawn, then cleared", got)
	}
	r = NewFor(plain, "p: ", Options{})
	r.Phase("play")
	r.Close()
	if got := plain.take(); !regexp.MustCompile(`^(p: play, \d+s\n)+$`).MatchString(got) {
		t.Errorf("told no terminal: %q, want plain lines", got)
	}
}
