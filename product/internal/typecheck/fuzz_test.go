package typecheck

import (
	"io/fs"
	"path"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// mapSource is an in-memory Source.
type mapSource struct{ fsys fstest.MapFS }

func (m mapSource) ReadFile(rel string) ([]byte, string, error) {
	if err := checkRel(rel); err != nil {
		return nil, "", err
	}
	f, ok := m.fsys[rel]
	if !ok {
		return nil, "", &fs.PathError{Op: "open", Path: rel, Err: fs.ErrNotExist}
	}
	return f.Data, FileDigest(f.Data), nil
}

func (m mapSource) ReadDir(rel string) ([]fs.DirEntry, error) {
	return fs.ReadDir(m.fsys, rel)
}

func FuzzParseSubject(f *testing.F) {
	for _, s := range []string{"Name", "T.M", "(*T).M", "(T).M", "*T.M", "T[K].M", "T[K, V].M", "pkg.T.M", "pkg.Name", "T.M()", "(", "a.b.c.d", "T[.M", "]T[.M", "(*pkg.T).M", "é.ü", "pkg.(*T).M", "example.com/pkg.(*T).M", "func (t *T) M", "T.M(a int) error", "a/.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sub, err := ParseSubject(s)
		if err != nil {
			if KindOf(err) != KindSubject {
				t.Fatalf("error of kind %v", KindOf(err))
			}
			return
		}
		if sub.Name == "" || (sub.Qualifier != "" && sub.Type == "") {
			t.Fatalf("ParseSubject(%q) = %+v", s, sub)
		}
		// What it parsed to is itself a subject, and parses to itself.
		again, err := ParseSubject(sub.String())
		if err != nil || again.Type != sub.Type || again.Name != sub.Name {
			t.Fatalf("ParseSubject(%q) = %+v; of its String %+v, %v", s, sub, again, err)
		}
	})
}

func FuzzParseOption(f *testing.F) {
	for _, s := range []string{"--help", "-h", "h", "--out=x", "--a b", "-", "--", "---x", "--é", "$X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		on, ok := ParseOption(s)
		if !ok {
			return
		}
		if on.Long == "" || strings.ContainsAny(on.Long, "= \t") || strings.HasPrefix(on.Long, "-") {
			t.Fatalf("ParseOption(%q) = %+v", s, on)
		}
		if on.Short != "" && on.Short != on.Long {
			t.Fatalf("ParseOption(%q) = %+v: a short name is also the long name", s, on)
		}
	})
}

// FuzzLookup asks arbitrary subjects of a real package: an answer is a
// declaration of that name in the package, or a typed error; never a panic.
func FuzzLookup(f *testing.F) {
	for _, s := range []string{"Command.Flag", "IP", "List[T].Push", "Derived.Hello", "Reader.Read", "Alias.Verbose", "Remote.Call", "sym.IP", "x"} {
		f.Add(s)
	}
	prog := MustLoad(f, MustLoader(f, false), "symbols.txtar", "command.go")
	pkg := MustPackage(f, prog, "command.go")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := pkg.Lookup(s)
		if err != nil {
			if KindOf(err) == KindInternal {
				t.Fatalf("Lookup(%q): untyped error %v", s, err)
			}
			return
		}
		sub, _ := ParseSubject(s)
		if d.Object.Name() != sub.Name || d.Span.Start > d.Span.End || d.Doc.Start > d.Span.Start || d.Doc.End != d.Span.End {
			t.Fatalf("Lookup(%q) = %+v", s, d)
		}
	})
}

// FuzzBuildList reads arbitrary go.mod files: never a panic, and never a
// module directory outside the repository, whatever the replace directives
// say.
func FuzzBuildList(f *testing.F) {
	for _, s := range []string{
		"module m\n\ngo 1.22\n\nrequire x.org/a v1.0.0\n\nreplace x.org/a => ../a\n",
		"module m\ngo 1.15\nrequire x.org/a v1.0.0\nreplace x.org/a => ./sub/../../../etc\n",
		"module m\nreplace x.org/a v1.0.0 => /abs/path\nrequire x.org/a v1.0.0\n",
		"module m\nreplace x.org/a => ./vendored\nrequire x.org/a v1.2.3\n",
		"module m\nrequire (\n\tx.org/a v1.0.0\n\tx.org/b v2.0.0+incompatible\n)\n",
		"go 1.22\n",
		"module\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, gomod string) {
		src := mapSource{fstest.MapFS{
			"go.mod":          {Data: []byte(gomod)},
			"vendored/go.mod": {Data: []byte("module x.org/a\n")},
		}}
		bl, err := readBuildList(src, ".", "")
		if err != nil {
			if KindOf(err) != KindGoMod {
				t.Fatalf("error of kind %v: %v", KindOf(err), err)
			}
			return
		}
		for p, m := range bl.mods {
			if m.rel != "" && (m.rel == ".." || strings.HasPrefix(m.rel, "../") || path.IsAbs(m.rel)) {
				t.Fatalf("module %s at %q, outside the repository", p, m.rel)
			}
			if m.abs != "" {
				t.Fatalf("module %s in a module cache that was not given: %s", p, m.abs)
			}
			if m.rel == "" && m.missing == "" {
				t.Fatalf("module %s has no files and no reason", p)
			}
		}
	})
}

// FuzzStructTag: the tag readers never fail, and where reflect reads a key
// parseStructTag reads the same first value.
func FuzzStructTag(f *testing.F) {
	for _, s := range []string{`long:"verbose" short:"v"`, `arg required help:"x"`, `kong:"name='a',short='b'"`, `a:"\"" b:"\x"`, `arg:"-v,--verbose,env:X"`, `:"x"`, `a:"`, "DryRun", "TLSCACert"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tag := parseStructTag(s)
		for _, key := range append([]string{"name", "long", "short", "env", "arg", "help", "kong", "aliases"}, keys(tag)...) {
			if key == "" {
				t.Fatalf("parseStructTag(%q) has an empty key", s)
			}
			if v, ok := reflect.StructTag(s).Lookup(key); ok && (len(tag[key]) == 0 || tag[key][0] != v) {
				t.Fatalf("parseStructTag(%q)[%q] = %q; reflect reads %q", s, key, tag[key], v)
			}
		}
		spec := parseGoArg(s)
		if len([]rune(spec.short)) > 1 {
			t.Fatalf("parseGoArg(%q) short %q", s, spec.short)
		}
		if k := kebab(s); validIdent(s) && (k != strings.ToLower(k) || strings.Contains(k, "--") || strings.HasPrefix(k, "-") || strings.HasSuffix(k, "-")) {
			t.Fatalf("kebab(%q) = %q", s, k)
		}
	})
}

func keys(t structTag) []string {
	var out []string
	for k := range t {
		out = append(out, k)
	}
	return out
}

func validIdent(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') { // ASCII: ToLower is exact
			return false
		}
	}
	return s != ""
}
