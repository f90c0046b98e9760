package bench

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/needle-dev/needle/product"
)

// Ground truth, computed by the harness from the source with go/ast. It is
// deliberately independent of the product's validators: the numbers it
// backs (stale answers, the oracle) must not come from the code they judge.

// tree is a module version's source: slash path → content (.go files and
// go.mod).
type tree map[string][]byte

// span is a cited location and the exact text of its lines.
type span struct {
	Path       string
	Start, End int
	Text       string
}

func (s span) String() string { return fmt.Sprintf("%s:%d-%d", s.Path, s.Start, s.End) }

// lines returns lines start..end of src, or "" when out of range.
func lines(src []byte, start, end int) string {
	all := strings.Split(string(src), "\n")
	if start < 1 || end > len(all) || start > end {
		return ""
	}
	return strings.Join(all[start-1:end], "\n")
}

func skipFile(rel string) bool {
	return !strings.HasSuffix(rel, ".go") || slices.Contains(strings.Split(rel, "/"), "testdata") ||
		slices.ContainsFunc(strings.Split(rel, "/"), func(p string) bool { return strings.HasPrefix(p, "_") || strings.HasPrefix(p, ".") })
}

// parsed caches the parsed files of a tree.
type parsed struct {
	t     tree
	fset  *token.FileSet
	files map[string]*ast.File
}

func parseTree(t tree) *parsed {
	p := &parsed{t: t, fset: token.NewFileSet(), files: map[string]*ast.File{}}
	for rel, src := range t {
		if skipFile(rel) {
			continue
		}
		f, err := parser.ParseFile(p.fset, rel, src, parser.SkipObjectResolution)
		if err == nil {
			p.files[rel] = f
		}
	}
	return p
}

func (p *parsed) spanOf(rel string, n ast.Node) span {
	start, end := p.fset.Position(n.Pos()).Line, p.fset.Position(n.End()).Line
	return span{Path: rel, Start: start, End: end, Text: lines(p.t[rel], start, end)}
}

// funcName is "Name" or "Type.Method".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv != nil && len(fd.Recv.List) == 1 {
		return recvType(fd.Recv.List[0].Type) + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func recvType(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return "?"
		}
	}
}

// declarations returns the exported functions and methods of the non-test
// files declared exactly once in the tree (a name declared twice, for two
// build tags or two packages, would make a subject name two places), with
// their spans from the func keyword (or doc comment start is not included)
// to the closing brace.
func (p *parsed) declarations() map[string]span {
	count := map[string]int{}
	out := map[string]span{}
	for rel, f := range p.files {
		if strings.HasSuffix(rel, "_test.go") {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name := funcName(fd)
			count[name]++
			s := p.spanOf(rel, fd)
			if fd.Name.IsExported() && s.End-s.Start+1 <= product.MaxSpanLines {
				out[name] = s
			}
		}
	}
	for name := range out {
		if count[name] != 1 {
			delete(out, name)
		}
	}
	return out
}

// reachDepth is how many calls deep a test may reach its subject through
// functions of its own package: the documented contract of a focused test.
const reachDepth = 8

// testsReaching returns the Go tests (func TestX(t *testing.T) in _test.go
// files) whose body references ident, or that reach a body referencing it
// through at most reachDepth calls of functions and methods of their own
// package directory (a bare call f() reaches function f; a call x.f()
// reaches function f and every method f), sorted by path and name.
func (p *parsed) testsReaching(ident string) []span {
	byDir := map[string][]string{}
	for rel := range p.files {
		byDir[path.Dir(rel)] = append(byDir[path.Dir(rel)], rel)
	}
	var out []span
	for _, rels := range byDir {
		slices.Sort(rels)
		funcs := map[string][]*ast.FuncDecl{} // "Name" or "Type.Method"
		methods := map[string][]string{}      // method name → keys
		for _, rel := range rels {
			for _, d := range p.files[rel].Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				key := funcName(fd)
				if fd.Recv != nil && len(funcs[key]) == 0 {
					methods[fd.Name.Name] = append(methods[fd.Name.Name], key)
				}
				funcs[key] = append(funcs[key], fd)
			}
		}
		mentions := func(key string) bool {
			for _, fd := range funcs[key] {
				found := false
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && id.Name == ident {
						found = true
					}
					return !found
				})
				if found {
					return true
				}
			}
			return false
		}
		calls := func(key string) []string {
			var keys []string
			for _, fd := range funcs[key] {
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					fun := ast.Unparen(call.Fun)
					switch x := fun.(type) { // f[T](): the function is f
					case *ast.IndexExpr:
						fun = x.X
					case *ast.IndexListExpr:
						fun = x.X
					}
					switch f := fun.(type) {
					case *ast.Ident:
						if len(funcs[f.Name]) > 0 {
							keys = append(keys, f.Name)
						}
					case *ast.SelectorExpr:
						if len(funcs[f.Sel.Name]) > 0 {
							keys = append(keys, f.Sel.Name)
						}
						keys = append(keys, methods[f.Sel.Name]...)
					}
					return true
				})
			}
			return keys
		}
		reaches := func(start string) bool {
			depth := map[string]int{start: 0}
			queue := []string{start}
			for len(queue) > 0 {
				key := queue[0]
				queue = queue[1:]
				if mentions(key) {
					return true
				}
				if depth[key] >= reachDepth {
					continue
				}
				for _, next := range calls(key) {
					if _, seen := depth[next]; !seen {
						depth[next] = depth[key] + 1
						queue = append(queue, next)
					}
				}
			}
			return false
		}
		for _, rel := range rels {
			if !strings.HasSuffix(rel, "_test.go") {
				continue
			}
			for _, d := range p.files[rel].Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv != nil || !isTestFunc(fd) {
					continue
				}
				if reaches(fd.Name.Name) {
					out = append(out, p.spanOf(rel, fd))
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b span) int { return strings.Compare(a.Path+" "+testName(a), b.Path+" "+testName(b)) })
	return out
}

func isTestFunc(fd *ast.FuncDecl) bool {
	name := fd.Name.Name
	if !strings.HasPrefix(name, "Test") || name == "TestMain" || fd.Type.Params == nil || len(fd.Type.Params.List) != 1 {
		return false
	}
	star, ok := fd.Type.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "T" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "testing"
}

// testName is the name of the test whose span this is ("func TestX(").
func testName(s span) string {
	rest, ok := strings.CutPrefix(s.Text, "func ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "(")
	return name
}

// flagMethods are the flag-defining calls of package flag and pflag.
var flagMethods = map[string]bool{}

func init() {
	for _, t := range []string{"Bool", "String", "Int", "Int64", "Uint", "Uint64", "Float64", "Duration", "Func", "StringSlice"} {
		for _, v := range []string{t, t + "Var", t + "P", t + "VarP"} {
			flagMethods[v] = true
		}
	}
}

// flagLiterals returns the command-line flags defined in non-test files
// (flag.Bool("name", …), fs.StringVar(&v, "name", …)) that are defined
// exactly once, keyed by "-name", with the span of the defining call.
func (p *parsed) flagLiterals() map[string]span {
	count := map[string]int{}
	out := map[string]span{}
	for rel, f := range p.files {
		if strings.HasSuffix(rel, "_test.go") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !flagMethods[sel.Sel.Name] || len(call.Args) < 2 || !flagReceiver(sel.X) {
				return true
			}
			arg := call.Args[0]
			if strings.HasSuffix(sel.Sel.Name, "Var") || strings.HasSuffix(sel.Sel.Name, "VarP") {
				arg = call.Args[1]
			}
			lit, ok := arg.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			name, err := strconv.Unquote(lit.Value)
			if err != nil || name == "" || strings.ContainsAny(name, " \t\n\"") {
				return true
			}
			key := "-" + name
			count[key]++
			out[key] = p.spanOf(rel, call)
			return true
		})
	}
	for k := range out {
		if count[k] != 1 {
			delete(out, k)
		}
	}
	return out
}

// flagReceiver reports whether x is what flags are defined on: the flag or
// pflag package, a variable named like a flag set, or a call to Flags() /
// PersistentFlags() (cobra). Other String(...) calls (slog.String, …) are
// not flag definitions.
func flagReceiver(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		switch x.Name {
		case "flag", "pflag", "fs", "fset", "flags", "flagSet", "flagset", "cmdFlags":
			return true
		}
		return strings.HasSuffix(x.Name, "Flags") || strings.HasSuffix(x.Name, "FlagSet")
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
			return sel.Sel.Name == "Flags" || sel.Sel.Name == "PersistentFlags"
		}
	case *ast.SelectorExpr:
		return strings.HasSuffix(x.Sel.Name, "Flags") || strings.HasSuffix(x.Sel.Name, "FlagSet") || x.Sel.Name == "fs"
	}
	return false
}

// allTests returns every Go test of the tree, sorted by path and name.
func (p *parsed) allTests() []span {
	var out []span
	for rel, f := range p.files {
		if !strings.HasSuffix(rel, "_test.go") {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && isTestFunc(fd) {
				out = append(out, p.spanOf(rel, fd))
			}
		}
	}
	slices.SortFunc(out, func(a, b span) int { return strings.Compare(a.Path+" "+testName(a), b.Path+" "+testName(b)) })
	return out
}

// testingNames are the methods of testing.T and testing.B: a subject named
// like one of them is "reached", under the name-based contract, by every
// test that calls it on its *testing.T.
var testingNames = map[string]bool{}

func init() {
	for _, n := range []string{"Error", "Errorf", "Fail", "FailNow", "Failed", "Fatal", "Fatalf", "Helper", "Log", "Logf",
		"Name", "Parallel", "Run", "Setenv", "Skip", "SkipNow", "Skipf", "Skipped", "TempDir", "Cleanup", "Deadline",
		"Context", "Chdir", "Attr", "Output", "ResetTimer", "StartTimer", "StopTimer", "ReportAllocs", "Loop", "N"} {
		testingNames[n] = true
	}
}
