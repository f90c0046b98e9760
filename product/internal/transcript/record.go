package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Recorder collects wire messages in the order they are recorded. An App
// Server client tees every line it writes and reads into one, in production
// as well as in tests, so that an incident can be frozen into a fixture.
// It is safe for concurrent use; the order between concurrent calls is the
// order in which they take the lock.
type Recorder struct {
	mu    sync.Mutex
	lines []Line
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Record appends one message travelling in direction dir (ClientToServer or
// ServerToClient). raw is copied, so the caller may reuse its buffer; the
// line terminator and other surrounding whitespace are not part of the
// message and are dropped. Nothing is validated here: a recorder must never
// fail the session it observes, and Freeze reports bad lines later.
func (r *Recorder) Record(dir string, raw []byte) {
	msg := bytes.Clone(bytes.TrimSpace(raw))
	r.mu.Lock()
	r.lines = append(r.lines, Line{Dir: dir, Msg: msg})
	r.mu.Unlock()
}

// Lines returns a copy of the recorded messages.
func (r *Recorder) Lines() []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Line, len(r.lines))
	for i, l := range r.lines {
		out[i] = Line{Dir: l.Dir, Msg: bytes.Clone(l.Msg)}
	}
	return out
}

// Freeze turns recorded lines into a transcript that no longer depends on the
// machine it was recorded on. binds maps placeholder names to the values they
// stand for (e.g. "CWD" to the checkout path, "CODEX_HOME" to its directory);
// every occurrence of a value inside a JSON string value becomes "${NAME}".
// Longer values are replaced first, so a CODEX_HOME inside the checkout
// becomes ${CODEX_HOME}, not ${CWD}/…. h.Placeholders is set to the sorted
// names; an empty h.Kind or h.Format is filled in.
//
// Freeze fails if a value is empty, two names share a value, a line is not
// valid for Read, or a value survives anywhere in the output (for example in
// an object key or a number), since a fixture that still holds a temporary
// path would replay only on the machine that recorded it.
func Freeze(h Header, lines []Line, binds map[string]string) (*Transcript, error) {
	names, err := checkBinds(binds)
	if err != nil {
		return nil, err
	}
	if h.Kind == "" {
		h.Kind = "header"
	}
	if h.Format == "" {
		h.Format = Format
	}
	h.Placeholders = names
	if err := checkHeader(h); err != nil {
		return nil, &Error{Line: 1, Err: err}
	}
	rep := replacer(binds, names)
	t := &Transcript{Header: h, Lines: make([]Line, len(lines))}
	for i, l := range lines {
		if err := checkLine(l); err != nil {
			return nil, &Error{Line: i + 2, Err: err}
		}
		msg, err := MapStrings(l.Msg, rep.Replace)
		if err != nil {
			return nil, &Error{Line: i + 2, Err: err}
		}
		t.Lines[i] = Line{Dir: l.Dir, Msg: msg}
	}
	if err := verifyFrozen(t, binds, names); err != nil {
		return nil, err
	}
	return t, nil
}

// checkBinds validates binds and returns their names, sorted.
func checkBinds(binds map[string]string) ([]string, error) {
	names := make([]string, 0, len(binds))
	owner := make(map[string]string, len(binds))
	for name, value := range binds {
		if !ValidPlaceholder(name) {
			return nil, fmt.Errorf("freeze: invalid placeholder name %q", name)
		}
		if value == "" {
			return nil, fmt.Errorf("freeze: placeholder %s is bound to an empty value", name)
		}
		if other, dup := owner[value]; dup {
			a, b := min(name, other), max(name, other)
			return nil, fmt.Errorf("freeze: placeholders %s and %s are bound to the same value", a, b)
		}
		owner[value] = name
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// replacer replaces bound values by placeholders. strings.Replacer tries its
// pairs in argument order at each position, so ordering by descending length
// makes the longest value win; names break ties for determinism.
func replacer(binds map[string]string, names []string) *strings.Replacer {
	order := slices.Clone(names)
	slices.SortStableFunc(order, func(a, b string) int { return len(binds[b]) - len(binds[a]) })
	pairs := make([]string, 0, 2*len(order))
	for _, name := range order {
		pairs = append(pairs, binds[name], "${"+name+"}")
	}
	return strings.NewReplacer(pairs...)
}

// verifyFrozen checks that no bound value is left, neither in the raw bytes
// nor in any decoded string (escapes such as \/ or \u002f could hide it).
func verifyFrozen(t *Transcript, binds map[string]string, names []string) error {
	head, err := json.Marshal(t.Header)
	if err != nil {
		return &Error{Line: 1, Err: err}
	}
	check := func(line int, raw []byte) error {
		for _, name := range names {
			if survives(raw, binds[name]) {
				return &Error{Line: line, Err: fmt.Errorf("freeze: value of %s survives (in a key or non-string value?)", name)}
			}
		}
		return nil
	}
	if err := check(1, head); err != nil {
		return err
	}
	for i, l := range t.Lines {
		if err := check(i+2, l.Msg); err != nil {
			return err
		}
	}
	return nil
}

func survives(raw []byte, value string) bool {
	if bytes.Contains(raw, []byte(value)) {
		return true
	}
	found := false
	scanStrings(raw, func(s string, _, _ int, _ bool) {
		found = found || strings.Contains(s, value)
	})
	return found
}

// MapStrings returns msg with every JSON string value (object keys excluded)
// replaced by f of its decoded text. All other bytes, including key order and
// whitespace, are kept, so a frozen line stays diffable against the wire.
func MapStrings(msg json.RawMessage, f func(string) string) (json.RawMessage, error) {
	if !json.Valid(msg) {
		return nil, errors.New("msg is not valid JSON")
	}
	var out []byte
	last := 0
	var encErr error
	scanStrings(msg, func(s string, start, end int, isKey bool) {
		if isKey || encErr != nil {
			return
		}
		repl := f(s)
		if repl == s {
			return
		}
		enc, err := encodeString(repl)
		if err != nil {
			encErr = err
			return
		}
		out = append(out, msg[last:start]...)
		out = append(out, enc...)
		last = end
	})
	if encErr != nil {
		return nil, encErr
	}
	if out == nil {
		return bytes.Clone(msg), nil
	}
	return append(out, msg[last:]...), nil
}

// scanStrings calls fn for every string literal of the valid JSON text raw,
// with its decoded value, its byte span [start,end) and whether it is an
// object key. Outside string literals valid JSON has no quote characters, so
// a linear scan finds every literal.
func scanStrings(raw []byte, fn func(s string, start, end int, isKey bool)) {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		end := stringEnd(raw, i)
		var s string
		if json.Unmarshal(raw[i:end], &s) == nil {
			fn(s, i, end, followedByColon(raw, end))
		}
		i = end - 1
	}
}

// stringEnd returns the index just past the string literal starting at raw[start].
func stringEnd(raw []byte, start int) int {
	for j := start + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

func followedByColon(raw []byte, i int) bool {
	rest := bytes.TrimLeft(raw[i:], " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}

// encodeString encodes s as a JSON string without HTML escaping, which
// encoding/json would otherwise apply to <, > and &.
func encodeString(s string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
