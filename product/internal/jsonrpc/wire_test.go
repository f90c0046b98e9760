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
		{`1`, "n1", true},
		{`1.0`, "n1.0", true},
		{`-3`, "n-3", true},
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
	}{
		{"Request", `{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`, kindRequest, 0},
		{"Notification", `{"jsonrpc":"2.0","method":"m","params":[]}`, kindNotification, 0},
		{"Response", `{"jsonrpc":"2.0","id":1,"result":null}`, kindResponse, 0},
		{"ErrorResponse", `{"id":"x","error":{}}`, kindResponse, 0},
		{"ResponseNullID", `{"jsonrpc":"2.0","id":null,"result":1}`, 0, CodeInvalidRequest},
		{"Whitespace", "  {\"jsonrpc\" : \"2.0\", \"method\" : \"m\"}  ", kindNotification, 0},
		{"Parse", `{`, 0, CodeParse},
		{"Batch", ` [1]`, 0, CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, e := decode([]byte(tc.line))
			code := 0
			if e != nil {
				code = e.Code
			}
			if m.kind != tc.kind || code != tc.code {
				t.Fatalf("decode = kind %d code %d, want kind %d code %d", m.kind, code, tc.kind, tc.code)
			}
		})
	}
}

// TestLeafImports holds the leaf rule: the package itself uses only the
// standard library and other leaves, so it can never depend on product
// (tests may use go-cmp).
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
			leaf := strings.HasPrefix(path, "github.com/needle-dev/needle/product/internal/")
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !leaf {
				t.Errorf("%s imports %s: a leaf uses the standard library and other leaves only", name, path)
			}
		}
	}
}
