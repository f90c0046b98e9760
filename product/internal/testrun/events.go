package testrun

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"lukechampine.com/blake3"

	"github.com/needle-dev/needle/product/internal/ndjson"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, with the
// build events of Go 1.24 and later).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

// eventLog reads a `go test -json` stream — untrusted: the test writes into
// it — with bounded memory: lines longer than maxLine are counted as
// malformed and skipped, output text is kept up to maxOutput bytes, and the
// whole stream is hashed.
type eventLog struct {
	maxLine   int
	output    *ndjson.Buffer
	hash      *blake3.Hasher
	tests     map[string]string // test name → its last terminal action: pass, fail or skip
	ran       map[string]bool   // tests that started
	pkgAction string            // the package's terminal action, "" if none came
	build     bool              // a build-fail event, or the package failed before any test ran with build output
	timeout   bool              // the test binary's own -timeout fired
	malformed int
	bytes     int64
	// stopped is the last output line of the launcher saying why it
	// stopped the sandbox; oom is set when a Go program of the run died
	// out of memory (past its address space).
	stopped string
	oom     bool
}

func newEventLog(maxOutput int) *eventLog {
	return &eventLog{
		maxLine: 1 << 20,
		output:  ndjson.NewBuffer(maxOutput),
		hash:    blake3.New(32, nil),
		tests:   map[string]string{},
		ran:     map[string]bool{},
	}
}

// read consumes the stream to EOF.
func (l *eventLog) read(r io.Reader) error {
	lines := ndjson.NewReader(io.TeeReader(r, countingWriter{l}), l.maxLine)
	lines.SkipTooLong = true
	for {
		line, err := lines.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, ndjson.ErrTooLong):
			l.malformed++
		case err != nil:
			return err
		default:
			l.line(line)
		}
	}
}

type countingWriter struct{ l *eventLog }

func (w countingWriter) Write(p []byte) (int, error) {
	w.l.hash.Write(p)
	w.l.bytes += int64(len(p))
	return len(p), nil
}

func (l *eventLog) line(b []byte) {
	var e event
	if err := json.Unmarshal(b, &e); err != nil || e.Action == "" {
		l.malformed++
		return
	}
	switch e.Action {
	case "output", "build-output":
		_, _ = l.output.Write([]byte(e.Output))
		if i := strings.Index(e.Output, limitMarker+"stopped: "); i >= 0 {
			l.stopped = strings.TrimSpace(e.Output[i:])
		}
		if outOfMemory(e.Output) {
			l.oom = true
		}
		if e.Test == "" && strings.HasPrefix(e.Output, "panic: test timed out after ") {
			l.timeout = true
		}
	case "build-fail":
		l.build = true
	case "run":
		if e.Test != "" {
			l.ran[e.Test] = true
		}
	case "pass", "fail", "skip":
		if e.Test != "" {
			l.tests[e.Test] = e.Action
		} else {
			l.pkgAction = e.Action
		}
	}
}

// limit says which limit stopped the run ("" for none): the launcher's
// account, or an address space a Go program ran out of.
func (l *eventLog) limit(lim Limits) string {
	return limitIn([]byte("\n"+l.stopped+"\n"), l.oom, lim)
}

// digest is the BLAKE3-256 of the whole stream, in hex.
func (l *eventLog) digest() string { return hex.EncodeToString(l.hash.Sum(nil)) }
