package replay

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatcher_Value(t *testing.T) {
	declared := map[string]bool{"CWD": true, "HOME_DIR": true}
	for _, tc := range []struct {
		name      string
		exp, act  string
		bound     map[string]string
		ignore    []string
		wantErr   string // "" for a match
		wantFresh map[string]string
	}{
		{name: "Equal", exp: `{"a":[1,"x",null,true]}`, act: `{"a":[1,"x",null,true]}`},
		{name: "NumbersByValue", exp: `{"n":1}`, act: `{"n":1.0}`},
		{name: "BindWhole", exp: `{"cwd":"${CWD}"}`, act: `{"cwd":"/tmp/a"}`, wantFresh: map[string]string{"CWD": "/tmp/a"}},
		{name: "BindInside", exp: `{"p":"${CWD}/sub"}`, act: `{"p":"/tmp/a/sub"}`, wantFresh: map[string]string{"CWD": "/tmp/a"}},
		{name: "BindOnceUseTwice", exp: `{"a":"${CWD}","b":"${CWD}/x"}`, act: `{"a":"/c","b":"/c/x"}`, wantFresh: map[string]string{"CWD": "/c"}},
		{name: "BoundValueUsed", exp: `{"a":"${CWD}/x"}`, act: `{"a":"/c/x"}`, bound: map[string]string{"CWD": "/c"}},
		{name: "TwoPlaceholders", exp: `{"a":"${HOME_DIR}:${CWD}"}`, act: `{"a":"/h:/c"}`, wantFresh: map[string]string{"HOME_DIR": "/h", "CWD": "/c"}},
		{name: "UndeclaredIsLiteral", exp: `{"cmd":"echo ${HOME}"}`, act: `{"cmd":"echo ${HOME}"}`},
		{name: "IgnoreKey", exp: `{"clientInfo":{"name":"n","version":"1"}}`, act: `{"clientInfo":{"name":"n","version":"2"}}`, ignore: []string{"clientInfo.version"}},
		{name: "IgnoreMissingKey", exp: `{"clientInfo":{"version":"1"}}`, act: `{"clientInfo":{}}`, ignore: []string{"clientInfo.version"}},
		{name: "IgnoreThroughArray", exp: `{"input":[{"t":"a","x":1}]}`, act: `{"input":[{"t":"a","x":2}]}`, ignore: []string{"input.x"}},
		{name: "ErrBoundDiffers", exp: `{"a":"${CWD}"}`, act: `{"a":"/d"}`, bound: map[string]string{"CWD": "/c"}, wantErr: `a: expected "${CWD}", got "/d"`},
		{name: "ErrSecondUseDiffers", exp: `{"a":"${CWD}","b":"${CWD}"}`, act: `{"a":"/c","b":"/d"}`, wantErr: `b: expected "${CWD}", got "/d"`},
		{name: "ErrEmptyBinding", exp: `{"a":"${CWD}"}`, act: `{"a":""}`, wantErr: `a: expected "${CWD}", got ""`},
		{name: "ErrPlaceholderNotString", exp: `{"a":"${CWD}"}`, act: `{"a":1}`, wantErr: `a: expected "${CWD}", got 1`},
		{name: "ErrMissingKey", exp: `{"a":null}`, act: `{}`, wantErr: `a: missing (expected null)`},
		{name: "ErrExtraKey", exp: `{}`, act: `{"b":1}`, wantErr: `b: unexpected key (value 1)`},
		{name: "ErrArrayLength", exp: `{"a":[1]}`, act: `{"a":[1,2]}`, wantErr: `a: expected [1], got [1,2]`},
		{name: "ErrArrayElement", exp: `{"a":[{"b":1}]}`, act: `{"a":[{"b":2}]}`, wantErr: `a[0].b: expected 1, got 2`},
		{name: "ErrType", exp: `{"a":"1"}`, act: `{"a":1}`, wantErr: `a: expected "1", got 1`},
		{name: "ErrNumber", exp: `{"a":1}`, act: `{"a":2}`, wantErr: `a: expected 1, got 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var exp, act any
			if err := decode(json.RawMessage(tc.exp), &exp); err != nil {
				t.Fatal(err)
			}
			if err := decode(json.RawMessage(tc.act), &act); err != nil {
				t.Fatal(err)
			}
			m := &matcher{declared: declared, ignore: map[string]bool{}, bound: tc.bound, fresh: map[string]string{}}
			for _, k := range tc.ignore {
				m.ignore[k] = true
			}
			err := m.value(exp, act, "", "")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected mismatch: %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if tc.wantErr == "" {
				if diff := cmp.Diff(tc.wantFresh, m.fresh, cmpEmpty); diff != "" {
					t.Errorf("bindings (-want +got):\n%s", diff)
				}
			}
		})
	}
}

var cmpEmpty = cmp.FilterValues(func(a, b map[string]string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestCandidate_ExpectLeavesNoTraceOnMismatch(t *testing.T) {
	tr := MustTranscript(t, "evidence")
	c := newCandidate(tr, nil)
	c.pos = 3 // thread/start
	bad, err := parseMessage([]byte(`{"method":"thread/start","id":7,"params":{"cwd":"/c","sandbox":"x","approvalPolicy":"never","ephemeral":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.expect(bad); err == nil {
		t.Fatal("mismatch not detected")
	}
	if len(c.binds) != 0 || len(c.ids) != 0 || c.pos != 3 {
		t.Fatalf("failed match changed state: binds %v ids %v pos %d", c.binds, c.ids, c.pos)
	}
}

func TestCandidate_RenderKeepsOrderAndRemaps(t *testing.T) {
	tr := MustTranscript(t, "evidence")
	c := newCandidate(tr, map[string]string{"CODEX_HOME": `/h "quoted"`})
	c.ids[idKey(json.RawMessage(`0`))] = json.RawMessage(`"a-0"`)
	c.pos = 1 // initialize response
	got, err := c.render()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"a-0","result":{"userAgent":"needle/0.171.0 (Debian 12.0.0; x86_64) xterm (needle; 0.0.1)","codexHome":"/h \"quoted\"","platformFamily":"unix","platformOs":"linux"}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
