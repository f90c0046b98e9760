package appserver

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/needle-dev/needle/product/internal/ndjson"
)

func TestDecodeMessage(t *testing.T) {
	tests := []struct {
		line string
		want msgKind
	}{
		{`{"id":0,"result":{}}`, kindResponse},
		{`{"id":3,"result":null}`, kindResponse},
		{`{"error":{"code":-32600,"message":"x"},"id":3}`, kindResponse},
		{`{"method":"item/fileChange/requestApproval","id":1,"params":{}}`, kindRequest},
		{`{"method":"x","id":"abc"}`, kindRequest},
		{`{"method":"turn/started","params":{},"emittedAtMs":1795979522133}`, kindNotification},
		{`{"id":null,"error":{"code":-32700,"message":"parse"}}`, kindInvalid},
		{`{"id":4}`, kindInvalid},
		{`[1,2]`, kindInvalid},
	}
	for _, tt := range tests {
		if _, got, _ := decodeMessage([]byte(tt.line)); got != tt.want {
			t.Errorf("decodeMessage(%s) kind = %d, want %d", tt.line, got, tt.want)
		}
	}
}

func TestOutMsg_JSON(t *testing.T) {
	tests := []struct {
		msg  outMsg
		want string
	}{
		{outMsg{Method: "initialized"}, `{"method":"initialized"}`},
		{outMsg{Method: "thread/start", ID: json.RawMessage("1"), Params: ThreadStartParams{Cwd: "/w", Sandbox: "read-only"}},
			`{"method":"thread/start","id":1,"params":{"cwd":"/w","sandbox":"read-only"}}`},
		{outMsg{ID: json.RawMessage(`"s-1"`), Result: map[string]string{"decision": "accept"}}, `{"id":"s-1","result":{"decision":"accept"}}`},
		{outMsg{ID: json.RawMessage("0"), Error: &RPCError{Code: -32601, Message: "m"}}, `{"id":0,"error":{"code":-32601,"message":"m"}}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.msg)
		if err != nil || string(got) != tt.want {
			t.Errorf("Marshal = %s, %v; want %s", got, err, tt.want)
		}
	}
}

func TestParams_JSON(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"TextInput", TextInput("hi"), `{"type":"text","text":"hi","text_elements":[]}`},
		{"UserInputNilElements", UserInput{Type: "text", Text: "x"}, `{"type":"text","text":"x","text_elements":[]}`},
		{"ThreadNotEphemeral", ThreadStartParams{Model: "m"}, `{"model":"m"}`},
		{"ThreadEphemeral", ThreadStartParams{Ephemeral: true}, `{"ephemeral":true}`},
		{"TurnMinimal", TurnStartParams{ThreadID: "t", Input: []UserInput{TextInput("x")}},
			`{"threadId":"t","input":[{"type":"text","text":"x","text_elements":[]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil || string(got) != tt.want {
				t.Errorf("Marshal = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestThreadState_Advance(t *testing.T) {
	th := &threadState{}
	totals := []int64{100, 100, 250, 250, 40, 90}
	var sum int64
	for _, n := range totals {
		if d, ok := th.advance(Usage{TotalTokens: n, InputTokens: n}); ok {
			sum += d.TotalTokens
		}
	}
	// 100 + 150, the repeats add nothing, 40 is a new baseline, then +50.
	if sum != 300 {
		t.Errorf("sum of deltas = %d, want 300", sum)
	}
}

func TestProcessEnv(t *testing.T) {
	tests := []struct {
		name string
		spec ProcSpec
		want []string
	}{
		{"Empty", ProcSpec{}, []string{}}, // not nil: nil would inherit our environment
		{"HomeAppended", ProcSpec{Env: []string{"PATH=/bin"}, CodexHome: "/h"}, []string{"PATH=/bin", "CODEX_HOME=/h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := processEnv(tt.spec)
			if got == nil || !cmp.Equal(tt.want, got) {
				t.Errorf("processEnv = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestCappedWriter(t *testing.T) {
	var buf bytes.Buffer
	w := ndjson.NewCapped(&buf, 5, stderrNote)
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := buf.String(); !strings.HasPrefix(got, "abcde\n[appserver: stderr truncated]") || strings.Contains(got, "fg") {
		t.Errorf("capped output = %q", got)
	}
}

// FuzzReadLine checks the client's reading of arbitrary server output: the
// line reader never returns a line over the limit, the lines it returns are
// exactly the input's, and decoding them never panics.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"id\":0,\"result\":{}}\n{\"method\":\"x\"}\n"), 8)
	f.Add([]byte("no newline"), 64)
	f.Add([]byte("\n\n\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit = 1 + abs(limit)%128
		r := ndjson.NewReader(bytes.NewReader(data), limit)
		var rebuilt []byte
		for {
			line, err := r.Next()
			if err != nil {
				break
			}
			if len(line) > limit {
				t.Fatalf("line of %d bytes over limit %d", len(line), limit)
			}
			_, _, _ = decodeMessage(line)
			rebuilt = append(append(rebuilt, line...), '\n')
		}
		if !bytes.HasPrefix(append(bytes.Clone(data), '\n'), rebuilt) {
			t.Fatalf("lines %q are not a prefix of the input %q", rebuilt, data)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
