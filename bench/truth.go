package bench

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The coverage truth: the harness's first ground truth, now its second
// opinion beside the intervention truth (itruth.go), which judges. Its
// rules are the validators' own rules written again — declarations, flag
// definitions and call links with go/types (program.go), test reach by
// coverage (coverage.go) — so agreeing with it proves only that the
// product follows its rules; the report lists where it and the
// intervention truth disagree. What it says:
//
//   - implementation_location: the cited file (a path as models write it,
//     "./x.go" too, cleaned; an escape is false) holds the subject's
//     declaration — the line of a function's or method's name, of a flag
//     definition's name argument — within the cited lines, which lie within
//     the declaring function (the subject's own, or the one holding a flag's
//     definition): its doc comment may be in or out, the end one past its
//     last line or inside it, but lines of the file around it make the
//     answer wrong. Another declaration of the same name (a field, a type,
//     a function of another package) is not the subject's.
//   - runtime_flow: the first step holds the subject as above, and each
//     step holds a reference the type checker resolved to a function or
//     method whose name is declared within the next step's lines: a call, a
//     method value, a function value. A link by name only is no link.
//   - focused_tests: each cited test is a func TestX(*testing.T) of the
//     cited _test.go file (a subtest "TestX/sub" too) and its run executed
//     a statement of the subject's body more often than the test binary
//     does with no test at all. The command a proposal carries is a hint
//     and does not matter.

// tree is a module version's source: slash path → content.
type tree map[string][]byte

// span is a cited location and the exact text of its lines.
type span struct {
	Path       string
	Start, End int
	Text       string
}

func (s span) String() string { return fmt.Sprintf("%s:%d-%d", s.Path, s.Start, s.End) }

// lines returns lines start..end of src, or "" when out of range.
func lines(src []byte, start, end int) string {
	all := strings.Split(string(src), "\n")
	if start < 1 || end > len(all) || start > end {
		return ""
	}
	return strings.Join(all[start-1:end], "\n")
}

func skipFile(rel string) bool {
	return !strings.HasSuffix(rel, ".go") || slices.Contains(strings.Split(rel, "/"), "testdata") ||
		slices.ContainsFunc(strings.Split(rel, "/"), func(p string) bool { return strings.HasPrefix(p, "_") || strings.HasPrefix(p, ".") })
}

// truth is the ground truth of one module version: the intervention
// truth (iv, itruth.go), which judges, and the coverage truth of this file
// (prog and reach), kept as a second opinion.
type truth struct {
	prog  *program
	reach *reach
	iv    *itruth
}

// subject is what a need or a proposal is about.
type subject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// cleanPath is a cited path as it denotes a file of the module: cleaned,
// never absolute or escaping.
func cleanPath(p string) (string, bool) {
	if p == "" || path.IsAbs(p) || strings.Contains(p, "\\") {
		return "", false
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// symbol returns the function or method declaration a symbol subject
// names, when exactly one exists in the module's non-test files.
func (t *truth) symbol(name string) (decl, bool) {
	ds := t.prog.byName[name]
	if len(ds) != 1 {
		return decl{}, false
	}
	return ds[0], true
}

// flagName is a cli_option subject's flag name, without dashes.
func flagName(s string) string { return strings.TrimLeft(s, "-") }

// flagDefs returns the definitions of a flag outside _test.go files: the
// module's own options, the ones the generator asks about and cites.
func (t *truth) flagDefs(name string) []flagDef {
	var out []flagDef
	for _, f := range t.prog.flags {
		if f.Name == flagName(name) && !f.Test {
			out = append(out, f)
		}
	}
	return out
}

// anchor is a line that declares a subject.
type anchor struct {
	path string
	line int
}

// anchors are the lines that declare the subject: a function's or method's
// name, each definition's name argument of a flag outside _test.go files
// (what the generator cites).
func (t *truth) anchors(s subject) []anchor {
	switch s.Kind {
	case "symbol":
		if d, ok := t.symbol(s.Name); ok {
			return []anchor{{d.Path, d.Line}}
		}
	case "cli_option":
		var out []anchor
		for _, f := range t.flagDefs(s.Name) {
			out = append(out, anchor{f.Path, f.Line})
		}
		return out
	}
	return nil
}

// definitions are the lines that declare the subject as judged: the
// anchors, and a flag's definitions in _test.go files too — a test's own
// FlagSet defines a flag of that name as much as a command does.
func (t *truth) definitions(s subject) []anchor {
	out := t.anchors(s)
	if s.Kind == "cli_option" {
		for _, f := range t.prog.flags {
			if f.Name == flagName(s.Name) && f.Test {
				out = append(out, anchor{f.Path, f.Line})
			}
		}
	}
	return out
}

// inFile reports whether lines start..end are lines of file p.
func (t *truth) inFile(p string, start, end int) bool {
	src, ok := t.prog.t[p]
	return ok && start >= 1 && start <= end && end <= lineCount(src)
}

func lineCount(src []byte) int {
	n := strings.Count(string(src), "\n")
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// location judges a cited span: does it hold the subject's declaration?
func (t *truth) location(s subject, p string, start, end int) (bool, string) {
	c, ok := cleanPath(p)
	if !ok {
		return false, fmt.Sprintf("path %q is not a path in the module", p)
	}
	if !t.inFile(c, start, end) {
		return false, fmt.Sprintf("%s:%d-%d is not a span of a file of the module", c, start, end)
	}
	anchors := t.definitions(s)
	if len(anchors) == 0 {
		return false, fmt.Sprintf("%s %q has no unique declaration", s.Kind, s.Name)
	}
	for _, a := range anchors {
		if a.path != c || start > a.line || a.line > end {
			continue
		}
		// The lines must also be the declaration's, not a stretch of the
		// file around it: they lie within the declaring function (a
		// function's own, a flag's enclosing one), its doc comment included,
		// the end at most one past its last line.
		if d, ok := t.prog.enclosing(c, a.line); ok && (start < d.Doc || end > d.End+1) {
			return false, fmt.Sprintf("%s:%d-%d runs beyond %s (%d-%d with its doc comment)", c, start, end, d.Name, d.Doc, d.End)
		}
		return true, ""
	}
	return false, fmt.Sprintf("%s:%d-%d does not hold the declaration of %s", c, start, end, s.Name)
}

// links reports whether lines a of one file hold a resolved reference to a
// function declared within lines b of another.
func (t *truth) links(a, b span) bool {
	for _, r := range t.prog.refs[a.Path] {
		if r.Line >= a.Start && r.Line <= a.End && r.DeclPath == b.Path && r.DeclLine >= b.Start && r.DeclLine <= b.End {
			return true
		}
	}
	return false
}

// flow judges a runtime flow's steps.
func (t *truth) flow(s subject, steps []span) (bool, string) {
	if len(steps) == 0 {
		return false, "no steps"
	}
	clean := make([]span, len(steps))
	for i, st := range steps {
		c, ok := cleanPath(st.Path)
		if !ok || !t.inFile(c, st.Start, st.End) {
			return false, fmt.Sprintf("step %d: %s:%d-%d is not a span of a file of the module", i+1, st.Path, st.Start, st.End)
		}
		clean[i] = span{Path: c, Start: st.Start, End: st.End}
	}
	if ok, why := t.location(s, clean[0].Path, clean[0].Start, clean[0].End); !ok {
		return false, "step 1: " + why
	}
	for i := 0; i+1 < len(clean); i++ {
		if !t.links(clean[i], clean[i+1]) {
			return false, fmt.Sprintf("step %d (%s) calls nothing declared in step %d (%s)", i+1, clean[i], i+2, clean[i+1])
		}
	}
	return true, ""
}

// errUnjudged marks a question the truth has no data for (a test run the
// coverage did not record): the harness treats the answer as wrong and
// says so.
const errUnjudged = "unjudged: "

// test judges one cited test: does its run execute the subject?
func (t *truth) test(s subject, p, name string) (bool, string) {
	c, ok := cleanPath(p)
	if !ok || !strings.HasSuffix(c, "_test.go") {
		return false, fmt.Sprintf("%q is not a _test.go file of the module", p)
	}
	top, _, _ := strings.Cut(name, "/")
	if !slices.ContainsFunc(t.prog.tests, func(d testDecl) bool { return d.Path == c && d.Name == top }) {
		return false, fmt.Sprintf("%s declares no test %s", c, top)
	}
	if s.Kind != "symbol" {
		return false, errUnjudged + "test reach is judged for symbols only"
	}
	d, ok := t.symbol(s.Name)
	if !ok {
		return false, fmt.Sprintf("symbol %q has no unique declaration", s.Name)
	}
	run, ok := t.reach.run(path.Dir(c), name)
	if !ok {
		if why := t.reach.neverRan(path.Dir(c), name); why != "" {
			return false, why
		}
		return false, fmt.Sprintf("%s%s in %s has no recorded run", errUnjudged, name, path.Dir(c))
	}
	if !t.reach.executed(run, d.Path+"#"+d.Name) {
		return false, fmt.Sprintf("%s does not execute %s", name, s.Name)
	}
	return true, ""
}

// proposal is the part of a product proposal the truth reads.
type proposal struct {
	Kind      string  `json:"kind"`
	Subject   subject `json:"subject"`
	Path      string  `json:"path"`
	StartLine int     `json:"start_line"`
	EndLine   int     `json:"end_line"`
	Scenario  string  `json:"scenario"`
	Steps     []struct {
		Path      string `json:"path"`
		StartLine int    `json:"start_line"`
		EndLine   int    `json:"end_line"`
	} `json:"steps"`
	Tests []struct {
		Path string `json:"path"`
		Name string `json:"name"`
	} `json:"tests"`
}

// decodeProposal reads what the truth reads of a proposal.
func decodeProposal(raw []byte) (proposal, error) {
	var p proposal
	err := json.Unmarshal(raw, &p)
	return p, err
}

// answer judges a scripted proposal about s.
func (t *truth) answer(s subject, raw json.RawMessage) (bool, string) {
	var p proposal
	if err := json.Unmarshal(raw, &p); err != nil {
		return false, "not a proposal: " + err.Error()
	}
	if p.Subject != s {
		return false, fmt.Sprintf("about %s %q, not the subject", p.Subject.Kind, p.Subject.Name)
	}
	return t.citations(s, proposalCitations(raw))
}

// citations judges what an answer or a context cites; every citation must
// hold.
func (t *truth) citations(s subject, cs []citation) (bool, string) {
	if len(cs) == 0 {
		return false, "cites nothing"
	}
	for _, c := range cs {
		var ok bool
		var why string
		switch c.kind {
		case "implementation_location":
			ok, why = t.location(s, c.loc.Path, c.loc.Start, c.loc.End)
		case "runtime_flow":
			ok, why = t.flow(s, c.steps)
		case "focused_tests":
			ok, why = len(c.tests) > 0, "no tests"
			for _, ref := range c.tests {
				if ok, why = t.test(s, ref.path, ref.name); !ok {
					break
				}
			}
		default:
			ok, why = false, "unknown kind "+strconv.Quote(c.kind)
		}
		if !ok {
			return false, c.kind + ": " + why
		}
	}
	return true, ""
}
