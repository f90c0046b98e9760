package product

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fuzz targets of the MCP layer (issue 12 items 14-16): the params
// decoders of initialize and tools/call, and whole sessions.

// FuzzMCPParams holds the params rule of initialize and tools/call to an
// oracle written against encoding/json, not against jsonrpc.DecodeParams:
// what is accepted is an object whose member names are distinct (at every
// level but inside a tool's arguments, which the tool decodes), whose
// members Needle reads are the exactly-named ones with the values Needle
// uses — so a gateway that reads "name" and "protocolVersion" sees what
// Needle runs.
func FuzzMCPParams(f *testing.F) {
	for _, s := range []string{
		`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"n","version":"1"}}`,
		`{"protocolVersion":"2024-11-05","PROTOCOLVERSION":"2025-06-18"}`,
		`{"protocolVersion":"a","protocolVersion":"b"}`,
		`{"name":"need_context","arguments":{"route":"locate.implementation"}}`,
		`{"name":"need_context","NAME":"prepare_change","arguments":{}}`,
		`{"name":"nope","name":"need_context"}`,
		`{"name":"need_context","argumentſ":{}}`,
		`{"name":"need_context","arguments":{"a":1,"a":2},"_meta":{"b":1,"b":2}}`,
		`{"name":"\ud800"}`, `[]`, `null`, `{"name":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		params := data
		if len(params) == 0 {
			params = []byte("{}") // absent params are an empty object
		}
		if p, err := decodeInitializeParams(data); err == nil {
			top := oracleMembers(t, params, "")
			var want string
			if json.Unmarshal(top["protocolVersion"], &want) != nil || want != p.ProtocolVersion || want == "" {
				t.Fatalf("initialize %q: protocolVersion %q, the exact member says %s", data, p.ProtocolVersion, top["protocolVersion"])
			}
		}
		if p, err := decodeToolCallParams(data); err == nil {
			top := oracleMembers(t, params, "arguments")
			var name string
			if raw, ok := top["name"]; ok && (json.Unmarshal(raw, &name) != nil || raw[0] != '"') {
				t.Fatalf("tools/call %q: name %s is not a string", data, raw)
			}
			if name != p.Name {
				t.Fatalf("tools/call %q: Needle runs %q, the exact member \"name\" says %q", data, p.Name, name)
			}
			args, ok := top["arguments"]
			if !ok {
				args = json.RawMessage("{}")
			}
			if !jsonEqual(args, json.RawMessage(p.Arguments)) {
				t.Fatalf("tools/call %q: the tool gets arguments %s, the exact member says %s", data, p.Arguments, args)
			}
		}
	})
}

// oracleMembers checks, with encoding/json's token stream, that data is an
// object of valid UTF-8 whose names are distinct at every level (inside the
// member named raw too, unless raw is set), and returns its top-level
// members.
func oracleMembers(t *testing.T, data []byte, raw string) map[string]json.RawMessage {
	t.Helper()
	if !utf8.Valid(data) {
		t.Fatalf("accepted params that are not valid UTF-8: %q", data)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		t.Fatalf("accepted params that are not an object: %q (%v)", data, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token() // {
	seen := map[string]bool{}
	for dec.More() {
		tok, _ := dec.Token()
		name := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			t.Fatal(err)
		}
		if seen[name] {
			t.Fatalf("accepted params naming %q twice: %q", name, data)
		}
		seen[name] = true
		if name != raw && !namesDistinct(val) {
			t.Fatalf("accepted params whose member %q repeats a name inside: %q", name, data)
		}
	}
	return top
}

// namesDistinct reports whether every object in a JSON value has distinct
// member names.
func namesDistinct(v json.RawMessage) bool {
	dec := json.NewDecoder(bytes.NewReader(v))
	var stack []map[string]bool // nil for an array
	expectName := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, map[string]bool{})
			expectName = true
			continue
		case json.Delim('['):
			stack = append(stack, nil)
			expectName = false
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if s, ok := tok.(string); ok && expectName {
				top := stack[len(stack)-1]
				if top[s] {
					return false
				}
				top[s] = true
				expectName = false
				continue
			}
		}
		expectName = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}

// jsonEqual compares two JSON values by their compact form.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && x.String() == y.String()
}

// FuzzMCPSession feeds arbitrary bytes to a whole MCP session over a
// cache-only engine (one per fuzzing process, in a temporary directory: a
// session writes only its own rows). ServeMCP must return at EOF, never panic, and write only JSON-RPC
// responses, one per line, valid UTF-8, at most one per input line.
func FuzzMCPSession(f *testing.F) {
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}` + "\n"
	for _, s := range []string{
		init + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		init + `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"need_context","arguments":{"route":"locate.implementation","subject":{"kind":"symbol","name":"Open"}}}}`,
		init + `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"need_context","NAME":"x","arguments":{"route":"locate.implementation","subject":{"kind":"symbol","name":"Open"},"world":{"platform":"plan9-mips"}}}}`,
		`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18"}}` + "\n" + init,
		init + `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"prepare_change","arguments":{}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`,
		init + `{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":7.0,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":"a` + "\xff" + `","method":"ping"}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "repo"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "repo", "store.go"), []byte("package store\n\nfunc Open() {}\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	fuzzEngine, err := Open(context.Background(), Config{DataDir: filepath.Join(dir, "data"), Repository: filepath.Join(dir, "repo"), CacheOnly: true, Transport: "mcp"})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { fuzzEngine.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		cfg := MCPConfig{Engine: fuzzEngine, Repository: fuzzEngine.Root(), MainModel: "fuzz", CacheOnly: true, Log: io.Discard,
			Profile: ProfileRevision{ID: DefaultProfileID, Revision: 1, Profile: defaultProfile}}
		if err := ServeMCP(context.Background(), cfg, bytes.NewReader(data), &out); err != nil {
			t.Fatalf("ServeMCP: %v", err)
		}
		if !utf8.Valid(out.Bytes()) {
			t.Fatalf("output is not valid UTF-8: %q", out.Bytes())
		}
		lines := strings.Split(out.String(), "\n")
		if lines[len(lines)-1] != "" {
			t.Fatalf("unterminated output %q", lines[len(lines)-1])
		}
		lines = lines[:len(lines)-1]
		for _, l := range lines {
			var r struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil || r.JSONRPC != "2.0" || r.ID == nil {
				t.Fatalf("bad output line %q (%v)", l, err)
			}
		}
		if in := bytes.Count(data, []byte("\n")) + 1; len(lines) > in {
			t.Fatalf("%d replies to %d input lines", len(lines), in)
		}
	})
}
