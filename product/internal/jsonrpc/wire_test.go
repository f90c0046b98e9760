package jsonrpc

import (
	"errors"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readAll drains a lineReader, writing "!" for an over-long line.
func readAll(t *testing.T, r io.Reader, max int) []string {
	t.Helper()
	lr := newLineReader(r, max)
	var got []string
	for {
		line, err := lr.next()
		switch {
		case errors.Is(err, errTooLong):
			got = append(got, "!")
		case errors.Is(err, io.EOF):
			return got
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, string(line))
		}
	}
}

func TestLineReader_Next(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"OK", "a\nbb\n\nccc\n", []string{"a", "bb", "", "ccc"}},
		{"FinalLineWithoutNewline", "a\nbb", []string{"a", "bb"}},
		{"ExactlyMax", "abcd\nabcde\nab\n", []string{"abcd", "!", "ab"}},
		{"TooLongAtEOF", "ab\nabcdefgh", []string{"ab", "!"}},
		{"CRKept", "ab\r\n", []string{"ab\r"}},
		{"Empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				if diff := cmp.Diff(tc.want, readAll(t, r, 4)); diff != "" {
					t.Fatalf("lines (-want +got):\n%s", diff)
				}
			}
		})
	}
	t.Run("LongerThanBuffer", func(t *testing.T) {
		in := strings.Repeat("x", 200<<10) + "\n" + strings.Repeat("y", 100<<10)
		got := readAll(t, strings.NewReader(in), 150<<10)
		if len(got) != 2 || got[0] != "!" || got[1] != strings.Repeat("y", 100<<10) {
			t.Fatalf("got %d lines", len(got))
		}
	})
}

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
// standard library, so it can never depend on product (tests may use go-cmp).
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
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s: a leaf uses the standard library only", name, path)
			}
		}
	}
}
