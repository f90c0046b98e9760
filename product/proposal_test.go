package product

import (
	"encoding/json"
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeProposal(t *testing.T) {
	for _, src := range []string{locNewSearcher, flowCRLF, testsCRLF} {
		p, err := decodeProposal([]byte(src))
		if err != nil {
			t.Fatalf("DecodeProposal(%s): %v", src, err)
		}
		again, _ := json.Marshal(p)
		if q, err := decodeProposal(again); err != nil || mustID("t", q) != mustID("t", p) {
			t.Errorf("round trip of %s: %v", again, err)
		}
	}
	bad := []struct{ name, src, path string }{
		{"ErrUnknownKind", `{"kind":"call_graph","subject":{"kind":"symbol","name":"A"}}`, "kind"},
		{"ErrMissingField", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"a.go","start_line":1}`, "end_line"},
		{"ErrFieldOfOtherKind", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"a.go","start_line":1,"end_line":2,"steps":[]}`, "steps"},
		{"ErrDuplicateKey", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"a.go","path":"b.go","start_line":1,"end_line":2}`, "path"},
		{"ErrFractionalLine", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"a.go","start_line":1.5,"end_line":2}`, "start_line"},
		{"ErrZeroLine", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"a.go","start_line":0,"end_line":2}`, "start_line"},
		{"ErrNoSteps", `{"kind":"runtime_flow","subject":{"kind":"symbol","name":"A"},"scenario":"default","steps":[]}`, "steps"},
		{"ErrBadSubject", `{"kind":"focused_tests","subject":{"kind":"class","name":"A"},"tests":[]}`, "subject.kind"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeProposal([]byte(tt.src))
			e, ok := err.(*Error)
			if !ok || e.Kind != KindInvalidInput || e.Path != tt.path {
				t.Errorf("error %v, want invalid input at %s", err, tt.path)
			}
		})
	}
}

// TestDecodeProposal_SchemaAgrees: every value the proposal's JSON Schema
// allows decodes — a worker that follows the schema is never refused for
// shape. Free text is made one bounded line; what no proof can accept is
// kept as a problem that rejects the proposal before anything is read.
func TestDecodeProposal_SchemaAgrees(t *testing.T) {
	long := strings.Repeat("word ", 400)
	for _, tt := range []struct{ name, src, problem string }{
		{"BackwardsSpan", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"a.go","start_line":9,"end_line":2}`, "end_line 2 is before start_line 9"},
		{"HugeSpan", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"a.go","start_line":1,"end_line":9000}`, "span of 9000 lines"},
		{"EscapingPath", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"../a.go","start_line":1,"end_line":2}`, "must name a file inside the repository"},
		{"AbsolutePath", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"/etc/passwd","start_line":1,"end_line":2}`, "must be relative"},
		{"TestName", `{"kind":"focused_tests","subject":{"kind":"symbol","name":"A"},"tests":[{"path":"a_test.go","name":"Test\u202eX","command":"go test"}]}`, "printable text"},
		{"BlankSubject", `{"kind":"implementation_location","subject":{"kind":"symbol","name":"  "},"path":"a.go","start_line":1,"end_line":2}`, "empty subject name"},
		{"ProseScenario", `{"kind":"runtime_flow","subject":{"kind":"symbol","name":"A"},"scenario":"app --version, when the user asks","steps":[{"path":"a.go","start_line":1,"end_line":2,"summary":"x"}]}`, ""},
		{"MultilineSummary", `{"kind":"runtime_flow","subject":{"kind":"symbol","name":"A"},"scenario":"default","steps":[{"path":"a.go","start_line":1,"end_line":2,"summary":"a\nb"}]}`, ""},
		{"LongSummary", `{"kind":"runtime_flow","subject":{"kind":"symbol","name":"A"},"scenario":` + jsonText(long) + `,"steps":[{"path":"a.go","start_line":1,"end_line":2,"summary":` + jsonText(long) + `}]}`, ""},
		{"LongCommand", `{"kind":"focused_tests","subject":{"kind":"symbol","name":"A"},"tests":[{"path":"a_test.go","name":" TestA ","command":` + jsonText(long) + `}]}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := decodeProposal([]byte(tt.src))
			if err != nil {
				t.Fatalf("refused for shape: %v", err)
			}
			if got := strings.Join(p.problems, "; "); (tt.problem == "") != (got == "") || !strings.Contains(got, tt.problem) {
				t.Errorf("problems %q, want one holding %q", got, tt.problem)
			}
			if p.Kind == capRuntimeFlow {
				if len(p.Scenario) > maxScenarioBytes || strings.ContainsAny(p.Scenario, "\n\r") || len(p.Steps[0].Summary) > maxSummaryBytes || strings.Contains(p.Steps[0].Summary, "\n") {
					t.Errorf("free text not made one bounded line: %q / %q", p.Scenario, p.Steps[0].Summary)
				}
			}
			if p.Kind == capFocusedTests && tt.problem == "" && (p.Tests[0].Name != "TestA" || len(p.Tests[0].Command) > maxCommandBytes) {
				t.Errorf("test %+v", p.Tests[0])
			}
		})
	}
}

func TestProposalSchema(t *testing.T) {
	for _, k := range allCapabilities {
		data, err := proposalSchema(k)
		if err != nil {
			t.Fatal(err)
		}
		var schema map[string]any
		if err := json.Unmarshal(data, &schema); err != nil {
			t.Fatal(err)
		}
		checkStrict(t, string(k), schema)
	}
}

// checkStrict asserts the strict-mode rules at every object level: every
// property required and no additional properties.
func checkStrict(t *testing.T, path string, s map[string]any) {
	t.Helper()
	if s["type"] == "object" {
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		if s["additionalProperties"] != false || len(req) != len(props) {
			t.Errorf("%s: not strict: %v required of %d properties, additionalProperties %v", path, len(req), len(props), s["additionalProperties"])
		}
		for name, p := range props {
			checkStrict(t, path+"."+name, p.(map[string]any))
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		checkStrict(t, path+"[]", items)
	}
}

// FuzzDecodeProposal feeds arbitrary bytes to the proposal decoder, the
// parser of what workers (models) write. It must never panic and fail only
// with typed invalid input; what it accepts must re-encode and decode to the
// same proposal.
func FuzzDecodeProposal(f *testing.F) {
	for _, s := range []string{locNewSearcher, locCRLF, flowCRLF, testsCRLF, `{"kind":"runtime_flow"}`, `[]`,
		`{"kind":"focused_tests","subject":{"kind":"symbol","name":"A"},"tests":[{"path":"./a_test.go","name":"TestA/sub case"}]}`,
		`{"kind":"implementation_location","subject":{"kind":"symbol","name":"A"},"path":"a//./b/../c.go","start_line":1,"end_line":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decodeProposal(data)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := decodeProposal(again)
		if err != nil || mustID("t", q) != mustID("t", p) {
			t.Fatalf("round trip of %q via %s: %v", data, again, err)
		}
		var paths []string
		switch p.Kind {
		case capImplementationLocation:
			paths = append(paths, p.Path)
		case capRuntimeFlow:
			for _, s := range p.Steps {
				paths = append(paths, s.Path)
			}
		case capFocusedTests:
			for _, tr := range p.Tests {
				paths = append(paths, tr.Path)
				if strings.IndexFunc(tr.Name, unsafeRune) >= 0 || !utf8.ValidString(tr.Name) {
					t.Fatalf("test name %q accepted from %q", tr.Name, data)
				}
			}
		}
		for _, q := range paths {
			// Accepted paths are clean, relative and inside the repository,
			// and carry nothing that could change how a line reads.
			if path.Clean(q) != q || q == "." || q == ".." || strings.HasPrefix(q, "../") || strings.HasPrefix(q, "/") ||
				strings.ContainsAny(q, "\\\x00") || strings.IndexFunc(q, unsafeRune) >= 0 {
				t.Fatalf("path %q accepted from %q", q, data)
			}
		}
	})
}
