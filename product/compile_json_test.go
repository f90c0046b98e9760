package product

import (
	"errors"
	"strings"
	"testing"
)

// FuzzCompileJSON feeds arbitrary bytes to the JSON need compiler. It must
// never panic; it must fail only with a KindInvalidInput *Error that names a
// path; and whatever it accepts must survive a round trip through the
// request's own JSON encoding and through the marker grammar with the same
// need_id.
func FuzzCompileJSON(f *testing.F) {
	f.Add(MustReadFile(f, "../fixtures/need-context.json"))
	for _, tt := range invalidCases {
		f.Add([]byte(tt.src))
	}
	f.Add([]byte(`{"route":"tests.relevant","subject":{"kind":"test","name":"TestX"},"world":{"features":["a","b"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeNeedRequest(data)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		checkTwins(t, req, string(data))
	})
}

// checkTwins checks what a decoder accepted: it compiles or fails with
// typed invalid input, and a request that compiles has a JSON twin and a
// canonical marker twin with its need_id and task.
func checkTwins(t *testing.T, req NeedRequest, input string) {
	t.Helper()
	need, err := Compile(req, AllRoutes())
	if err != nil {
		checkInvalid(t, err)
		return
	}
	data, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	twin, err := compileJSON(data, AllRoutes())
	if err != nil || twin.ID != need.ID || twin.Task != need.Task {
		t.Fatalf("JSON twin %s of %q: %s / %v, want %s", data, input, twin.ID, err, need.ID)
	}
	line, err := FormatMarker(req)
	if err != nil {
		t.Fatalf("FormatMarker of an accepted request: %v", err)
	}
	viaMarker, err := compileMarker(line, AllRoutes())
	if err != nil || viaMarker.ID != need.ID || viaMarker.Task != need.Task {
		t.Fatalf("marker twin %q of %q: %s / %v, want %s", line, input, viaMarker.ID, err, need.ID)
	}
}

func checkInvalid(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindInvalidInput || e.Path == "" {
		t.Fatalf("error %v is not a KindInvalidInput *Error with a path", err)
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
	{"ErrOversizedSubject", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"` + strings.Repeat("a", maxSubjectNameChars+1) + `"}}`, "subject.name", "the limit is 256"},
	{"ErrTooManyObligations", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location"},{"kind":"runtime_flow"},{"kind":"focused_tests"},{"kind":"focused_tests"}]}`, "required", "too many obligations"},
	{"ErrTooManyObligationsInAll", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"required":[{"kind":"implementation_location"}],"preferred":[{"kind":"focused_tests"},{"kind":"runtime_flow"},{"kind":"runtime_flow"}]}`, "preferred", "too many obligations"},
	{"ErrOversizedTask", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"task":"` + strings.Repeat("t", maxTaskChars+1) + `"}`, "task", "the limit is 4096"},
	{"ErrControlInTask", `{"route":"locate.implementation","subject":{"kind":"symbol","name":"A"},"task":"a\u001bb"}`, "task", "control character"},
	{"ErrOversizedRequest", `{"task":"` + strings.Repeat("t", maxRequestBytes) + `"}`, "$", "the limit is 65536"},
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
	routes := routeSet{routeLocateImplementation, routeTraceStateFlow}
	for _, tt := range invalidCases {
		t.Run(tt.name, func(t *testing.T) {
			need, err := compileJSON([]byte(tt.src), routes)
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
