package product

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// MustCompileJSON compiles src with every route enabled.
func MustCompileJSON(tb testing.TB, src string) compiledNeed {
	tb.Helper()
	need, err := compileJSON([]byte(src), AllRoutes())
	if err != nil {
		tb.Fatalf("CompileJSON(%s): %v", src, err)
	}
	return need
}

func TestCompile_SeedExample(t *testing.T) {
	need, err := compileJSON(MustReadFile(t, "../fixtures/need-context.json"), AllRoutes())
	if err != nil {
		t.Fatal(err)
	}
	want := needIR{
		Route:   routeTraceStateFlow,
		Subject: Subject{Kind: subjectCLIOption, Name: "--crlf"},
		Obligations: []obligation{
			{Kind: capImplementationLocation, Strength: StrengthRequired, Facets: facets{Polarity: "positive", Selection: "primary"}},
			{Kind: capRuntimeFlow, Strength: StrengthRequired, Facets: facets{Scenario: "default", Completeness: "contract_complete", Granularity: "stepwise"}},
			{Kind: capFocusedTests, Strength: strengthPreferred, Facets: facets{Polarity: "positive", Selection: "representative", Completeness: "open_world"}},
		},
		World: world{Source: "current", Platform: "current"},
	}
	if diff := cmp.Diff(want, need.IR); diff != "" {
		t.Errorf("IR (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(need.ID, "b3:") || len(need.ID) != 67 {
		t.Errorf("need_id %q is not b3:<64 hex>", need.ID)
	}
	if need.Task != "Trace how --crlf changes matching and search line terminators." {
		t.Errorf("task %q not carried", need.Task)
	}
	if need.DefinitionID != DefinitionID() {
		t.Errorf("definition id %q, want %q", need.DefinitionID, DefinitionID())
	}
}

func TestCompile_Identity(t *testing.T) {
	base := MustCompileJSON(t, `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},
		"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},
		            {"kind":"runtime_flow","scenario":"default","granularity":"stepwise"}],
		"task":"Trace --crlf."}`)
	same := map[string]string{
		"ReorderedKeys": `{"task":"Trace --crlf.","required":[{"selection":"primary","kind":"implementation_location","polarity":"positive"},
			{"granularity":"stepwise","scenario":"default","kind":"runtime_flow"}],"subject":{"name":"--crlf","kind":"cli_option"},"route":"trace.state-flow"}`,
		"ReorderedObligations": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},
			"required":[{"kind":"runtime_flow","scenario":"default","granularity":"stepwise"},
			{"kind":"implementation_location","polarity":"positive","selection":"primary"}],"task":"Trace --crlf."}`,
		"RewordedTask": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},
			"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},
			{"kind":"runtime_flow","scenario":"default","granularity":"stepwise"}],"task":"How does the --crlf flag flow?"}`,
		"NoTaskCompactWhitespace": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},{"kind":"runtime_flow","scenario":"default","granularity":"stepwise"}]}`,
		"ExplicitDefaultWorld": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},
			"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},
			{"kind":"runtime_flow","scenario":"default","granularity":"stepwise"}],
			"world":{"source":"current","platform":"current","features":"default"}}`,
		"MinimumsSpelledOut": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},
			"required":[{"kind":"implementation_location","polarity":"positive"},
			{"kind":"runtime_flow","granularity":"stepwise"}]}`,
	}
	for name, src := range same {
		t.Run(name, func(t *testing.T) {
			if got := MustCompileJSON(t, src).ID; got != base.ID {
				t.Errorf("need_id %s, want %s", got, base.ID)
			}
		})
	}
	different := map[string]string{
		"Facet": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},
			"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},
			{"kind":"runtime_flow","scenario":"default","granularity":"summary"}]}`,
		"SubjectName": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf2"},
			"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},
			{"kind":"runtime_flow","scenario":"default","granularity":"stepwise"}]}`,
		"SubjectKind": `{"route":"trace.state-flow","subject":{"kind":"configuration_key","name":"--crlf"},
			"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},
			{"kind":"runtime_flow","scenario":"default","granularity":"stepwise"}]}`,
		"Strength": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},
			"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},
			{"kind":"runtime_flow","scenario":"default","granularity":"stepwise"}],
			"preferred":[{"kind":"focused_tests"}]}`,
		"Platform": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},
			"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},
			{"kind":"runtime_flow","scenario":"default","granularity":"stepwise"}],"world":{"platform":"linux-amd64"}}`,
		"Source": `{"route":"trace.state-flow","subject":{"kind":"cli_option","name":"--crlf"},
			"required":[{"kind":"implementation_location","polarity":"positive","selection":"primary"},
			{"kind":"runtime_flow","scenario":"default","granularity":"stepwise"}],
			"world":{"source":"b3:0000000000000000000000000000000000000000000000000000000000000000"}}`,
	}
	for name, src := range different {
		t.Run("Differs"+name, func(t *testing.T) {
			if got := MustCompileJSON(t, src).ID; got == base.ID {
				t.Errorf("need_id unchanged by a change of meaning: %s", got)
			}
		})
	}
}

func TestCompile_UnicodeNormalization(t *testing.T) {
	composed := MustCompileJSON(t, `{"route":"locate.implementation","subject":{"kind":"behavior","name":"caf\u00e9 mode"}}`)
	decomposed := MustCompileJSON(t, `{"route":"locate.implementation","subject":{"kind":"behavior","name":"cafe\u0301 mode"}}`)
	if composed.ID != decomposed.ID {
		t.Errorf("NFC and NFD spellings of one name got different ids")
	}
	if decomposed.IR.Subject.Name != "caf\u00e9 mode" {
		t.Errorf("subject name %q not normalized to NFC", decomposed.IR.Subject.Name)
	}
}

func TestCompile_RouteMinimums(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []obligation
	}{
		{"LocateAddsPrimaryLocation", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Run"}}`,
			[]obligation{{Kind: capImplementationLocation, Strength: StrengthRequired, Facets: facets{Selection: "primary"}}}},
		{"TraceAddsLocationAndDefaultFlow", `{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Run"}}`,
			[]obligation{
				{Kind: capImplementationLocation, Strength: StrengthRequired, Facets: facets{Selection: "primary"}},
				{Kind: capRuntimeFlow, Strength: StrengthRequired, Facets: facets{Scenario: "default"}}}},
		{"TestsAddsRepresentative", `{"route":"tests.relevant","subject":{"kind":"symbol","name":"Run"}}`,
			[]obligation{{Kind: capFocusedTests, Strength: StrengthRequired, Facets: facets{Selection: "representative"}}}},
		{"StrongerSelectionKept", `{"route":"tests.relevant","subject":{"kind":"symbol","name":"Run"},"required":[{"kind":"focused_tests","selection":"exhaustive"}]}`,
			[]obligation{{Kind: capFocusedTests, Strength: StrengthRequired, Facets: facets{Selection: "exhaustive"}}}},
		{"WeakerSelectionRaised", `{"route":"tests.relevant","subject":{"kind":"symbol","name":"Run"},"required":[{"kind":"focused_tests","selection":"primary"}]}`,
			[]obligation{{Kind: capFocusedTests, Strength: StrengthRequired, Facets: facets{Selection: "representative"}}}},
		{"PreferredPromoted", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Run"},"preferred":[{"kind":"implementation_location","polarity":"negative"}]}`,
			[]obligation{{Kind: capImplementationLocation, Strength: StrengthRequired, Facets: facets{Polarity: "negative", Selection: "primary"}}}},
		{"OtherPreferredKept", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Run"},"preferred":[{"kind":"focused_tests"}]}`,
			[]obligation{
				{Kind: capImplementationLocation, Strength: StrengthRequired, Facets: facets{Selection: "primary"}},
				{Kind: capFocusedTests, Strength: strengthPreferred}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MustCompileJSON(t, tt.src).IR.Obligations
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("obligations (-want +got):\n%s", diff)
			}
		})
	}
}

// MustCanonicalID returns the content id of v under tag.
func MustCanonicalID(tb testing.TB, tag string, v any) string {
	tb.Helper()
	id, err := contentid.Of(tag, v)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// TestNeedIR_StoredRoundTrip: a stored needIR decodes to the IR it was.
func TestNeedIR_StoredRoundTrip(t *testing.T) {
	for _, src := range []string{string(MustReadFile(t, "../fixtures/need-context.json")),
		`{"route":"tests.relevant","subject":{"kind":"symbol","name":"A"},"world":{"features":["a","b"]}}`} {
		need, err := compileJSON([]byte(src), AllRoutes())
		if err != nil {
			t.Fatal(err)
		}
		var back needIR
		if err := json.Unmarshal([]byte(mustJSON(need.IR)), &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(need.IR, back); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
}
