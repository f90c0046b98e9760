package jsonrpc

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestIDKey(t *testing.T) {
	for _, tc := range []struct {
		raw, key string
		ok       bool
	}{
		{`"a"`, "sa", true},
		{`"\u0061"`, "sa", true},
		{`""`, "s", true},
		{`"\ud83d\ude00"`, "s\U0001F600", true},
		{`"\ud800"`, "", false}, // a lone surrogate is not Unicode
		{"\"a\xff\"", "", false},
		{`1`, "n1", true},
		{`1.0`, "n1", true},
		{`1e0`, "n1", true},
		{`10E-1`, "n1", true},
		{`-3`, "n-3", true},
		{`0`, "n0", true},
		{`-0`, "n0", true},
		{`-0.0e-5`, "n0", true},
		{`1e2`, "n100", true},
		{`9007199254740991`, "n9007199254740991", true},
		{`-9007199254740991`, "n-9007199254740991", true},
		{`9007199254740992`, "", false},
		{`9007199254740993`, "", false},
		{`90071992547409910e-1`, "n9007199254740991", true},
		{`7.5`, "", false},
		{`1e-1`, "", false},
		{`1e400`, "", false},
		{`1e99999999999999999999`, "", false},
		{`null`, "", false},
		{`true`, "", false},
		{`{}`, "", false},
		{`[]`, "", false},
		{``, "", false},
	} {
		key, ok := idKey([]byte(tc.raw))
		if key != tc.key || ok != tc.ok {
			t.Errorf("idKey(%s) = %q, %v; want %q, %v", tc.raw, key, ok, tc.key, tc.ok)
		}
	}
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		kind       msgKind
		code       int
		id         string // the id the reply carries; "" for none
	}{
		{"Request", `{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`, kindRequest, 0, "1"},
		{"Notification", `{"jsonrpc":"2.0","method":"m","params":[]}`, kindNotification, 0, ""},
		{"Response", `{"jsonrpc":"2.0","id":1,"result":null}`, kindResponse, 0, "1"},
		{"ErrorResponse", `{"id":"x","error":{}}`, kindResponse, 0, `"x"`},
		{"ResponseNullID", `{"jsonrpc":"2.0","id":null,"result":1}`, 0, CodeInvalidRequest, ""},
		{"Whitespace", "  {\"jsonrpc\" : \"2.0\", \"method\" : \"m\"}  ", kindNotification, 0, ""},
		{"Parse", `{`, 0, CodeParse, ""},
		{"Batch", ` [1]`, 0, CodeInvalidRequest, ""},
		{"MethodNull", `{"jsonrpc":"2.0","id":"m","method":null}`, 0, CodeInvalidRequest, `"m"`},
		{"MethodEscaped", `{"jsonrpc":"2.0","id":2,"method":"\u0070ing"}`, kindRequest, 0, "2"},
		{"DuplicateMethod", `{"jsonrpc":"2.0","id":4,"method":"ping","method":"tools/list"}`, 0, CodeInvalidRequest, "4"},
		{"DuplicateID", `{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}`, 0, CodeInvalidRequest, ""},
		{"DuplicateJSONRPC", `{"jsonrpc":"2.0","jsonrpc":"2.0","id":3,"method":"ping"}`, 0, CodeInvalidRequest, "3"},
		{"DuplicateParams", `{"jsonrpc":"2.0","method":"m","params":{},"params":[]}`, 0, CodeInvalidRequest, ""},
		{"DuplicateNestedIsTheMethods", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2}}`, kindRequest, 0, "1"},
		{"FoldedKeysAreOtherKeys", `{"jsonrpc":"2.0","id":1,"method":"m","METHOD":"x","Id":2}`, kindRequest, 0, "1"},
		{"InvalidUTF8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\xff\"}", 0, CodeParse, ""},
		{"LoneSurrogate", `{"jsonrpc":"2.0","id":1,"method":"m","params":["\udc00"]}`, 0, CodeParse, ""},
		{"InvalidIDString", `{"jsonrpc":"2.0","id":7.5,"method":"m"}`, 0, CodeInvalidRequest, ""},
		{"HugeID", `{"jsonrpc":"2.0","id":1e400,"method":"m"}`, 0, CodeInvalidRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, e := decode([]byte(tc.line))
			code := 0
			if e != nil {
				code = e.Code
			}
			if m.kind != tc.kind || code != tc.code || string(m.id) != tc.id {
				t.Fatalf("decode = kind %d code %d id %s, want kind %d code %d id %s", m.kind, code, m.id, tc.kind, tc.code, tc.id)
			}
		})
	}
}

// TestLeafImports holds the leaf rule: the package itself uses only the
// standard library, other leaves and the strict JSON text reader of the
// json/v2 experiment (the one decoder of the envelope and params), so it can
// never depend on product (tests may use go-cmp).
func TestLeafImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			leaf := strings.HasPrefix(path, "github.com/needle-dev/needle/product/internal/") ||
				strings.HasPrefix(path, "github.com/go-json-experiment/json")
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !leaf {
				t.Errorf("%s imports %s: a leaf uses the standard library and other leaves only", name, path)
			}
		}
	}
}

// TestResultLine: the line written for a result is the one marshal writes
// for the whole response (the oracle), for every id form the id rule
// admits and results with nesting, escapes, HTML characters and non-ASCII
// text.
func TestResultLine(t *testing.T) {
	results := []any{
		struct{}{},
		map[string]any{"content": []any{map[string]string{"type": "text", "text": "a <b> & \"c\"\n\u00e9\u2028"}}, "isError": false},
		[]int{1, 2, 3},
		"plain",
	}
	for _, id := range []string{`1`, `0`, `-7`, `9007199254740991`, `"a"`, `"\u0041\n"`, `"<&>"`, `null`} {
		for _, r := range results {
			raw, err := marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := marshal(response{JSONRPC: "2.0", ID: ID(id), Result: raw})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultLine(ID(id), raw); string(got) != string(want) {
				t.Errorf("id %s: resultLine\n%s\nwant\n%s", id, got, want)
			}
		}
	}
}

// BenchmarkRespond encodes an answer-sized result and its response line:
// "envelope" as respond did (the response struct around the encoded
// result, which encoding/json compacts a second time), "line" as it does.
func BenchmarkRespond(b *testing.B) {
	result := map[string]any{"content": []any{map[string]string{"type": "text",
		"text": strings.Repeat("implementation_location: search.go:15-17 [artifact b3:0123]\n", 40)}}}
	for _, envelope := range []bool{true, false} {
		b.Run(map[bool]string{true: "envelope", false: "line"}[envelope], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				raw, err := marshal(result)
				if err != nil {
					b.Fatal(err)
				}
				var line []byte
				if envelope {
					line, err = marshal(response{JSONRPC: "2.0", ID: ID(`12`), Result: raw})
				} else {
					line = resultLine(ID(`12`), raw)
				}
				if err != nil || len(line) == 0 {
					b.Fatal("no line", err)
				}
			}
		})
	}
}
