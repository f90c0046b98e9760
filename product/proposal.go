package product

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/needle-dev/needle/product/internal/schema"
)

// Proposal bounds: a proposal is untrusted (a model or an operator wrote it)
// and is decoded as strictly as a need request.
const (
	MaxProposalBytes = 64 << 10
	MaxPathBytes     = 512
	MaxSpanLines     = 600
	MaxFlowSteps     = 16
	MaxFocusedTests  = 16
	MaxSummaryBytes  = 240
	MaxCommandBytes  = 512
)

// Proposal is typed evidence a worker or an operator proposes for a subject.
// Exactly the fields of its Kind are set. Trusted validators decide whether
// it becomes certified evidence; nothing in it is believed until then.
type Proposal struct {
	Kind    CapabilityKind `json:"kind"`
	Subject Subject        `json:"subject"`

	// implementation_location
	Path      string `json:"path,omitempty"`
	StartLine int    `json:"start_line,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`

	// runtime_flow
	Scenario string     `json:"scenario,omitempty"`
	Steps    []FlowStep `json:"steps,omitempty"`

	// focused_tests
	Tests []TestRef `json:"tests,omitempty"`
}

// FlowStep is one step of a runtime flow: a location and what happens there.
type FlowStep struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Summary   string `json:"summary"`
}

// TestRef is one focused test: where it is, its name and how to run it.
type TestRef struct {
	Path    string `json:"path"`
	Name    string `json:"name"`
	Command string `json:"command"`
}

const opProposal = "evidence.proposal"

// DecodeProposal decodes a proposal strictly: the same closed-input rules as
// a need request (no unknown fields, duplicate keys, wrong types or trailing
// data), every field of its kind present, and the bounds above.
func DecodeProposal(data []byte) (Proposal, error) {
	if len(data) > MaxProposalBytes {
		return Proposal{}, invalidf(opProposal, "$", "proposal is %d bytes; the limit is %d", len(data), MaxProposalBytes)
	}
	root, err := parseJSONTree(data)
	if err != nil {
		return Proposal{}, err
	}
	if root.kind != jsonObject {
		return Proposal{}, invalidf(opProposal, "$", "want an object, got %s", root.kind)
	}
	var p Proposal
	var kind string
	for _, m := range root.members {
		if m.key == "kind" {
			if err := bindString(m.value, "kind", &kind); err != nil {
				return Proposal{}, err
			}
		}
	}
	k, ok := ParseCapabilityKind(kind)
	if !ok {
		return Proposal{}, invalidf(opProposal, "kind", "unknown or missing proposal kind %q; want %s", kind, enumList(allCapabilities))
	}
	p.Kind = k
	binders := map[string]func(jsonValue, string) error{
		"kind":    func(jsonValue, string) error { return nil },
		"subject": func(v jsonValue, path string) error { return bindSubject(v, path, &p.Subject) },
	}
	required := []string{"kind", "subject"}
	switch k {
	case CapImplementationLocation:
		binders["path"] = func(v jsonValue, path string) error { return bindString(v, path, &p.Path) }
		binders["start_line"] = func(v jsonValue, path string) error { return bindLine(v, path, &p.StartLine) }
		binders["end_line"] = func(v jsonValue, path string) error { return bindLine(v, path, &p.EndLine) }
		required = append(required, "path", "start_line", "end_line")
	case CapRuntimeFlow:
		binders["scenario"] = func(v jsonValue, path string) error { return bindString(v, path, &p.Scenario) }
		binders["steps"] = func(v jsonValue, path string) error { return bindSteps(v, path, &p.Steps) }
		required = append(required, "scenario", "steps")
	case CapFocusedTests:
		binders["tests"] = func(v jsonValue, path string) error { return bindTests(v, path, &p.Tests) }
		required = append(required, "tests")
	}
	if err := bindObject(root, "$", binders, required...); err != nil {
		return Proposal{}, err
	}
	return p, checkProposal(p)
}

func bindSubject(v jsonValue, path string, s *Subject) error {
	var req SubjectRequest
	err := bindObject(v, path, map[string]func(jsonValue, string) error{
		"kind": func(v jsonValue, path string) error { return bindString(v, path, &req.Kind) },
		"name": func(v jsonValue, path string) error { return bindString(v, path, &req.Name) },
	}, "kind", "name")
	if err != nil {
		return err
	}
	subject, err := compileSubject(req)
	*s = subject
	return err
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

func bindSteps(v jsonValue, path string, dst *[]FlowStep) error {
	return bindArray(v, path, MaxFlowSteps, func(elem jsonValue, epath string) error {
		var s FlowStep
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

func bindTests(v jsonValue, path string, dst *[]TestRef) error {
	return bindArray(v, path, MaxFocusedTests, func(elem jsonValue, epath string) error {
		var t TestRef
		err := bindObject(elem, epath, map[string]func(jsonValue, string) error{
			"path":    func(v jsonValue, p string) error { return bindString(v, p, &t.Path) },
			"name":    func(v jsonValue, p string) error { return bindString(v, p, &t.Name) },
			"command": func(v jsonValue, p string) error { return bindString(v, p, &t.Command) },
		}, "path", "name", "command")
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

// checkProposal checks the shape rules that need no source: bounded, clean
// relative paths and sane spans. Whether the cited code is really there is
// the validators' business.
func checkProposal(p Proposal) error {
	switch p.Kind {
	case CapImplementationLocation:
		return checkLocation("", p.Path, p.StartLine, p.EndLine)
	case CapRuntimeFlow:
		if p.Scenario != ScenarioDefault {
			if err := checkBoundedName("scenario", "scenario", p.Scenario); err != nil {
				return err
			}
		}
		for i, s := range p.Steps {
			prefix := fmt.Sprintf("steps[%d].", i)
			if err := checkLocation(prefix, s.Path, s.StartLine, s.EndLine); err != nil {
				return err
			}
			if len(s.Summary) > MaxSummaryBytes || strings.ContainsAny(s.Summary, "\n\r") {
				return invalidf(opProposal, prefix+"summary", "summary must be one line of at most %d bytes", MaxSummaryBytes)
			}
		}
	case CapFocusedTests:
		for i, t := range p.Tests {
			prefix := fmt.Sprintf("tests[%d].", i)
			if err := checkRelPath(prefix+"path", t.Path); err != nil {
				return err
			}
			if !isGoIdent(t.Name) {
				return invalidf(opProposal, prefix+"name", "test name %q is not an identifier", t.Name)
			}
			if len(t.Command) > MaxCommandBytes || strings.ContainsAny(t.Command, "\n\r") {
				return invalidf(opProposal, prefix+"command", "command must be one line of at most %d bytes", MaxCommandBytes)
			}
		}
	}
	return nil
}

func checkLocation(prefix, p string, start, end int) error {
	if err := checkRelPath(prefix+"path", p); err != nil {
		return err
	}
	if end < start {
		return invalidf(opProposal, prefix+"end_line", "end_line %d is before start_line %d", end, start)
	}
	if end-start+1 > MaxSpanLines {
		return invalidf(opProposal, prefix+"end_line", "span of %d lines; the limit is %d", end-start+1, MaxSpanLines)
	}
	return nil
}

// checkRelPath accepts a clean, relative, slash-separated path that stays
// inside the repository.
func checkRelPath(field, p string) error {
	switch {
	case p == "" || len(p) > MaxPathBytes:
		return invalidf(opProposal, field, "path must be 1 to %d bytes", MaxPathBytes)
	case strings.ContainsAny(p, "\\\x00") || strings.HasPrefix(p, "/"):
		return invalidf(opProposal, field, "path %q must be relative and slash-separated", p)
	case path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return invalidf(opProposal, field, "path %q must be clean and inside the repository", p)
	}
	return nil
}

func isGoIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// ProposalSchema returns the strict JSON Schema of a proposal of kind k:
// every property required and additionalProperties false at every level, so
// it can serve as a Codex turn's outputSchema.
func ProposalSchema(k CapabilityKind) ([]byte, error) {
	obj := schema.Strict
	// Length bounds are enforced by DecodeProposal, not the schema: strict
	// structured-output schemas do not accept minLength/maxLength.
	str := func(int) map[string]any { return map[string]any{"type": "string"} }
	line := map[string]any{"type": "integer", "minimum": 1}
	props := map[string]any{
		"kind":    schema.Enum(k),
		"subject": obj(map[string]any{"kind": schema.Enum(allSubjectKinds...), "name": str(MaxSubjectNameChars)}),
	}
	switch k {
	case CapImplementationLocation:
		props["path"], props["start_line"], props["end_line"] = str(MaxPathBytes), line, line
	case CapRuntimeFlow:
		props["scenario"] = str(MaxNameBytes)
		step := obj(map[string]any{"path": str(MaxPathBytes), "start_line": line, "end_line": line, "summary": str(MaxSummaryBytes)})
		props["steps"] = map[string]any{"type": "array", "items": step, "minItems": 1, "maxItems": MaxFlowSteps}
	case CapFocusedTests:
		test := obj(map[string]any{"path": str(MaxPathBytes), "name": str(128), "command": str(MaxCommandBytes)})
		props["tests"] = map[string]any{"type": "array", "items": test, "minItems": 1, "maxItems": MaxFocusedTests}
	default:
		return nil, invalidf(opProposal, "kind", "unknown proposal kind %q", k)
	}
	s := obj(props)
	s["title"] = "Needle " + string(k) + " proposal"
	return json.MarshalIndent(s, "", "  ")
}
