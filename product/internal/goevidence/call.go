package goevidence

import (
	"go/ast"
	"maps"
	"slices"
)

// Target is what a function body must reference.
type Target struct {
	// Idents are identifier names: a bare identifier Foo or the Sel of a
	// selector x.Foo. For "Type.Method" the caller passes "Method" and/or
	// "Type".
	Idents []string
	// Strings are string literal values, unquoted.
	Strings []string
}

// MaxDepth is how many calls Reaches follows from the starting function. It
// bounds the work on any package and keeps a certified chain short enough for
// a reader to check.
const MaxDepth = 8

// Reaches reports whether function fn ("Name" or "Type.Method") references
// target in its body, or through the top-level functions and methods it
// calls, transitively, breadth-first, at most MaxDepth calls deep. pkg maps
// file names to the sources of one package directory, test files included;
// every file in it is one namespace (see the package doc). The chain names
// the functions from fn to the one whose body holds the reference, so the
// shortest chain is found. An fn that is not declared reaches nothing.
func Reaches(pkg map[string][]byte, fn string, target Target) (chain []string, ok bool, err error) {
	p, err := ParsePackage(pkg)
	if err != nil {
		return nil, false, err
	}
	chain, ok = p.Reaches(fn, target)
	return chain, ok, nil
}

// Package is a package parsed once, for many Reaches questions: a test
// list is checked test by test, and each question would otherwise parse
// every file of the package again.
type Package struct {
	idx *funcIndex
}

// ParsePackage parses pkg as Reaches does.
func ParsePackage(pkg map[string][]byte) (*Package, error) {
	idx, err := indexPackage(pkg)
	if err != nil {
		return nil, err
	}
	return &Package{idx: idx}, nil
}

// Reaches is Reaches on the parsed package.
func (p *Package) Reaches(fn string, target Target) (chain []string, ok bool) {
	idx := p.idx
	if len(idx.decls[fn]) == 0 {
		return nil, false
	}
	type step struct {
		key   string
		chain []string
	}
	queue := []step{{fn, []string{fn}}}
	seen := map[string]bool{fn: true}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if references(idx.decls[s.key], target) {
			return s.chain, true
		}
		if len(s.chain) > MaxDepth {
			continue // s is MaxDepth calls from fn
		}
		for _, next := range idx.callees(idx.decls[s.key]) {
			if !seen[next] {
				seen[next] = true
				queue = append(queue, step{next, append(slices.Clip(s.chain), next)})
			}
		}
	}
	return nil, false
}

// funcIndex holds the top-level functions and methods of a package.
type funcIndex struct {
	decls   map[string][]*ast.FuncDecl // by "Name" or "Type.Method"
	methods map[string][]string        // method name -> sorted "Type.Method" keys
}

// indexPackage parses every file, in name order so that results do not
// depend on map iteration.
func indexPackage(pkg map[string][]byte) (*funcIndex, error) {
	idx := &funcIndex{decls: map[string][]*ast.FuncDecl{}, methods: map[string][]string{}}
	for _, name := range slices.Sorted(maps.Keys(pkg)) {
		p, err := parse(name, pkg[name])
		if err != nil {
			return nil, err
		}
		for _, d := range p.file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			key := ""
			if ok {
				key = funcName(fd)
			}
			if key == "" {
				continue
			}
			if len(idx.decls[key]) == 0 && fd.Recv != nil {
				idx.methods[fd.Name.Name] = append(idx.methods[fd.Name.Name], key)
			}
			idx.decls[key] = append(idx.decls[key], fd)
		}
	}
	for _, keys := range idx.methods {
		slices.Sort(keys)
	}
	return idx, nil
}

// callees returns the keys of the package functions the bodies call by
// name, in the order the calls appear.
func (idx *funcIndex) callees(decls []*ast.FuncDecl) []string {
	var keys []string
	for _, fd := range decls {
		if fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				keys = append(keys, idx.resolve(call)...)
			}
			return true
		})
	}
	return keys
}

// resolve returns the keys a call may reach: a bare f() only function f;
// x.f() also any method f.
func (idx *funcIndex) resolve(call *ast.CallExpr) []string {
	id, viaSelector := calleeIdent(call)
	if id == nil {
		return nil
	}
	var keys []string
	if len(idx.decls[id.Name]) > 0 { // a key without a dot is a function
		keys = append(keys, id.Name)
	}
	if viaSelector {
		keys = append(keys, idx.methods[id.Name]...)
	}
	return keys
}

// references reports whether any of the bodies mentions one of target's
// identifiers or string values.
func references(decls []*ast.FuncDecl, target Target) bool {
	found := false
	for _, fd := range decls {
		if fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				found = found || slices.Contains(target.Idents, n.Name)
			case *ast.BasicLit:
				v, ok := stringValue(n)
				found = found || ok && slices.Contains(target.Strings, v)
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// Calls reports whether the code in span a of file A calls, by name, a
// function or method whose name identifier lies in span b of file B, and
// returns the callee's name. It links consecutive steps of a runtime flow: a
// call counts when its callee identifier is on a line of a. See the package
// doc for how names resolve without types.
func Calls(fileA string, srcA []byte, a Span, fileB string, srcB []byte, b Span) (callee string, ok bool, err error) {
	pa, err := parse(fileA, srcA)
	if err != nil {
		return "", false, err
	}
	pb, err := parse(fileB, srcB)
	if err != nil {
		return "", false, err
	}
	funcs, methods := pb.funcsNamedIn(b)
	// A bare call reaches only its own package, or anything under a dot import.
	bareOK := pa.file.Name.Name == pb.file.Name.Name || hasDotImport(pa.file)
	ast.Inspect(pa.file, func(n ast.Node) bool {
		call, isCall := n.(*ast.CallExpr)
		if !isCall || callee != "" {
			return callee == ""
		}
		id, viaSelector := calleeIdent(call)
		if id == nil || !a.Contains(pa.line(id.Pos())) {
			return true
		}
		if funcs[id.Name] && (viaSelector || bareOK) || methods[id.Name] && viaSelector {
			callee = id.Name
		}
		return callee == ""
	})
	return callee, callee != "", nil
}

// funcsNamedIn returns the names of the top-level functions and of the
// methods whose name identifiers lie in span.
func (p *parsed) funcsNamedIn(span Span) (funcs, methods map[string]bool) {
	funcs, methods = map[string]bool{}, map[string]bool{}
	for _, d := range p.file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || !span.Contains(p.line(fd.Name.Pos())) {
			continue
		}
		if fd.Recv == nil {
			funcs[fd.Name.Name] = true
		} else {
			methods[fd.Name.Name] = true
		}
	}
	return funcs, methods
}

func hasDotImport(f *ast.File) bool {
	for _, imp := range f.Imports {
		if imp.Name != nil && imp.Name.Name == "." {
			return true
		}
	}
	return false
}

// calleeIdent returns the identifier that names what call calls — f in f(),
// f[int]() and (f)(), Sel in x.Sel() — and whether it was a selector. Calls
// of other expressions, such as func literals, name nothing.
func calleeIdent(call *ast.CallExpr) (id *ast.Ident, viaSelector bool) {
	fun := call.Fun
	for {
		switch f := fun.(type) {
		case *ast.Ident:
			return f, false
		case *ast.SelectorExpr:
			return f.Sel, true
		case *ast.ParenExpr:
			fun = f.X
		case *ast.IndexExpr:
			fun = f.X
		case *ast.IndexListExpr:
			fun = f.X
		default:
			return nil, false
		}
	}
}
