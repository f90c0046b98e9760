package product

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/needle-dev/needle/product/internal/contentid"
)

// MustReadFile returns the content of a file under the repository root.
func MustReadFile(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile("../" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// MustCompileJSON compiles src with every route enabled.
func MustCompileJSON(tb testing.TB, src string) CompiledNeed {
	tb.Helper()
	need, err := CompileJSON([]byte(src), AllRoutes())
	if err != nil {
		tb.Fatalf("CompileJSON(%s): %v", src, err)
	}
	return need
}

func TestCompile_SeedExample(t *testing.T) {
	need, err := CompileJSON(MustReadFile(t, "fixtures/need-context.json"), AllRoutes())
	if err != nil {
		t.Fatal(err)
	}
	want := NeedIR{
		Route:   RouteTraceStateFlow,
		Subject: Subject{Kind: SubjectCLIOption, Name: "--crlf"},
		Obligations: []Obligation{
			{Kind: CapImplementationLocation, Strength: StrengthRequired, Facets: Facets{Polarity: "positive", Selection: "primary"}},
			{Kind: CapRuntimeFlow, Strength: StrengthRequired, Facets: Facets{Scenario: "default", Completeness: "contract_complete", Granularity: "stepwise"}},
			{Kind: CapFocusedTests, Strength: StrengthPreferred, Facets: Facets{Polarity: "positive", Selection: "representative", Completeness: "open_world"}},
		},
		World: World{Source: "current", Platform: "current"},
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
		want []Obligation
	}{
		{"LocateAddsPrimaryLocation", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Run"}}`,
			[]Obligation{{Kind: CapImplementationLocation, Strength: StrengthRequired, Facets: Facets{Selection: "primary"}}}},
		{"TraceAddsLocationAndDefaultFlow", `{"route":"trace.state-flow","subject":{"kind":"symbol","name":"Run"}}`,
			[]Obligation{
				{Kind: CapImplementationLocation, Strength: StrengthRequired, Facets: Facets{Selection: "primary"}},
				{Kind: CapRuntimeFlow, Strength: StrengthRequired, Facets: Facets{Scenario: "default"}}}},
		{"TestsAddsRepresentative", `{"route":"tests.relevant","subject":{"kind":"symbol","name":"Run"}}`,
			[]Obligation{{Kind: CapFocusedTests, Strength: StrengthRequired, Facets: Facets{Selection: "representative"}}}},
		{"StrongerSelectionKept", `{"route":"tests.relevant","subject":{"kind":"symbol","name":"Run"},"required":[{"kind":"focused_tests","selection":"exhaustive"}]}`,
			[]Obligation{{Kind: CapFocusedTests, Strength: StrengthRequired, Facets: Facets{Selection: "exhaustive"}}}},
		{"WeakerSelectionRaised", `{"route":"tests.relevant","subject":{"kind":"symbol","name":"Run"},"required":[{"kind":"focused_tests","selection":"primary"}]}`,
			[]Obligation{{Kind: CapFocusedTests, Strength: StrengthRequired, Facets: Facets{Selection: "representative"}}}},
		{"PreferredPromoted", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Run"},"preferred":[{"kind":"implementation_location","polarity":"negative"}]}`,
			[]Obligation{{Kind: CapImplementationLocation, Strength: StrengthRequired, Facets: Facets{Polarity: "negative", Selection: "primary"}}}},
		{"OtherPreferredKept", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"Run"},"preferred":[{"kind":"focused_tests"}]}`,
			[]Obligation{
				{Kind: CapImplementationLocation, Strength: StrengthRequired, Facets: Facets{Selection: "primary"}},
				{Kind: CapFocusedTests, Strength: StrengthPreferred}}},
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

// invalidCases holds one request per class of invalid input, with the JSON
// path its error must name. Testscripts cover the same classes end to end.
var invalidCases = []struct {
	name, src, path, msg string
}{
	{"ErrEmpty", ``, "$", "empty request"},
	{"ErrNotObject", `["route"]`, "$", "want an object, got array"},
	{"ErrMalformed", `{"route":`, "route", "unexpected end of input"},
	{"ErrBadSyntax", `{"route" "x"}`, "route", "malformed JSON at byte 9"},
	{"ErrTrailingData", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"}} {}`, "$", "trailing data"},
	{"ErrTrailingGarbage", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"}}x`, "$", "trailing data"},
	{"ErrInvalidUTF8", "{\"route\":\"\xff\"}", "$", "not valid UTF-8"},
	{"ErrTooDeep", `{"task":[[[[[[[[["x"]]]]]]]]]}`, "task[0][0][0][0][0][0][0]", "nesting deeper than 8"},
	{"ErrUnknownField", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"colour":"red"}`, "colour", `unknown field "colour"`},
	{"ErrUnknownSubjectField", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A","lang":"go"}}`, "subject.lang", "unknown field"},
	{"ErrUnknownObligationField", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location","depth":"3"}]}`, "required[0].depth", "unknown field"},
	{"ErrUnknownWorldField", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"os":"linux"}}`, "world.os", "unknown field"},
	{"ErrDuplicateKey", `{"route":"locate.implementation","route":"tests.relevant","subject":{"kind":"symbol","name":"A"}}`, "route", `duplicate key "route"`},
	{"ErrDuplicateNestedKey", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A","name":"B"}}`, "subject.name", "duplicate key"},
	{"ErrDuplicateFacetKey", `{"route":"trace.state-flow","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"runtime_flow","granularity":"summary","granularity":"stepwise"}]}`, "required[0].granularity", "duplicate key"},
	{"ErrMissingRoute", `{"subject":{"kind":"symbol","name":"A"}}`, "route", "missing required field"},
	{"ErrMissingSubject", `{"route":"locate.implementation"}`, "subject", "missing required field"},
	{"ErrMissingSubjectName", `{"route":"locate.implementation","subject":{"kind":"symbol"}}`, "subject.name", "missing required field"},
	{"ErrMissingObligationKind", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"selection":"primary"}]}`, "required[0].kind", "missing required field"},
	{"ErrDuplicateCapability", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location"},{"kind":"implementation_location"}]}`, "required[1].kind", "duplicate capability kind"},
	{"ErrRequiredAndPreferred", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"focused_tests"}],"preferred":[{"kind":"focused_tests"}]}`, "preferred[0].kind", "both required and preferred"},
	{"ErrFacetNotTaken", `{"route":"trace.state-flow","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location"},{"kind":"runtime_flow","selection":"primary"}]}`, "required[1].selection", "runtime_flow does not take facet selection"},
	{"ErrUnknownRoute", `{"route":"explain.everything","subject":{"kind":"symbol","name":"A"}}`, "route", `unknown route "explain.everything"`},
	{"ErrUnknownSubjectKind", `{"route":"locate.implementation","subject":{"kind":"class","name":"A"}}`, "subject.kind", "unknown subject kind"},
	{"ErrUnknownCapability", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"call_graph"}]}`, "required[0].kind", "unknown capability kind"},
	{"ErrUnknownPolarity", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location","polarity":"neutral"}]}`, "required[0].polarity", "unknown polarity"},
	{"ErrUnknownSelection", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location","selection":"some"}]}`, "required[0].selection", "unknown selection"},
	{"ErrUnknownCompleteness", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"preferred":[{"kind":"focused_tests","completeness":"full"}]}`, "preferred[0].completeness", "unknown completeness"},
	{"ErrUnknownGranularity", `{"route":"trace.state-flow","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location"},{"kind":"runtime_flow","granularity":"fine"}]}`, "required[1].granularity", "unknown granularity"},
	{"ErrBadScenario", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"preferred":[{"kind":"runtime_flow","scenario":"Start Up"}]}`, "preferred[0].scenario", "scenario name"},
	{"ErrScenarioConflictsWithRoute", `{"route":"trace.state-flow","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"runtime_flow","scenario":"startup"}]}`, "required[0].scenario", "requires runtime_flow scenario=default"},
	{"ErrDisabledRoute", `{"route":"tests.relevant","subject":{"kind":"symbol","name":"A"}}`, "route", "is not enabled"},
	{"ErrMalformedDigest", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"source":"b3:ABC"}}`, "world.source", "malformed snapshot digest"},
	{"ErrUppercaseDigest", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"source":"b3:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}`, "world.source", "malformed snapshot digest"},
	{"ErrEmptySubject", `{"route":"locate.implementation","subject":{"kind":"symbol","name":""}}`, "subject.name", "empty subject name"},
	{"ErrBlankSubject", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"   "}}`, "subject.name", "empty subject name"},
	{"ErrPaddedSubject", `{"route":"locate.implementation","subject":{"kind":"symbol","name":" Run"}}`, "subject.name", "leading or trailing white space"},
	{"ErrControlInSubject", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A\u0007B"}}`, "subject.name", "control character"},
	{"ErrOversizedSubject", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"` + strings.Repeat("a", MaxSubjectNameBytes+1) + `"}}`, "subject.name", "the limit is 256"},
	{"ErrTooManyObligations", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location"},{"kind":"runtime_flow"},{"kind":"focused_tests"},{"kind":"focused_tests"}]}`, "required", "too many obligations"},
	{"ErrTooManyObligationsInAll", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location"}],"preferred":[{"kind":"focused_tests"},{"kind":"runtime_flow"},{"kind":"runtime_flow"}]}`, "preferred", "too many obligations"},
	{"ErrOversizedTask", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"task":"` + strings.Repeat("t", MaxTaskBytes+1) + `"}`, "task", "the limit is 4096"},
	{"ErrControlInTask", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"task":"a\u001bb"}`, "task", "control character"},
	{"ErrOversizedRequest", `{"task":"` + strings.Repeat("t", MaxRequestBytes) + `"}`, "$", "the limit is 65536"},
	{"ErrRouteType", `{"route":7,"subject":{"kind":"symbol","name":"A"}}`, "route", "want a string, got number"},
	{"ErrSubjectType", `{"route":"locate.implementation","subject":"A"}`, "subject", "want an object, got string"},
	{"ErrRequiredType", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":{"kind":"implementation_location"}}`, "required", "want an array, got object"},
	{"ErrObligationType", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":["implementation_location"]}`, "required[0]", "want an object, got string"},
	{"ErrFacetType", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location","selection":true}]}`, "required[0].selection", "want a string, got boolean"},
	{"ErrNullField", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"preferred":null}`, "preferred", "want an array, got null"},
	{"ErrFeaturesType", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"features":3}}`, "world.features", "want \"default\" or an array"},
	{"ErrFeaturesWord", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"features":"all"}}`, "world.features", "want \"default\" or a sorted list"},
	{"ErrFeaturesUnsorted", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"features":["b","a"]}}`, "world.features[1]", "sorted and unique"},
	{"ErrFeaturesDuplicate", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"features":["a","a"]}}`, "world.features[1]", "sorted and unique"},
	{"ErrFeaturesEmpty", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"features":[]}}`, "world.features", "empty feature list"},
	{"ErrFeatureDefaultInList", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"features":["default"]}}`, "world.features[0]", "not a feature name"},
	{"ErrTooManyFeatures", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"features":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}}`, "world.features", "the limit is 16"},
	{"ErrBadPlatform", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"platform":"Linux AMD64"}}`, "world.platform", "platform name"},
	{"ErrEmptyPlatform", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"world":{"platform":""}}`, "world.platform", "empty string"},
}

func TestCompileJSON_Invalid(t *testing.T) {
	routes := RouteSet{RouteLocateImplementation, RouteTraceStateFlow}
	for _, tt := range invalidCases {
		t.Run(tt.name, func(t *testing.T) {
			need, err := CompileJSON([]byte(tt.src), routes)
			if err == nil {
				t.Fatalf("accepted invalid input; IR %+v", need.IR)
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindInvalidInput {
				t.Fatalf("error %v is not a KindInvalidInput *Error", err)
			}
			if e.Path != tt.path {
				t.Errorf("path %q, want %q (error: %v)", e.Path, tt.path, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
		})
	}
}

func TestNeedRequest_MarshalJSON(t *testing.T) {
	src := MustReadFile(t, "fixtures/need-context.json")
	req, err := DecodeNeedRequest(src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeNeedRequest(out)
	if err != nil {
		t.Fatalf("re-decoding %s: %v", out, err)
	}
	if diff := cmp.Diff(req, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDefinitionID(t *testing.T) {
	id := DefinitionID()
	if !strings.HasPrefix(id, "b3:") || len(id) != 67 {
		t.Fatalf("definition id %q", id)
	}
	if id != DefinitionID() {
		t.Fatal("definition id is not stable")
	}
	saved := routeMinimums[RouteTestsRelevant][0].Facets.Selection
	t.Cleanup(func() { routeMinimums[RouteTestsRelevant][0].Facets.Selection = saved })
	routeMinimums[RouteTestsRelevant][0].Facets.Selection = "exhaustive"
	changed := MustCanonicalID(t, tagDefinition, Definition())
	if changed == id {
		t.Error("changing a route minimum did not change the definition id")
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
