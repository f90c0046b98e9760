// Package progress reports a long command's progress on its stderr. On a
// terminal it redraws one live line in place (a bar for counts); anywhere
// else (a pipe, a log file) it writes plain lines: one at each phase
// change, and the current state at least every Interval while the command
// runs, so `make bench > log 2>&1` shows it is alive. A live line never
// wraps (it is fitted to the terminal's width, the bar first), so
// redrawing or clearing it leaves nothing behind. The clock and the ticker
// are injectable: tests drive them and never sleep.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Interval is the longest a non-terminal stays without a line.
const Interval = 10 * time.Second

// barWidth is the number of cells of a terminal's bar, and minBar the
// fewest it is drawn with: a live line with less room leaves the bar out.
const (
	barWidth = 30
	minBar   = 5
)

// timeRoom is the room a live line with a bar keeps for its time: up to
// "59m59s".
const timeRoom = len("59m59s")

// DefaultColumns is the width of a terminal whose width is unknown.
const DefaultColumns = 80

// Options say how a Reporter shows progress.
type Options struct {
	// Terminal: w is a terminal, or relays one (the resident runtime
	// relays its client's stderr): one live line redrawn in place.
	Terminal bool
	// Columns is the terminal's width; 0: w's own when w is a terminal
	// file (asked at each draw, so a resized terminal is followed), else
	// DefaultColumns.
	Columns int
	// PhaseTime: the time a line tells is how long the current phase has
	// run (since Phase, Step or Enter), not the command.
	PhaseTime bool
}

// Clock is what a Reporter reads the time from: Now, and Ticks, whose
// every value makes it check whether a line is due.
type Clock struct {
	Now   func() time.Time
	Ticks <-chan time.Time
}

// Reporter writes one command's progress; it is safe for concurrent use.
// Close it when the command ends.
type Reporter struct {
	mu       sync.Mutex
	w        io.Writer
	prefix   string // "needlebench: "
	tty      bool
	cols     func() int // a terminal's width
	now      func() time.Time
	start    time.Time // when the command started, or with PhaseTime the current phase
	last     time.Time // when the last plain line was written
	perPhase bool      // PhaseTime
	phase    string
	status   string // what the current phase does, "" for the phase alone
	done     int    // done and total of a count; total 0 when none
	total    int
	unit     string
	drawn    bool   // a terminal shows a live line
	shown    string // the live line drawn last
	stop     chan struct{}
	ended    sync.WaitGroup
}

// New returns a Reporter writing to w (nil: nowhere), in the terminal form when w is a
// terminal, ticking every second by the wall clock.
func New(w io.Writer, prefix string) *Reporter {
	return NewFor(w, prefix, Options{Terminal: IsTerminal(w)})
}

// NewFor returns a Reporter writing to w (nil: nowhere) as o says,
// ticking every second by the wall clock.
func NewFor(w io.Writer, prefix string, o Options) *Reporter {
	t := time.NewTicker(time.Second)
	r := NewWith(w, prefix, o, Clock{Now: time.Now, Ticks: t.C})
	go func() { <-r.stop; t.Stop() }()
	return r
}

// NewWith returns a Reporter writing to w as o says, on clock.
func NewWith(w io.Writer, prefix string, o Options, clock Clock) *Reporter {
	if w == nil {
		w = io.Discard // a caller with nowhere to show progress shows none
	}
	now := clock.Now()
	r := &Reporter{w: w, prefix: prefix, tty: o.Terminal, cols: columnsOf(w, o.Columns), now: clock.Now,
		start: now, last: now, perPhase: o.PhaseTime, stop: make(chan struct{})}
	r.ended.Add(1)
	go r.loop(clock.Ticks)
	return r
}

// loop checks at every tick whether a line is due.
func (r *Reporter) loop(ticks <-chan time.Time) {
	defer r.ended.Done()
	for {
		select {
		case <-r.stop:
			return
		case <-ticks:
			r.tick()
		}
	}
}

// tick redraws a terminal's line (its clock moves) or, when Interval
// passed since the last plain line, writes the state as one.
func (r *Reporter) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tty {
		// A tick that changes nothing shown (the clock still in the same
		// second) redraws nothing.
		if r.drawn && r.live() != r.shown {
			r.draw()
		}
		return
	}
	if r.phase != "" && r.now().Sub(r.last) >= Interval {
		r.line()
	}
}

// Phase starts a phase: a line of its own, whatever the time.
func (r *Reporter) Phase(name string) { r.Step(name, "") }

// Step starts a phase doing status at once: a line of its own, whatever
// the time.
func (r *Reporter) Step(name, status string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase, r.status, r.total = name, status, 0
	r.began()
	if r.tty {
		r.draw()
		return
	}
	r.line()
}

// Enter starts a phase without a line of its own: the next line due
// tells it (a caller that wrote its own line with Line).
func (r *Reporter) Enter(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase, r.status, r.total = name, "", 0
	r.began()
	if r.tty {
		r.draw()
	}
}

// began notes that a phase began: with PhaseTime, its time starts.
func (r *Reporter) began() {
	if r.perPhase {
		r.start = r.now()
	}
}

// Line writes text as a line of its own, whatever the time: on a
// terminal the live line is cleared first and drawn again below it.
func (r *Reporter) Line(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tty && r.drawn {
		fmt.Fprint(r.w, "\r\033[K")
	}
	fmt.Fprintf(r.w, "%s\n", strings.TrimSuffix(text, "\n"))
	r.last = r.now()
	if r.tty && r.drawn {
		r.draw()
	}
}

// Status says what the current phase does now (a module being
// materialized): on a terminal at once, elsewhere in the next line due.
func (r *Reporter) Status(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.total = msg, 0
	if r.tty {
		r.draw()
	}
}

// Count says done of total units (needs, answers) are through: a bar on a
// terminal, elsewhere the next line due says "done/total unit".
func (r *Reporter) Count(done, total int, unit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done, r.total, r.unit = done, total, unit
	if r.tty {
		r.draw()
	}
}

// Close stops the ticks and clears a terminal's live line.
func (r *Reporter) Close() {
	r.mu.Lock()
	select {
	case <-r.stop:
		r.mu.Unlock()
		return
	default:
	}
	close(r.stop)
	if r.tty && r.drawn {
		fmt.Fprint(r.w, "\r\033[K")
		r.drawn = false
	}
	r.mu.Unlock()
	r.ended.Wait()
}

// text is the prefix, the current phase, status and count (with a bar of
// bar cells, none when 0), and the time since start.
func (r *Reporter) text(bar int) string {
	var parts []string
	for _, s := range []string{r.phase, r.status} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if r.total > 0 {
		count := fmt.Sprintf("%d/%d %s", r.done, r.total, r.unit)
		if bar > 0 {
			filled := bar * max(0, min(r.done, r.total)) / r.total
			count = "[" + strings.Repeat("#", filled) + strings.Repeat(".", bar-filled) + "] " + count
		}
		parts = append(parts, count)
	}
	return r.prefix + strings.Join(parts, ": ") + ", " + r.elapsed()
}

// elapsed is the time since start, in seconds.
func (r *Reporter) elapsed() string { return r.now().Sub(r.start).Truncate(time.Second).String() }

// live is a terminal's line: one cell narrower than the terminal, so it
// never wraps; a count's bar as wide as fits with room for the time to
// grow to timeRoom (the bar does not narrow as it grows), up to barWidth
// cells (none when fewer than minBar fit); a line too wide even without it
// is cut.
func (r *Reporter) live() string {
	limit := r.cols() - 1
	bar := 0
	if r.total > 0 {
		room := limit - utf8.RuneCountInString(r.text(0)) - len("[] ") - max(0, timeRoom-len(r.elapsed()))
		if bar = min(barWidth, room); bar < minBar {
			bar = 0
		}
	}
	return clipRunes(r.text(bar), limit)
}

// clipRunes returns s cut to at most n runes, the last one "…" when cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	return string([]rune(s)[:n-1]) + "…"
}

// line writes the state as a plain line.
func (r *Reporter) line() {
	fmt.Fprintf(r.w, "%s\n", r.text(0))
	r.last = r.now()
}

// draw redraws a terminal's live line.
func (r *Reporter) draw() {
	r.shown = r.live()
	fmt.Fprintf(r.w, "\r\033[K%s", r.shown)
	r.drawn = true
}

// columnsOf returns how a Reporter on w learns its terminal's width:
// fixed when cols is not 0, else w's own as Columns tells it, else
// DefaultColumns.
func columnsOf(w io.Writer, cols int) func() int {
	if cols > 0 {
		return func() int { return cols }
	}
	return func() int {
		if n := Columns(w); n > 0 {
			return n
		}
		return DefaultColumns
	}
}

// Columns returns the width of the terminal w is, or 0 when w is no
// terminal file or tells no width.
func Columns(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// IsTerminal reports whether w is a terminal: a file the terminal ioctl
// answers for (a character device such as /dev/null is not one).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && IsTerminalFile(f)
}

// IsTerminalFile reports whether f is a terminal.
func IsTerminalFile(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
