// Package pytestrun runs Python tests by their pytest node ids under
// coverage.py and reads what ran: a script embedded here (run.py), run by
// the repository's interpreter in the tests' sandbox, in a disposable
// checkout of the snapshot. The script imports pytest and coverage from
// the interpreter's own environment (Needle never installs packages) and
// prints, as JSON, each test's outcome and the lines of the checkout's
// files the run executed. The interpreter, the tests and the code under
// test are the repository's, so the output is untrusted: Parse checks
// every field.
package pytestrun

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
	"github.com/needle-dev/needle/product/internal/strictjson"
)

//go:embed run.py
var script string

// Argv is the command that runs the node ids: not isolated (-I), since
// pytest and coverage are the environment's and the repository's root
// belongs on sys.path as `python -m pytest` puts it there; no bytecode
// written (-B), so nothing lands in the checkout.
func Argv(interpreter string, nodeIDs []string) []string {
	return append([]string{interpreter, "-B", "-c", script}, nodeIDs...)
}

// ArgvCalls is the command that runs run — node ids, or "--module" or
// "--path" with the module or file and its arguments — recording the calls
// into and out of the functions of files (paths relative to the root,
// without a comma).
func ArgvCalls(interpreter string, files []string, run []string) []string {
	return append([]string{interpreter, "-B", "-c", script, "--calls", strings.Join(files, ",")}, run...)
}

// Command is the command a user runs for the node ids, as Needle serves it
// with the evidence: python -m pytest, each node id quoted for a POSIX
// shell.
func Command(nodeIDs []string) string {
	var b strings.Builder
	b.WriteString("python -m pytest")
	for _, id := range nodeIDs {
		b.WriteString(" '" + strings.ReplaceAll(id, "'", `'\''`) + "'")
	}
	return b.String()
}

// Outcomes of a test, as pytest reports them.
const (
	Passed  = "passed"
	Failed  = "failed"
	Skipped = "skipped"
)

// Result is what the script printed for one run.
type Result struct {
	Python string `json:"python"` // the interpreter's version, X.Y.Z
	// Missing is the package the interpreter could not import ("pytest" or
	// "coverage"); nothing ran.
	Missing string `json:"missing,omitempty"`
	// Exit is pytest's exit status (0 all passed, 1 some failed, 2
	// interrupted, 3 internal error, 4 usage error, 5 no tests collected),
	// or a command's.
	Exit int `json:"exit"`
	// Outcomes are the outcome of each test item that ran, by node id.
	Outcomes map[string]string `json:"outcomes"`
	// Files are the lines coverage saw executed, by the path of the file
	// relative to the checkout's root: each file the run imported or
	// executed (an empty __init__.py executes no line).
	Files map[string][]int `json:"files"`
	// TestLines are, by file, the lines the tests themselves executed (from a
	// test's setup to its teardown; a command's whole run), leaving out
	// what importing a module ran, whenever it was imported, and pytest's
	// collection.
	TestLines map[string][]int `json:"ran,omitempty"`
	// Entered are, by file, the first lines (a def's, or its first
	// decorator's) of the code objects the run entered: a function called,
	// a class body run, a comprehension — by the tests themselves, as
	// TestLines. Line 1 is left out: the module's own code starts there.
	Entered map[string][]int `json:"entered,omitempty"`
	// Calls are the calls the run made into or out of the watched files
	// (ArgvCalls), in the order of their first occurrence, once per call
	// site and callee.
	Calls []Call `json:"calls,omitempty"`
	// Parsed are the argparse and optparse options of the checkout that a
	// parse filled in during the run, by the line of the call defining
	// each.
	Parsed []Parsed `json:"reads,omitempty"`
}

// Parsed is an argparse or optparse option, defined by the call on Line of
// File, that a parse filled in. Read: code other than the parser then read
// its value from the parse's namespace (an attribute, getattr, vars).
// Untraced: the namespace was the caller's own class, whose reads the run
// does not see.
type Parsed struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Names    []string `json:"names"`
	Read     bool     `json:"read,omitempty"`
	Untraced bool     `json:"untraced,omitempty"`
}

// ParsedAt returns the option, by one of names, defined by a call
// starting or continuing on a line of file between from and to, that the
// run parsed; one that was read first, then one that was untraced.
func (r *Result) ParsedAt(file string, from, to int, names []string) (Parsed, bool) {
	var found Parsed
	ok := false
	for _, p := range r.Parsed {
		if p.File != file || p.Line < from || p.Line > to || !slices.ContainsFunc(p.Names, func(n string) bool { return slices.Contains(names, n) }) {
			continue
		}
		if !ok || p.Read || p.Untraced && !found.Read {
			found, ok = p, true
		}
	}
	return found, ok
}

// A Call is one call a run made: from a line of one file into the
// function whose code starts (its first decorator, or its def) at a line
// of another.
type Call struct {
	CallerFile string
	CallerLine int
	CalleeFile string
	CalleeLine int
	Callee     string // the function's __qualname__
}

// UnmarshalJSON reads a call as the script prints it: [caller file, line,
// callee file, first line, qualified name].
func (c *Call) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	if len(parts) != 5 {
		return fmt.Errorf("a call of %d parts", len(parts))
	}
	for i, dst := range []any{&c.CallerFile, &c.CallerLine, &c.CalleeFile, &c.CalleeLine, &c.Callee} {
		if err := json.Unmarshal(parts[i], dst); err != nil {
			return err
		}
	}
	if !relPath(c.CallerFile) || !relPath(c.CalleeFile) || c.CallerLine < 1 || c.CalleeLine < 1 || !printable(c.Callee) || c.Callee == "" || len(c.Callee) > maxID {
		return fmt.Errorf("the call %s:%d -> %s:%d %q", c.CallerFile, c.CallerLine, c.CalleeFile, c.CalleeLine, c.Callee)
	}
	return nil
}

// ErrOutput is the error of output the script could not have printed.
var ErrOutput = errors.New("pytestrun: malformed output")

// Bounds on a run's record.
const (
	maxItems = 1 << 16
	maxLines = 1 << 22
	maxID    = 4096
)

var version = lazyregexp.New(`^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$`)

// Parse reads the script's output.
func Parse(out []byte) (*Result, error) {
	var r Result
	if err := strictjson.Decode(out, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	switch {
	case !version.MatchString(r.Python):
		return nil, fmt.Errorf("%w: Python version %q", ErrOutput, r.Python)
	case r.Missing != "" && r.Missing != "pytest" && r.Missing != "coverage":
		return nil, fmt.Errorf("%w: missing %q", ErrOutput, r.Missing)
	case r.Missing != "" && (r.Exit != 0 || len(r.Outcomes) != 0 || len(r.Files) != 0):
		return nil, fmt.Errorf("%w: a run without %s", ErrOutput, r.Missing)
	case r.Exit < 0 || r.Exit > 255:
		return nil, fmt.Errorf("%w: exit status %d", ErrOutput, r.Exit)
	case len(r.Outcomes) > maxItems || len(r.Files) > maxItems || len(r.Calls) > maxItems || len(r.Parsed) > maxItems:
		return nil, fmt.Errorf("%w: %d outcomes, %d files, %d calls, %d parsed options", ErrOutput, len(r.Outcomes), len(r.Files), len(r.Calls), len(r.Parsed))
	}
	for _, p := range r.Parsed {
		if !relPath(p.File) || p.Line < 1 || len(p.Names) == 0 || len(p.Names) > maxID || p.Read && p.Untraced {
			return nil, fmt.Errorf("%w: parsed option %+v", ErrOutput, p)
		}
		for _, n := range p.Names {
			if n == "" || !printable(n) || len(n) > maxID {
				return nil, fmt.Errorf("%w: option name %q", ErrOutput, n)
			}
		}
	}
	for id, o := range r.Outcomes {
		if !printable(id) || len(id) > maxID || o != Passed && o != Failed && o != Skipped {
			return nil, fmt.Errorf("%w: outcome %q of %q", ErrOutput, o, id)
		}
	}
	if err := checkLines(r.Files); err != nil {
		return nil, err
	}
	for _, m := range []map[string][]int{r.TestLines, r.Entered} {
		if err := checkLines(m); err != nil {
			return nil, err
		}
		for f := range m {
			if _, ok := r.Files[f]; !ok {
				return nil, fmt.Errorf("%w: %s ran, not among the run's files", ErrOutput, f)
			}
		}
	}
	return &r, nil
}

// checkLines checks lines by file: clean relative paths, ascending line
// numbers, bounded in all.
func checkLines(byFile map[string][]int) error {
	if len(byFile) > maxItems {
		return fmt.Errorf("%w: %d files", ErrOutput, len(byFile))
	}
	total := 0
	for f, lines := range byFile {
		if !relPath(f) {
			return fmt.Errorf("%w: file %q", ErrOutput, f)
		}
		total += len(lines)
		if total > maxLines {
			return fmt.Errorf("%w: more than %d lines", ErrOutput, maxLines)
		}
		for i, n := range lines {
			if n < 1 || i > 0 && n <= lines[i-1] {
				return fmt.Errorf("%w: the lines of %s are not ascending line numbers", ErrOutput, f)
			}
		}
	}
	return nil
}

// relPath reports whether f is a clean relative slash path inside the
// root.
func relPath(f string) bool {
	return f != "" && f != "." && printable(f) && len(f) <= maxID && !path.IsAbs(f) && path.Clean(f) == f && f != ".." && !strings.HasPrefix(f, "../") && !strings.Contains(f, `\`)
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Entry reports whether the run entered the code object whose first line
// is first in file: called the function defined there.
func (r *Result) Entry(file string, first int) bool {
	_, ok := slices.BinarySearch(r.Entered[file], first)
	return ok
}

// Executed reports whether the tests (or the command) executed a line of
// file between from and to, imports left out (TestLines).
func (r *Result) Executed(file string, from, to int) (int, bool) {
	lines := r.TestLines[file]
	i, _ := slices.BinarySearch(lines, from)
	if i < len(lines) && lines[i] <= to {
		return lines[i], true
	}
	return 0, false
}

// Ran returns the outcomes of the items of the node id: the item itself,
// or those of a parametrized test or a class it names (id[...], id::...).
func (r *Result) Ran(id string) map[string]string {
	out := map[string]string{}
	for item, o := range r.Outcomes {
		if item == id || strings.HasPrefix(item, id+"[") || strings.HasPrefix(item, id+"::") {
			out[item] = o
		}
	}
	return out
}
