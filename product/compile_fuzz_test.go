package product

import (
	"errors"
	"testing"
)

// FuzzCompileJSON feeds arbitrary bytes to the JSON need compiler. It must
// never panic; it must fail only with a KindInvalidInput *Error that names a
// path; and whatever it accepts must survive a round trip through the
// request's own JSON encoding and through the marker grammar with the same
// need_id.
func FuzzCompileJSON(f *testing.F) {
	f.Add(MustReadFile(f, "fixtures/need-context.json"))
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
		need, err := Compile(req, AllRoutes())
		if err != nil {
			checkInvalid(t, err)
			return
		}
		again, err := req.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		twin, err := CompileJSON(again, AllRoutes())
		if err != nil || twin.ID != need.ID {
			t.Fatalf("JSON round trip of %q: %s / %v, want %s", data, twin.ID, err, need.ID)
		}
		line, err := FormatMarker(req)
		if err != nil {
			t.Fatalf("FormatMarker of an accepted request: %v", err)
		}
		viaMarker, err := CompileMarker(line, AllRoutes())
		if err != nil || viaMarker.ID != need.ID || viaMarker.Task != need.Task {
			t.Fatalf("marker twin %q: %s / %v, want %s", line, viaMarker.ID, err, need.ID)
		}
	})
}

// FuzzParseMarker feeds arbitrary lines to the marker parser. It must never
// panic, fail only with typed invalid input, and whatever compiles must have
// a JSON twin with the same need_id and a canonical marker that reparses to
// the same request.
func FuzzParseMarker(f *testing.F) {
	f.Add(string(MustReadFile(f, "fixtures/need-context.marker")))
	f.Add("@@need locate.implementation symbol:Command.Run")
	f.Add(`@@need tests.relevant behavior:"line \"x\"\tendings" +focused_tests(selection=exhaustive) platform=linux-amd64 features=cgo,race task="t"`)
	f.Add("@@need trace.state-flow cli_option:--crlf +runtime_flow(scenario=startup) ?focused_tests source=b3:" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	f.Fuzz(func(t *testing.T, line string) {
		req, err := ParseMarker(line)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		need, err := Compile(req, AllRoutes())
		if err != nil {
			checkInvalid(t, err)
			return
		}
		data, err := req.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		twin, err := CompileJSON(data, AllRoutes())
		if err != nil || twin.ID != need.ID || twin.Task != need.Task {
			t.Fatalf("JSON twin %s of %q: %s / %v, want %s", data, line, twin.ID, err, need.ID)
		}
		canonical, err := FormatMarker(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := CompileMarker(canonical, AllRoutes())
		if err != nil || back.ID != need.ID {
			t.Fatalf("canonical marker %q of %q: %s / %v, want %s", canonical, line, back.ID, err, need.ID)
		}
	})
}

func checkInvalid(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindInvalidInput || e.Path == "" {
		t.Fatalf("error %v is not a KindInvalidInput *Error with a path", err)
	}
}
