package jsonrpc

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// fuzzMethods exercises every path of the dispatcher: init gating, a
// serialized method that only ends when cancelled (so EOF must cancel it for
// Serve to return), concurrent methods, typed and plain errors, panics and
// an unencodable result.
func fuzzMethods() map[string]Method {
	wait := func(ctx context.Context, _ Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	echo := func(_ context.Context, r Request) (any, error) { return r.Params, nil }
	return map[string]Method{
		"initialize": initMethod,
		"ping":       ping,
		"wait":       {Serialized: true, Handle: wait},
		"choosy":     {Serialized: true, Handle: choosy},
		"echo":       {Handle: echo},
		"serial":     {Serialized: true, Handle: echo},
		"typed": {Handle: func(_ context.Context, r Request) (any, error) {
			return nil, &Error{Code: CodeInvalidParams, Message: "bad", Data: r.Params}
		}},
		"plain":  {Handle: func(context.Context, Request) (any, error) { return nil, errors.New("x") }},
		"panic":  {BeforeInit: true, Handle: func(context.Context, Request) (any, error) { panic("fuzz") }},
		"badres": {Handle: func(context.Context, Request) (any, error) { return make(chan int), nil }},
	}
}

var fuzzSeeds = []string{
	"",
	"\n\n",
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"wait"}
{"jsonrpc":"2.0","id":3,"method":"wait"}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}
{"jsonrpc":"2.0","id":"p","method":"ping"}
{"jsonrpc":"2.0","id":"p","method":"ping"}
`,
	`{"jsonrpc":"2.0","id":1,"method":"wait"}` + "\n" + `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
	"not json\n{\"jsonrpc\":\"1.0\",\"id\":{},\"method\":7}\n" + strings.Repeat("z", 600) + "\n",
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"fail":true}}
{"jsonrpc":"2.0","id":2,"method":"initialize"}
{"jsonrpc":"2.0","id":3,"method":"typed","params":[1,"\u2028"]}
{"jsonrpc":"2.0","id":4,"method":"panic"}
{"jsonrpc":"2.0","id":5,"method":"badres"}
{"jsonrpc":"2.0","id":6,"method":"choosy"}
{"jsonrpc":"2.0","id":7,"method":"serial","params":{}}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}
{"jsonrpc":"2.0","id":1.0,"result":{}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\\u0061\",\"method\":\"echo\",\"params\":{\"a\":\"<\\n>\"}}\r\n",
}

// FuzzServe feeds arbitrary bytes to a whole session. Serve must return nil
// at EOF (so every handler was cancelled and finished), never panic, and
// write only well-formed JSON-RPC messages, one per line, at most one per
// input line.
func FuzzServe(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		srv := NewServer(fuzzMethods(), Options{MaxLine: 512, InitMethod: "initialize", CancelMethod: "notifications/cancelled"})
		var out lockedBuffer
		if err := srv.Serve(context.Background(), bytes.NewReader(data), &out); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if err := srv.Notify("late", nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("Notify after Serve: %v", err)
		}
		written := out.String()
		lines := strings.SplitAfter(written, "\n")
		if last := lines[len(lines)-1]; last != "" {
			t.Fatalf("unterminated output %q", last)
		}
		lines = lines[:len(lines)-1]
		for _, line := range lines {
			r, err := checkLine([]byte(line))
			if err != nil {
				t.Fatalf("bad output line %q: %v", line, err)
			}
			if r.Method != "" {
				t.Fatalf("unexpected notification %q", line)
			}
		}
		if in := bytes.Count(data, []byte("\n")) + 1; len(lines) > in {
			t.Fatalf("%d replies to %d input lines", len(lines), in)
		}
	})
}
