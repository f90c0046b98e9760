package product

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/enum"
	"github.com/needle-dev/needle/product/internal/schema"
)

// Proposal bounds: a proposal is untrusted (a model or an operator wrote it)
// and is decoded as strictly as a need request.
const (
	maxProposalBytes = 64 << 10
	maxPathBytes     = 512
	MaxSpanLines     = 600
	maxFlowSteps     = 16
	maxFocusedTests  = 16
	maxSummaryBytes  = 240
	maxCommandBytes  = 512
	maxTestNameBytes = 256
)

// proposal is typed evidence a worker or an operator proposes for a subject.
// Exactly the fields of its Kind are set. Trusted validators decide whether
// it becomes certified evidence; nothing in it is believed until then.
type proposal struct {
	Kind    CapabilityKind `json:"kind"`
	Subject Subject        `json:"subject"`

	// implementation_location
	Path      string `json:"path,omitempty"`
	StartLine int    `json:"start_line,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`

	// runtime_flow
	Scenario string     `json:"scenario,omitempty"`
	Steps    []flowStep `json:"steps,omitempty"`

	// focused_tests
	Tests []testRef `json:"tests,omitempty"`

	// problems are values the proposal's JSON Schema allows that no
	// validator can accept (a path leaving the repository, a backwards
	// span): the proposal decodes, and is rejected for them before
	// anything is read. A worker that follows the schema is never refused
	// for shape.
	problems []string
}

// flowStep is one step of a runtime flow: a location and what happens there.
type flowStep struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Summary   string `json:"summary"`
}

// testRef is one focused test: where it is and its name ("TestX", or a
// subtest "TestX/case" as go test -v prints it). Command is how the
// proposer would run it: a hint at most. It never decides a validation and
// is never served; the command in a context is Needle's own, derived from
// the package and the test name, and certified evidence does not keep it.
type testRef struct {
	Path    string `json:"path"`
	Name    string `json:"name"`
	Command string `json:"command,omitempty"`
}

const opProposal = "evidence.proposal"

// decodeProposal decodes a proposal strictly: the same closed-input rules as
// a need request (no unknown fields, duplicate keys, wrong types or trailing
// data), every field of its kind present, and the bounds above.
func decodeProposal(data []byte) (proposal, error) {
	if len(data) > maxProposalBytes {
		return proposal{}, invalidf(opProposal, "$", "proposal is %d bytes; the limit is %d", len(data), maxProposalBytes)
	}
	root, err := parseJSONTree(data)
	if err != nil {
		return proposal{}, err
	}
	if root.kind != jsonObject {
		return proposal{}, invalidf(opProposal, "$", "want an object, got %s", root.kind)
	}
	var p proposal
	var kind string
	for _, m := range root.members {
		if m.key == "kind" {
			if err := bindString(m.value, "kind", &kind); err != nil {
				return proposal{}, err
			}
		}
	}
	k, ok := parseCapabilityKind(kind)
	if !ok {
		return proposal{}, invalidf(opProposal, "kind", "unknown or missing proposal kind %q; want %s", kind, enum.List(allCapabilities))
	}
	p.Kind = k
	binders := map[string]func(jsonValue, string) error{
		"kind":    func(jsonValue, string) error { return nil },
		"subject": func(v jsonValue, path string) error { return bindSubject(v, path, &p.Subject, &p.problems) },
	}
	required := []string{"kind", "subject"}
	switch k {
	case capImplementationLocation:
		binders["path"] = func(v jsonValue, path string) error { return bindString(v, path, &p.Path) }
		binders["start_line"] = func(v jsonValue, path string) error { return bindLine(v, path, &p.StartLine) }
		binders["end_line"] = func(v jsonValue, path string) error { return bindLine(v, path, &p.EndLine) }
		required = append(required, "path", "start_line", "end_line")
	case capRuntimeFlow:
		binders["scenario"] = func(v jsonValue, path string) error { return bindString(v, path, &p.Scenario) }
		binders["steps"] = func(v jsonValue, path string) error { return bindSteps(v, path, &p.Steps) }
		required = append(required, "scenario", "steps")
	case capFocusedTests:
		binders["tests"] = func(v jsonValue, path string) error { return bindTests(v, path, &p.Tests) }
		required = append(required, "tests")
	}
	if err := bindObject(root, "$", binders, required...); err != nil {
		return proposal{}, err
	}
	return checkProposal(p)
}

// bindSubject binds a proposal's subject. An unknown kind is refused (the
// schema's enum refuses it too); a name the compiler would refuse is kept,
// trimmed, with the problem noted: it cannot be the need's subject, and
// the proposal is rejected for it.
func bindSubject(v jsonValue, path string, s *Subject, problems *[]string) error {
	var req SubjectRequest
	err := bindObject(v, path, map[string]func(jsonValue, string) error{
		"kind": func(v jsonValue, path string) error { return bindString(v, path, &req.Kind) },
		"name": func(v jsonValue, path string) error { return bindString(v, path, &req.Name) },
	}, "kind", "name")
	if err != nil {
		return err
	}
	kind, ok := parseSubjectKind(req.Kind)
	if !ok {
		return invalidf(opCompile, path+".kind", "unknown subject kind %q; want %s", req.Kind, enum.List(allSubjectKinds))
	}
	req.Name = strings.TrimSpace(req.Name)
	subject, err := compileSubject(req)
	if err != nil {
		*s = Subject{Kind: kind, Name: strings.ToValidUTF8(req.Name, "\uFFFD")}
		*problems = append(*problems, fmt.Sprintf("%s.name: %v", path, errMessage(err)))
		return nil
	}
	*s = subject
	return nil
}

// errMessage is an *Error's message without its op and path.
func errMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Err != nil {
		return e.Err.Error()
	}
	return err.Error()
}

// bindLine binds a positive integer line number.
func bindLine(v jsonValue, path string, dst *int) error {
	if v.kind != jsonNumber {
		return invalidf(opProposal, path, "want a line number, got %s", v.kind)
	}
	n, err := strconv.Atoi(v.str)
	if err != nil || n < 1 {
		return invalidf(opProposal, path, "want a positive integer line number, got %s", v.str)
	}
	*dst = n
	return nil
}

func bindSteps(v jsonValue, path string, dst *[]flowStep) error {
	return bindArray(v, path, maxFlowSteps, func(elem jsonValue, epath string) error {
		var s flowStep
		err := bindObject(elem, epath, map[string]func(jsonValue, string) error{
			"path":       func(v jsonValue, p string) error { return bindString(v, p, &s.Path) },
			"start_line": func(v jsonValue, p string) error { return bindLine(v, p, &s.StartLine) },
			"end_line":   func(v jsonValue, p string) error { return bindLine(v, p, &s.EndLine) },
			"summary":    func(v jsonValue, p string) error { return bindString(v, p, &s.Summary) },
		}, "path", "start_line", "end_line", "summary")
		*dst = append(*dst, s)
		return err
	})
}

func bindTests(v jsonValue, path string, dst *[]testRef) error {
	return bindArray(v, path, maxFocusedTests, func(elem jsonValue, epath string) error {
		var t testRef
		err := bindObject(elem, epath, map[string]func(jsonValue, string) error{
			"path":    func(v jsonValue, p string) error { return bindString(v, p, &t.Path) },
			"name":    func(v jsonValue, p string) error { return bindString(v, p, &t.Name) },
			"command": func(v jsonValue, p string) error { return bindString(v, p, &t.Command) },
		}, "path", "name")
		*dst = append(*dst, t)
		return err
	})
}

func bindArray(v jsonValue, path string, max int, bind func(jsonValue, string) error) error {
	if v.kind != jsonArray {
		return invalidf(opProposal, path, "want an array, got %s", v.kind)
	}
	if len(v.elems) == 0 || len(v.elems) > max {
		return invalidf(opProposal, path, "want 1 to %d entries, got %d", max, len(v.elems))
	}
	for i, elem := range v.elems {
		if err := bind(elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// checkProposal checks the rules that need no source and returns the
// proposal with its paths cleaned ("./x.go" is x.go) and its free text
// normalized: a scenario, a summary or a command is made one line of
// printable text (white space runs become one blank) and clipped to its
// bound. What the schema allows but no validator can accept — a path that
// leaves the repository or holds a control character, a backwards or
// oversized span, a test name that is no name — is noted as a problem,
// and the proposal is rejected for it before anything is read.
func checkProposal(p proposal) (proposal, error) {
	problem := func(format string, args ...any) { p.problems = append(p.problems, fmt.Sprintf(format, args...)) }
	switch p.Kind {
	case capImplementationLocation:
		var why string
		p.Path, why = checkLocation("", p.Path, p.StartLine, p.EndLine)
		if why != "" {
			problem("%s", why)
		}
	case capRuntimeFlow:
		p.Scenario = oneLineText(p.Scenario, maxScenarioBytes)
		if p.Scenario == "" {
			p.Scenario = scenarioDefault
		}
		p.Steps = append([]flowStep(nil), p.Steps...)
		for i := range p.Steps {
			s := &p.Steps[i]
			var why string
			if s.Path, why = checkLocation(fmt.Sprintf("steps[%d].", i), s.Path, s.StartLine, s.EndLine); why != "" {
				problem("%s", why)
			}
			s.Summary = oneLineText(s.Summary, maxSummaryBytes)
		}
	case capFocusedTests:
		p.Tests = append([]testRef(nil), p.Tests...)
		for i := range p.Tests {
			t := &p.Tests[i]
			prefix := fmt.Sprintf("tests[%d].", i)
			var why string
			if t.Path, why = checkRelPath(prefix+"path", t.Path); why != "" {
				problem("%s", why)
			}
			t.Name = strings.TrimSpace(t.Name)
			if t.Name == "" || len(t.Name) > maxTestNameBytes || !utf8.ValidString(t.Name) || strings.IndexFunc(t.Name, unsafeRune) >= 0 {
				problem("%sname: test name %q must be 1 to %d bytes of printable text", prefix, t.Name, maxTestNameBytes)
				t.Name = strings.ToValidUTF8(t.Name, "\uFFFD")
			}
			t.Command = oneLineText(t.Command, maxCommandBytes)
		}
	}
	return p, nil
}

// maxScenarioBytes bounds a flow's scenario as kept (longer text is
// clipped).
const maxScenarioBytes = 512

// oneLineText makes untrusted free text one line of printable text of at
// most max bytes: invalid UTF-8 replaced, control, format and separator
// characters and runs of white space made one blank, trimmed, and clipped
// at a character boundary with "…".
func oneLineText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func checkLocation(prefix, p string, start, end int) (string, string) {
	clean, why := checkRelPath(prefix+"path", p)
	if why != "" {
		return clean, why
	}
	if end < start {
		return clean, fmt.Sprintf("%send_line: end_line %d is before start_line %d", prefix, end, start)
	}
	if end-start+1 > MaxSpanLines {
		return clean, fmt.Sprintf("%send_line: span of %d lines; the limit is %d", prefix, end-start+1, MaxSpanLines)
	}
	return clean, ""
}

// checkRelPath accepts a relative, slash-separated path that stays inside
// the repository, and returns it cleaned: "./x.go", "a//b.go" and
// "a/./b.go" are written the way people write paths and mean x.go, a/b.go;
// a path that leaves the repository ("../x", "a/../../x", "/etc") is kept
// as written with why it cannot be cited, never cleaned into something
// else. Control, format (bidi) and
// line-separator characters are refused: a path is printed in contexts.
func checkRelPath(field, p string) (string, string) {
	kept := strings.ToValidUTF8(p, "\uFFFD")
	switch {
	case p == "" || len(p) > maxPathBytes:
		return kept, fmt.Sprintf("%s: path must be 1 to %d bytes", field, maxPathBytes)
	case !utf8.ValidString(p) || strings.IndexFunc(p, unsafeRune) >= 0:
		return kept, fmt.Sprintf("%s: path %q has a control, format or line-separator character", field, p)
	case strings.ContainsAny(p, "\\\x00") || strings.HasPrefix(p, "/"):
		return kept, fmt.Sprintf("%s: path %q must be relative and slash-separated", field, p)
	}
	clean := path.Clean(p)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasSuffix(p, "/") {
		return kept, fmt.Sprintf("%s: path %q must name a file inside the repository", field, p)
	}
	return clean, ""
}

// unsafeRune reports a character that could change how a line of text
// reads: C0 and C1 controls, format characters (bidi controls, zero-width
// joiners) and line or paragraph separators.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// proposalSchema returns the strict JSON Schema of a proposal of kind k:
// every property required and additionalProperties false at every level, so
// it can serve as a Codex turn's outputSchema.
func proposalSchema(k CapabilityKind) ([]byte, error) {
	obj := schema.Strict
	// Length bounds are enforced by decodeProposal, not the schema: strict
	// structured-output schemas do not accept minLength/maxLength.
	str := func(int) map[string]any { return map[string]any{"type": "string"} }
	line := map[string]any{"type": "integer", "minimum": 1}
	props := map[string]any{
		"kind":    schema.Enum(k),
		"subject": obj(map[string]any{"kind": schema.Enum(allSubjectKinds...), "name": str(maxSubjectNameChars)}),
	}
	switch k {
	case capImplementationLocation:
		props["path"], props["start_line"], props["end_line"] = str(maxPathBytes), line, line
	case capRuntimeFlow:
		props["scenario"] = str(maxNameBytes)
		step := obj(map[string]any{"path": str(maxPathBytes), "start_line": line, "end_line": line, "summary": str(maxSummaryBytes)})
		props["steps"] = map[string]any{"type": "array", "items": step, "minItems": 1, "maxItems": maxFlowSteps}
	case capFocusedTests:
		test := obj(map[string]any{"path": str(maxPathBytes), "name": str(128), "command": str(maxCommandBytes)})
		props["tests"] = map[string]any{"type": "array", "items": test, "minItems": 1, "maxItems": maxFocusedTests}
	default:
		return nil, invalidf(opProposal, "kind", "unknown proposal kind %q", k)
	}
	s := obj(props)
	s["title"] = "Needle " + string(k) + " proposal"
	return json.MarshalIndent(s, "", "  ")
}
