package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// fuzzRecord is what the fuzzed session's handlers saw: every call, and
// the ids of the requests whose context the client cancelled.
type fuzzRecord struct {
	mu        sync.Mutex
	calls     []Request
	cancelled []ID
}

func (r *fuzzRecord) saw(ctx context.Context, req Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, req)
	if errors.Is(context.Cause(ctx), ErrCancelledByClient) {
		r.cancelled = append(r.cancelled, req.ID)
	}
}

// fuzzMethods exercises every path of the dispatcher: init gating, a
// serialized method that only ends when cancelled (so EOF must cancel it for
// Serve to return), concurrent methods, a notification method, typed and
// plain errors, panics and an unencodable result. Every handler reports to
// rec once it returns.
func fuzzMethods(rec *fuzzRecord) map[string]Method {
	wait := func(ctx context.Context, _ Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	echo := func(_ context.Context, r Request) (any, error) { return r.Params, nil }
	methods := map[string]Method{
		"initialize": initMethod,
		"ping":       ping,
		"wait":       {Serialized: true, Handle: wait},
		"choosy":     {Serialized: true, Handle: choosy},
		"echo":       {Handle: echo},
		"note":       {Handle: echo, Notification: true},
		"serial":     {Serialized: true, Handle: echo},
		"typed": {Handle: func(_ context.Context, r Request) (any, error) {
			return nil, &Error{Code: CodeInvalidParams, Message: "bad", Data: r.Params}
		}},
		"plain":  {Handle: func(context.Context, Request) (any, error) { return nil, errors.New("x") }},
		"panic":  {BeforeInit: true, Handle: func(context.Context, Request) (any, error) { panic("fuzz") }},
		"badres": {Handle: func(context.Context, Request) (any, error) { return make(chan int), nil }},
	}
	for name, m := range methods {
		h := m.Handle
		m.Handle = func(ctx context.Context, req Request) (any, error) {
			defer rec.saw(ctx, req) // after the handler, so the cause is final
			return h(ctx, req)
		}
		methods[name] = m
	}
	return methods
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
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6.0}}
{"jsonrpc":"2.0","id":1.0,"result":{}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\\u0061\",\"method\":\"echo\",\"params\":{\"a\":\"<\\n>\"}}\r\n",
	// Issue 12 items 14-16: requests as notifications, duplicate members,
	// folded keys and ids by value.
	`{"jsonrpc":"2.0","method":"initialize","params":{}}
{"jsonrpc":"2.0","id":"i","method":"initialize"}
{"jsonrpc":"2.0","method":"serial","params":{}}
{"jsonrpc":"2.0","id":9,"method":"note"}
{"jsonrpc":"2.0","method":"note","params":[1]}
{"jsonrpc":"2.0","id":4,"method":"ping","method":"echo"}
{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}
{"jsonrpc":"2.0","id":8,"METHOD":"echo","method":"ping"}
{"jsonrpc":"2.0","id":"m","method":null}
{"jsonrpc":"2.0","id":"a` + "\xff" + `","method":"ping"}
{"jsonrpc":"2.0","id":"\ud800","method":"ping"}
{"jsonrpc":"2.0","id":1e400,"method":"ping"}
{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}
{"jsonrpc":"2.0","id":7,"method":"ping"}
{"jsonrpc":"2.0","id":7.0,"method":"ping"}
{"jsonrpc":"2.0","id":-0,"method":"wait"}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}
`,
}

// FuzzServe feeds arbitrary bytes to a whole session. Serve must return nil
// at EOF (so every handler was cancelled and finished) and never panic. Its
// output must be only well-formed JSON-RPC responses, one per line, at most
// one per input line, all of it valid UTF-8, every id null or a valid id.
// Beyond the form, the oracle (written against encoding/json and math/big,
// not this package's decoder) holds the session rules of issue 12: a
// request the client cancelled is never answered (only a later line
// reusing its id may be refused, -32600); a request method is never run
// from a line without an id; and every call a handler saw has its method
// in some input line whose members are all distinct.
func FuzzServe(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := &fuzzRecord{}
		srv := NewServer(fuzzMethods(rec), Options{MaxLine: 512, InitMethod: "initialize", CancelMethod: "notifications/cancelled"})
		var out lockedBuffer
		if err := srv.Serve(context.Background(), bytes.NewReader(data), &out); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if err := srv.Notify("late", nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("Notify after Serve: %v", err)
		}
		written := out.String()
		if !utf8.ValidString(written) {
			t.Fatalf("output is not valid UTF-8: %q", written)
		}
		lines := strings.SplitAfter(written, "\n")
		if last := lines[len(lines)-1]; last != "" {
			t.Fatalf("unterminated output %q", last)
		}
		lines = lines[:len(lines)-1]
		cancelled := map[string]bool{}
		for _, id := range rec.cancelled {
			key, ok := oracleID(id)
			if !ok {
				t.Fatalf("a handler ran for the invalid id %s", id)
			}
			cancelled[key] = true
		}
		for _, line := range lines {
			r, err := checkLine([]byte(line))
			if err != nil {
				t.Fatalf("bad output line %q: %v", line, err)
			}
			if r.Method != "" {
				t.Fatalf("unexpected notification %q", line)
			}
			key, ok := oracleID(r.ID)
			if !ok && string(r.ID) != "null" {
				t.Fatalf("reply with an invalid id: %q", line)
			}
			if ok && cancelled[key] && (r.Error == nil || r.Error.Code != CodeInvalidRequest) {
				t.Fatalf("a request the client cancelled was answered: %q", line)
			}
		}
		if in := bytes.Count(data, []byte("\n")) + 1; len(lines) > in {
			t.Fatalf("%d replies to %d input lines", len(lines), in)
		}
		clean := distinctMemberMethods(data)
		for _, c := range rec.calls {
			if c.IsNotification && c.Method != "note" {
				t.Fatalf("request method %q ran from a line without an id", c.Method)
			}
			if !clean[c.Method] {
				t.Fatalf("%q ran, but no input line with distinct members names it", c.Method)
			}
		}
	})
}

// oracleID is the id rule, decided independently of idKey: a JSON string
// whose escapes are all valid Unicode (identity: its value), or a JSON
// number that math/big reads as an integer within ±(2^53-1) (identity:
// that integer).
func oracleID(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if !utf8.Valid(raw) || !surrogatesPaired(raw) || json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil || strings.ContainsAny(string(raw), "\"") {
		return "", false
	}
	if mant, exp, ok := strings.Cut(strings.ToLower(n.String()), "e"); ok {
		_ = mant
		if len(strings.TrimLeft(exp, "+-0")) > 4 { // |exp| ≥ 10^4: no valid id needs it here
			return "", false
		}
	}
	v, _, err := big.ParseFloat(n.String(), 10, 256, big.ToNearestEven)
	if err != nil || !v.IsInt() {
		return "", false
	}
	limit := new(big.Float).SetInt64(1<<53 - 1)
	if new(big.Float).Abs(v).Cmp(limit) > 0 {
		return "", false
	}
	i, _ := v.Int64()
	return "n" + big.NewInt(i).String(), true
}

// surrogatesPaired reports whether every \uXXXX escape of a JSON string
// that is a UTF-16 surrogate is half of a proper pair.
func surrogatesPaired(raw []byte) bool {
	s := string(raw)
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if i+1 < len(s) && s[i+1] != 'u' {
			i++ // a two-character escape
			continue
		}
		if i+6 > len(s) {
			return false
		}
		r := hexRune(s[i+2 : i+6])
		switch {
		case r >= 0xD800 && r < 0xDC00: // a high half: a low half must follow
			if i+12 > len(s) || s[i+6:i+8] != `\u` || utf16.DecodeRune(r, hexRune(s[i+8:i+12])) == utf8.RuneError {
				return false
			}
			i += 11
		case r >= 0xDC00 && r < 0xE000:
			return false
		default:
			i += 5
		}
	}
	return true
}

func hexRune(h string) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= c - '0'
		case c >= 'a' && c <= 'f':
			r |= c - 'a' + 10
		case c >= 'A' && c <= 'F':
			r |= c - 'A' + 10
		default:
			return -1
		}
	}
	return r
}

// distinctMemberMethods returns the method of every input line that
// encoding/json reads as one object whose top-level member names are all
// distinct (exactly, as decoded) and whose method is a string.
func distinctMemberMethods(data []byte) map[string]bool {
	out := map[string]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		dec := json.NewDecoder(bytes.NewReader(line))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			continue
		}
		seen := map[string]bool{}
		method, ok := "", true
		for ok && dec.More() {
			tok, err := dec.Token()
			name, isName := tok.(string)
			var val json.RawMessage
			if err != nil || !isName || seen[name] || dec.Decode(&val) != nil {
				ok = false
				break
			}
			seen[name] = true
			if name == "method" && json.Unmarshal(val, &method) != nil {
				ok = false
			}
		}
		if ok && seen["method"] {
			out[method] = true
		}
	}
	return out
}

// FuzzCancelParams holds the cancellation's params to the envelope's rule,
// against encoding/json and the independent id oracle: what is accepted is
// an object whose members are distinct at every level, whose exact
// "requestId" member is a valid id naming the same request, and whose
// "reason", if any, is a string.
func FuzzCancelParams(f *testing.F) {
	for _, s := range []string{`{"requestId":1}`, `{"requestId":"a","reason":"r"}`, `{"requestId":1,"requestId":2}`,
		`{"RequestId":1}`, `{"requestId":7.0,"_meta":{"a":1,"a":2}}`, `{"requestId":"\ud800"}`, `[1]`, `{"requestId":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		p, key, err := decodeCancelParams(params)
		if err != nil {
			return
		}
		if !distinctEverywhere(params) {
			t.Fatalf("accepted params with a repeated member: %q", params)
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(params, &members) != nil {
			t.Fatalf("accepted params that are not an object: %q", params)
		}
		want, ok := oracleID(members["requestId"])
		if !ok || want != key {
			t.Fatalf("requestId %s accepted as key %q; the oracle says %q, %v", members["requestId"], key, want, ok)
		}
		if r, has := members["reason"]; has {
			var s string
			if json.Unmarshal(r, &s) != nil || s != p.Reason {
				t.Fatalf("reason %s decoded as %q", r, p.Reason)
			}
		}
	})
}

// distinctEverywhere reports whether every object in a JSON text has
// distinct member names, by encoding/json's token stream.
func distinctEverywhere(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next string token is a member name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return true // io.EOF, or not JSON (the caller's concern)
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.key {
			if top.names[s] {
				return false
			}
			top.names[s] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true // a value ended: a name comes next
		}
	}
}
