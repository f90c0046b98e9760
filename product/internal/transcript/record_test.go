package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFreeze(t *testing.T) {
	const (
		cwd  = "/tmp/run1/checkout"
		home = "/tmp/run1/checkout/.codex-home" // nested inside CWD on purpose
	)
	binds := map[string]string{"CWD": cwd, "CODEX_HOME": home}
	t.Run("OK", func(t *testing.T) {
		lines := []Line{
			{Dir: ClientToServer, Msg: json.RawMessage(`{"method": "thread/start", "id": 1, "params": {"cwd": "/tmp/run1/checkout", "n": 2}}`)},
			{Dir: ServerToClient, Msg: json.RawMessage(`{"id":1,"result":{"codexHome":"/tmp/run1/checkout/.codex-home","path":"\/tmp\/run1\/checkout\/a<b>.txt","roots":["/tmp/run1/checkout"]}}`)},
		}
		tr, err := Freeze(Header{Scenario: "s", CodexVersion: "0.171.0"}, lines, binds)
		if err != nil {
			t.Fatal(err)
		}
		want := []Line{
			{Dir: ClientToServer, Msg: json.RawMessage(`{"method": "thread/start", "id": 1, "params": {"cwd": "${CWD}", "n": 2}}`)},
			{Dir: ServerToClient, Msg: json.RawMessage(`{"id":1,"result":{"codexHome":"${CODEX_HOME}","path":"${CWD}/a<b>.txt","roots":["${CWD}"]}}`)},
		}
		if diff := cmp.Diff(want, tr.Lines); diff != "" {
			t.Errorf("lines (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"CODEX_HOME", "CWD"}, tr.Header.Placeholders); diff != "" {
			t.Errorf("placeholders (-want +got):\n%s", diff)
		}
		if tr.Header.Kind != "header" || tr.Header.Format != Format {
			t.Errorf("header not completed: %+v", tr.Header)
		}
		if string(lines[0].Msg) != `{"method": "thread/start", "id": 1, "params": {"cwd": "/tmp/run1/checkout", "n": 2}}` {
			t.Error("Freeze modified its input")
		}
		var buf bytes.Buffer
		if err := tr.Write(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(&buf); err != nil {
			t.Fatalf("frozen transcript does not read back: %v", err)
		}
	})
	for _, tc := range []struct {
		name  string
		msg   string
		binds map[string]string
		line  int
	}{
		{"ErrEmptyValue", `{"method":"a"}`, map[string]string{"CWD": ""}, 0},
		{"ErrBadName", `{"method":"a"}`, map[string]string{"cwd": "/x"}, 0},
		{"ErrSameValue", `{"method":"a"}`, map[string]string{"A": "/x", "B": "/x"}, 0},
		{"ErrValueInKey", `{"method":"a","params":{"/tmp/run1/checkout":1}}`, binds, 2},
		{"ErrBadLine", `{"params":{}}`, binds, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := []Line{{Dir: ClientToServer, Msg: json.RawMessage(tc.msg)}}
			_, err := Freeze(Header{}, lines, tc.binds)
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			if tc.line != 0 && (!errors.As(err, &e) || e.Line != tc.line) {
				t.Errorf("err = %v, want *Error at line %d", err, tc.line)
			}
		})
	}
	t.Run("ErrValueInNumber", func(t *testing.T) {
		lines := []Line{{Dir: ClientToServer, Msg: json.RawMessage(`{"method":"a","params":{"port":40123}}`)}}
		if _, err := Freeze(Header{}, lines, map[string]string{"PORT": "40123"}); err == nil {
			t.Fatal("a bound value left in a number was not reported")
		}
	})
}

func TestMapStrings(t *testing.T) {
	in := `{"a" : "x\"y", "x\"y": ["x\"y", 1, null, {"k":"\u0078\"y"}]}`
	got, err := MapStrings(json.RawMessage(in), func(s string) string {
		if s == `x"y` {
			return "<&>"
		}
		return s
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a" : "<&>", "x\"y": ["<&>", 1, null, {"k":"<&>"}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := MapStrings(json.RawMessage(`{"a":`), func(s string) string { return s }); err == nil {
		t.Error("no error for invalid JSON")
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder()
	buf := []byte(`{"method":"initialized"}` + "\n")
	r.Record(ClientToServer, buf)
	buf[2] = 'X' // the recorder must have copied
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { r.Record(ServerToClient, []byte(`{"id":0,"result":{}}`)) })
	}
	wg.Wait()
	lines := r.Lines()
	if len(lines) != 9 {
		t.Fatalf("%d lines, want 9", len(lines))
	}
	if got := string(lines[0].Msg); got != `{"method":"initialized"}` {
		t.Errorf("first msg = %q", got)
	}
	lines[0].Msg[2] = 'Y'
	if got := string(r.Lines()[0].Msg); got != `{"method":"initialized"}` {
		t.Errorf("Lines shares memory with the recorder: %q", got)
	}
	tr, err := Freeze(Header{Scenario: "rec"}, lines[1:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Lines) != 8 || tr.Header.Placeholders == nil {
		t.Errorf("frozen %+v", tr.Header)
	}
}
