package pydecl

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// run runs the script with python on src, as the validators do but
// outside the sandbox (the script is this package's; what runs it in the
// sandbox is product's concern), and parses its output.
func run(tb testing.TB, python string, src []byte) *File {
	tb.Helper()
	argv := Argv(python)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(src)
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s: %v", python, err)
	}
	f, err := Parse(out, bytes.Count(src, []byte("\n"))+1)
	if err != nil {
		tb.Fatalf("%v\n%s", err, out)
	}
	return f
}

// TestDecls_Click reads every module of click (Debian's python3-click,
// pinned) with the script and checks each class, function and method
// Python's runtime locates against it: the same qualified name, from the
// first decorator to the last line, trailing comments of the block
// included (Tail).
func TestDecls_Click(t *testing.T) {
	python := testenv.Python3(t)
	site := testenv.PythonPackageDir(testenv.Unpacked(t, testenv.PythonClick))
	files, err := filepath.Glob(filepath.Join(site, "click", "*.py"))
	if err != nil || len(files) < 10 {
		t.Fatalf("click's modules: %v %v", files, err)
	}
	want := testenv.InspectDecls(t, python, site, files)
	if len(want) < 200 {
		t.Fatalf("inspect located %d declarations in click, want hundreds", len(want))
	}
	parsed := map[string]*File{}
	sources := map[string][]string{}
	for _, w := range want {
		f := parsed[w.File]
		if f == nil {
			src, err := os.ReadFile(w.File)
			if err != nil {
				t.Fatal(err)
			}
			f = run(t, python, src)
			if f.SyntaxError != nil {
				t.Fatalf("%s: %+v", w.File, f.SyntaxError)
			}
			parsed[w.File], sources[w.File] = f, strings.Split(string(src), "\n")
		}
		found := false
		for _, d := range f.Lookup(w.Name) {
			found = found || d.Kind != KindVariable && d.First == w.Start && d.Tail(sources[w.File]) == w.End
		}
		if !found {
			t.Errorf("%s: %s at %d-%d: the script has %+v", filepath.Base(w.File), w.Name, w.Start, w.End, f.Lookup(w.Name))
		}
	}
	t.Logf("%d declarations of %d modules agree with inspect", len(want), len(parsed))
}

// TestDecls_Forms covers what the runtime oracle cannot see: variables,
// nested functions, definitions under try and if, async defs, and a
// syntax error.
func TestDecls_Forms(t *testing.T) {
	python := testenv.Python3(t)
	src := []byte(`import functools

X, (Y, *Z) = 1, (2, 3)


class C(Base, metaclass=M):
    """doc"""
    a: int = 2

    @property
    def p(self):
        return 1

    @p.setter
    def p(self, v):
        pass

    def __init__(self):
        def inner():
            y = 1
        pass
        # a comment the block ends with

@functools.wraps(f)
async def g():
    pass

try:
    import x
except ImportError:
    def h():
        pass

if TYPE_CHECKING:
    T = int
`)
	lines := strings.Split(string(src), "\n")
	f := run(t, python, src)
	want := map[string]Decl{
		"X":                {Name: "X", Kind: KindVariable, Line: 3, First: 3, End: 3},
		"Y":                {Name: "Y", Kind: KindVariable, Line: 3, First: 3, End: 3},
		"Z":                {Name: "Z", Kind: KindVariable, Line: 3, First: 3, End: 3},
		"C":                {Name: "C", Kind: KindClass, Line: 6, First: 6, End: 21, Decorators: nil, Bases: []string{"Base"}},
		"C.a":              {Name: "C.a", Kind: KindVariable, Line: 8, First: 8, End: 8},
		"C.__init__":       {Name: "C.__init__", Kind: KindMethod, Line: 18, First: 18, End: 21},
		"C.__init__.inner": {Name: "C.__init__.inner", Kind: KindFunction, Line: 19, First: 19, End: 20},
		"g":                {Name: "g", Kind: KindFunction, Line: 25, First: 24, End: 26, Decorators: []string{"functools.wraps"}},
		"h":                {Name: "h", Kind: KindFunction, Line: 31, First: 31, End: 32},
		"T":                {Name: "T", Kind: KindVariable, Line: 35, First: 35, End: 35},
	}
	for name, w := range want {
		got := f.Lookup(name)
		if len(got) != 1 || got[0].Kind != w.Kind || got[0].Line != w.Line || got[0].First != w.First || got[0].End != w.End ||
			strings.Join(got[0].Decorators, ",") != strings.Join(w.Decorators, ",") || strings.Join(got[0].Bases, ",") != strings.Join(w.Bases, ",") {
			t.Errorf("%s = %+v, want %+v", name, got, w)
		}
	}
	if ps := f.Lookup("C.p"); len(ps) != 2 || ps[0].First != 10 || ps[1].First != 14 || ps[1].Decorators[0] != "p.setter" {
		t.Errorf("the property's getter and setter: %+v", ps)
	}
	for name, tail := range map[string]int{"C": 22, "C.__init__": 22, "C.__init__.inner": 20, "h": 32, "X": 3} {
		if got := f.Lookup(name)[0].Tail(lines); got != tail {
			t.Errorf("%s's block with its trailing comments ends at %d, want %d", name, got, tail)
		}
	}
	if got := f.Lookup("C.__init__.inner.y"); len(got) != 0 {
		t.Errorf("a function's local is a declaration: %+v", got)
	}

	bad := run(t, python, []byte("def f(:\n    pass\n"))
	if bad.SyntaxError == nil || bad.SyntaxError.Line != 1 || len(bad.Decls) != 0 {
		t.Errorf("a syntax error: %+v", bad)
	}
}

// TestParse_Refuses output no run of the script prints.
func TestParse_Refuses(t *testing.T) {
	for name, out := range map[string]string{
		"not json":          `{`,
		"two values":        `{"python":"3.11.2","decls":[]} {}`,
		"a stray bracket":   `{"python":"3.11.2","decls":[]}]`,
		"unknown field":     `{"python":"3.11.2","decls":[],"x":1}`,
		"bad version":       `{"python":"3.11","decls":[]}`,
		"bad name":          `{"python":"3.11.2","decls":[{"name":"a..b","kind":"class","line":1,"first":1,"end":1}]}`,
		"bad kind":          `{"python":"3.11.2","decls":[{"name":"a","kind":"module","line":1,"first":1,"end":1}]}`,
		"past the end":      `{"python":"3.11.2","decls":[{"name":"a","kind":"class","line":1,"first":1,"end":9}]}`,
		"first after def":   `{"python":"3.11.2","decls":[{"name":"a","kind":"class","line":1,"first":2,"end":2}]}`,
		"variable bases":    `{"python":"3.11.2","decls":[{"name":"a","kind":"variable","line":1,"first":1,"end":1,"bases":["B"]}]}`,
		"bad decorator":     `{"python":"3.11.2","decls":[{"name":"a","kind":"function","line":2,"first":1,"end":2,"decorators":["a b"]}]}`,
		"error and decls":   `{"python":"3.11.2","decls":[{"name":"a","kind":"class","line":1,"first":1,"end":1}],"syntax_error":{"line":1,"msg":"x"}}`,
		"body before def":   `{"python":"3.11.2","decls":[{"name":"f","kind":"function","line":2,"first":2,"end":3,"body":1}]}`,
		"class body":        `{"python":"3.11.2","decls":[{"name":"C","kind":"class","line":1,"first":1,"end":3,"body":2}]}`,
		"error and options": `{"python":"3.11.2","decls":[],"options":[{"kind":"env","names":["X"],"api":"os","line":1,"start":1,"end":1,"outer":[1,1]}],"syntax_error":{"line":1,"msg":"x"}}`,
		"option kind":       `{"python":"3.11.2","decls":[],"options":[{"kind":"arg","names":["--x"],"api":"argparse","line":1,"start":1,"end":1,"outer":[1,1]}]}`,
		"option API":        `{"python":"3.11.2","decls":[],"options":[{"kind":"flag","names":["--x"],"api":"docopt","line":1,"start":1,"end":1,"outer":[1,1]}]}`,
		"no names":          `{"python":"3.11.2","decls":[],"options":[{"kind":"flag","names":[],"api":"argparse","line":1,"start":1,"end":1,"outer":[1,1]}]}`,
		"a flag without -":  `{"python":"3.11.2","decls":[],"options":[{"kind":"flag","names":["x"],"api":"argparse","line":1,"start":1,"end":1,"outer":[1,1]}]}`,
		"dashes only":       `{"python":"3.11.2","decls":[],"options":[{"kind":"flag","names":["--"],"api":"argparse","line":1,"start":1,"end":1,"outer":[1,1]}]}`,
		"a blank in a name": `{"python":"3.11.2","decls":[],"options":[{"kind":"env","names":["A B"],"api":"os","line":1,"start":1,"end":1,"outer":[1,1]}]}`,
		"two variables":     `{"python":"3.11.2","decls":[],"options":[{"kind":"env","names":["A","B"],"api":"os","line":1,"start":1,"end":1,"outer":[1,1]}]}`,
		"name outside call": `{"python":"3.11.2","decls":[],"options":[{"kind":"flag","names":["--x"],"api":"click","line":3,"start":1,"end":2,"outer":[1,3]}]}`,
		"call outside":      `{"python":"3.11.2","decls":[],"options":[{"kind":"flag","names":["--x"],"api":"click","line":2,"start":1,"end":3,"outer":[2,3]}]}`,
		"option past end":   `{"python":"3.11.2","decls":[],"options":[{"kind":"flag","names":["--x"],"api":"click","line":2,"start":1,"end":2,"outer":[1,4]}]}`,
		"bad feeding flag":  `{"python":"3.11.2","decls":[],"options":[{"kind":"env","names":["X"],"api":"click","line":1,"start":1,"end":1,"outer":[1,1],"flags":["x"]}]}`,
	} {
		if _, err := Parse([]byte(out), 3); !errors.Is(err, ErrOutput) {
			t.Errorf("%s: err = %v, want ErrOutput", name, err)
		}
	}
}

// FuzzParse: Parse never panics, refuses with ErrOutput, and whatever it
// accepts lies within the source.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"python":"3.11.2","decls":[{"name":"C.m","kind":"method","line":2,"first":1,"end":3,"decorators":["property"]}]}`), 3)
	f.Add([]byte(`{"python":"3.11.2","decls":[],"syntax_error":{"line":1,"msg":"invalid syntax"}}`), 1)
	f.Add([]byte(`{"python":"3.11.2","decls":[],"options":[{"kind":"flag","names":["--x","-x"],"api":"click","line":2,"start":1,"end":3,"outer":[1,3]},{"kind":"env","names":["X"],"api":"typer","line":2,"start":2,"end":2,"outer":[1,3],"flags":["--x"]}]}`), 3)
	f.Fuzz(func(t *testing.T, out []byte, lines int) {
		file, err := Parse(out, lines)
		if err != nil {
			if !errors.Is(err, ErrOutput) {
				t.Fatalf("err %v is not ErrOutput", err)
			}
			return
		}
		for _, d := range file.Decls {
			if d.First < 1 || d.End > lines || d.First > d.Line || d.Line > d.End || d.Body != 0 && (d.Body < d.Line || d.Body > d.End) {
				t.Fatalf("accepted %+v for %d lines", d, lines)
			}
		}
		for _, o := range file.Options {
			if o.Outer[0] < 1 || o.Outer[1] > lines || o.Start < o.Outer[0] || o.End > o.Outer[1] || o.Line < o.Start || o.Line > o.End || len(o.Names) == 0 {
				t.Fatalf("accepted %+v for %d lines", o, lines)
			}
			for _, n := range o.Names {
				if strings.ContainsAny(n, " \t\n") || o.Kind == OptionFlag && !strings.HasPrefix(n, "-") {
					t.Fatalf("accepted the name %q of %+v", n, o)
				}
			}
		}
	})
}
