// Package progress reports a long command's progress on its stderr. On a
// terminal it redraws one live line in place (a bar for counts); anywhere
// else (a pipe, a log file) it writes plain lines: one at each phase
// change, and the current state at least every Interval while the command
// runs, so `make bench > log 2>&1` shows it is alive. The clock and the
// ticker are injectable: tests drive them and never sleep.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Interval is the longest a non-terminal stays without a line.
const Interval = 10 * time.Second

// barWidth is the number of cells of a terminal's bar.
const barWidth = 30

// Clock is what a Reporter reads the time from: Now, and Ticks, whose
// every value makes it check whether a line is due.
type Clock struct {
	Now   func() time.Time
	Ticks <-chan time.Time
}

// Reporter writes one command's progress; it is safe for concurrent use.
// Close it when the command ends.
type Reporter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string // "needlebench: "
	tty    bool
	now    func() time.Time
	start  time.Time
	last   time.Time // when the last plain line was written
	phase  string
	status string // what the current phase does, "" for the phase alone
	done   int    // done and total of a count; total 0 when none
	total  int
	unit   string
	drawn  bool   // a terminal shows a live line
	shown  string // the live line drawn last
	stop   chan struct{}
	ended  sync.WaitGroup
}

// New returns a Reporter writing to w (nil: nowhere), in the terminal form when w is a
// terminal, ticking every second by the wall clock.
func New(w io.Writer, prefix string) *Reporter {
	t := time.NewTicker(time.Second)
	r := NewWith(w, prefix, IsTerminal(w), Clock{Now: time.Now, Ticks: t.C})
	go func() { <-r.stop; t.Stop() }()
	return r
}

// NewWith returns a Reporter writing to w in the terminal form or not, on
// clock.
func NewWith(w io.Writer, prefix string, terminal bool, clock Clock) *Reporter {
	if w == nil {
		w = io.Discard // a caller with nowhere to show progress shows none
	}
	now := clock.Now()
	r := &Reporter{w: w, prefix: prefix, tty: terminal, now: clock.Now, start: now, last: now, stop: make(chan struct{})}
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
		if r.drawn && r.prefix+r.state() != r.shown {
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
	if r.tty {
		r.draw()
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

// state is the current phase, status or count, and the time since start.
func (r *Reporter) state() string {
	var parts []string
	for _, s := range []string{r.phase, r.status} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if r.total > 0 {
		count := fmt.Sprintf("%d/%d %s", r.done, r.total, r.unit)
		if r.tty {
			filled := barWidth * min(r.done, r.total) / r.total
			count = "[" + strings.Repeat("#", filled) + strings.Repeat(".", barWidth-filled) + "] " + count
		}
		parts = append(parts, count)
	}
	return strings.Join(parts, ": ") + ", " + r.now().Sub(r.start).Truncate(time.Second).String()
}

// line writes the state as a plain line.
func (r *Reporter) line() {
	fmt.Fprintf(r.w, "%s%s\n", r.prefix, r.state())
	r.last = r.now()
}

// draw redraws a terminal's live line.
func (r *Reporter) draw() {
	r.shown = r.prefix + r.state()
	fmt.Fprintf(r.w, "\r\033[K%s", r.shown)
	r.drawn = true
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
