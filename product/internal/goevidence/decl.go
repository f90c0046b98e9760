package goevidence

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"sync"
)

// Span is a 1-based inclusive range of lines.
type Span struct{ Start, End int }

// Contains reports whether line lies within s. An inverted span contains
// nothing.
func (s Span) Contains(line int) bool { return s.Start <= line && line <= s.End }

// parsed is one parsed Go file and the file set that positions it.
type parsed struct {
	fset *token.FileSet
	file *ast.File
}

// parse parses src. src is always used, even when empty: the checks are
// about the snapshot the caller read, never about a file on this disk.
// A validation asks many questions of the same files (each listed test,
// the package's test functions, its call index), so parses are remembered
// by file name and content: the same bytes are parsed once. Every caller
// only reads the syntax tree.
func parse(filename string, src []byte) (*parsed, error) {
	if src == nil {
		src = []byte{}
	}
	key := filename + "\x00" + string(src)
	if p, ok := parses.get(key); ok {
		return p, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", filename, err)
	}
	p := &parsed{fset: fset, file: f}
	parses.put(key, p)
	return p, nil
}

// maxParses bounds the remembered parses; past it the memory starts over.
const maxParses = 256

// parses remembers parsed files by name and content.
var parses = parseMemo{m: map[string]*parsed{}}

type parseMemo struct {
	mu sync.Mutex
	m  map[string]*parsed
}

func (c *parseMemo) get(key string) (*parsed, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[key]
	return p, ok
}

func (c *parseMemo) put(key string, p *parsed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxParses {
		clear(c.m)
	}
	c.m[key] = p
}

func (p *parsed) line(pos token.Pos) int { return p.fset.Position(pos).Line }

func (p *parsed) span(n ast.Node) Span { return Span{p.line(n.Pos()), p.line(n.End())} }

// declaration is one package-level declaration of a name.
type declaration struct {
	span     Span
	nameLine int // line of the name identifier
}

// Declarations returns the span of every package-level declaration of name
// in the Go file. name is "Name" for a func, type, var or const, or
// "Type.Method" for a method with a value, pointer or generic receiver. A
// func or an ungrouped declaration spans from its keyword to its end; a spec
// of a parenthesized group spans the spec alone.
func Declarations(filename string, src []byte, name string) ([]Span, error) {
	p, err := parse(filename, src)
	if err != nil {
		return nil, err
	}
	var spans []Span
	for _, d := range p.declarations(name) {
		spans = append(spans, d.span)
	}
	return spans, nil
}

// Declared reports whether a package-level declaration of name has its name
// identifier on a line inside span.
func Declared(filename string, src []byte, name string, span Span) (bool, error) {
	p, err := parse(filename, src)
	if err != nil {
		return false, err
	}
	for _, d := range p.declarations(name) {
		if span.Contains(d.nameLine) {
			return true, nil
		}
	}
	return false, nil
}

// FuncAt returns the name ("Name" or "Type.Method") and the span of the
// top-level function or method declaration containing line. Go has no nested
// declarations, so at most one contains it.
func FuncAt(filename string, src []byte, line int) (name string, span Span, ok bool, err error) {
	p, err := parse(filename, src)
	if err != nil {
		return "", Span{}, false, err
	}
	for _, d := range p.file.Decls {
		fd, isFunc := d.(*ast.FuncDecl)
		if !isFunc || !p.span(fd).Contains(line) {
			continue
		}
		if name := funcName(fd); name != "" {
			return name, p.span(fd), true, nil
		}
	}
	return "", Span{}, false, nil
}

// declarations finds the package-level declarations of name. A malformed
// name, or the blank identifier, which declares nothing that can be cited,
// has none.
func (p *parsed) declarations(name string) []declaration {
	typ, method, isMethod := strings.Cut(name, ".")
	if name == "" || name == "_" || isMethod && (typ == "" || method == "" || strings.Contains(method, ".")) {
		return nil
	}
	var out []declaration
	for _, d := range p.file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if funcName(d) == name {
				out = append(out, declaration{p.span(d), p.line(d.Name.Pos())})
			}
		case *ast.GenDecl:
			if !isMethod {
				out = append(out, p.specDeclarations(d, name)...)
			}
		}
	}
	return out
}

// specDeclarations finds name among the type, var and const specs of d.
func (p *parsed) specDeclarations(d *ast.GenDecl, name string) []declaration {
	var out []declaration
	for _, spec := range d.Specs {
		// A lone spec is cited with its keyword; a grouped one without the group.
		var node ast.Node = spec
		if !d.Lparen.IsValid() {
			node = d
		}
		var names []*ast.Ident
		switch s := spec.(type) {
		case *ast.TypeSpec:
			names = []*ast.Ident{s.Name}
		case *ast.ValueSpec:
			names = s.Names
		}
		for _, id := range names {
			if id.Name == name {
				out = append(out, declaration{p.span(node), p.line(id.Pos())})
			}
		}
	}
	return out
}

// funcName returns "Name" for a function and "Type.Method" for a method, or
// "" for a receiver whose type is not a (possibly generic) named type.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil {
		return fd.Name.Name
	}
	if len(fd.Recv.List) != 1 {
		return ""
	}
	typ := receiverType(fd.Recv.List[0].Type)
	if typ == "" {
		return ""
	}
	return typ + "." + fd.Name.Name
}

// receiverType strips pointers, parentheses and type parameters from a
// receiver type: (s *Set[K, V]) has receiver type "Set".
func receiverType(x ast.Expr) string {
	for {
		switch t := x.(type) {
		case *ast.Ident:
			return t.Name
		case *ast.StarExpr:
			x = t.X
		case *ast.ParenExpr:
			x = t.X
		case *ast.IndexExpr:
			x = t.X
		case *ast.IndexListExpr:
			x = t.X
		default:
			return ""
		}
	}
}
