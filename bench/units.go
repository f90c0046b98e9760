package bench

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
)

// Declaration units: what the intervention truth breaks and what a cited
// span is mapped to at run time. They come from go/parser alone (syntax,
// no types): a function or method declaration, a type spec, a field of a
// struct type, a method of an interface type, a const or var spec.
//
// The mapping tolerance (unitsAt): a span [start, end] of a file cites a
// unit when it holds the unit's head line (the line of its name) and lies
// within the unit's lines widened to its doc comment above and one line
// below its last line. A span that holds several units in that sense (a
// one-line type with its field) cites each of them; a span that runs
// beyond every unit holding its lines cites none.

// unit is one declaration of a file.
type unit struct {
	Path string `json:"path"`
	Name string `json:"name"` // "F", "T.M", "T", "T.Field", "V"
	Kind string `json:"kind"` // func, method, type, field, value
	Doc  int    `json:"doc"`  // first line, doc comment included
	Head int    `json:"head"` // the line of the name
	End  int    `json:"end"`  // last line
	// lbrace and rbrace are the byte offsets of a function body's braces
	// (-1 without a body): where the interventions break or instrument it.
	lbrace, rbrace int
}

func (u unit) key() string { return u.Path + "#" + u.Name }

// fileUnits parses one Go file of a tree into its units, in file order.
// A file that does not parse has none.
// Not split: one type switch over the declaration forms (func, type with
// its fields or methods, const/var), each case a unit literal built with
// the same file-set closures (line, off, docOr) that helpers would each
// have to take.
func fileUnits(rel string, src []byte) []unit {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	var out []unit
	docOr := func(doc *ast.CommentGroup, start token.Pos) int {
		if doc != nil {
			return line(doc.Pos())
		}
		return line(start)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			u := unit{Path: rel, Name: funcName(d), Kind: "func", Doc: docOr(d.Doc, d.Pos()), Head: line(d.Name.Pos()), End: line(d.End()), lbrace: -1, rbrace: -1}
			if d.Recv != nil {
				u.Kind = "method"
			}
			if d.Body != nil {
				u.lbrace, u.rbrace = off(d.Body.Lbrace), off(d.Body.Rbrace)
			}
			out = append(out, u)
		case *ast.GenDecl:
			single := !d.Lparen.IsValid()
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					doc, start := s.Doc, s.Pos()
					if single {
						doc, start = d.Doc, d.Pos()
					}
					out = append(out, unit{Path: rel, Name: s.Name.Name, Kind: "type", Doc: docOr(doc, start), Head: line(s.Name.Pos()), End: line(s.End()), lbrace: -1, rbrace: -1})
					var fields *ast.FieldList
					switch t := s.Type.(type) {
					case *ast.StructType:
						fields = t.Fields
					case *ast.InterfaceType:
						fields = t.Methods
					}
					if fields == nil {
						continue
					}
					for _, fld := range fields.List {
						for _, n := range fld.Names {
							out = append(out, unit{Path: rel, Name: s.Name.Name + "." + n.Name, Kind: "field", Doc: docOr(fld.Doc, fld.Pos()),
								Head: line(n.Pos()), End: line(fld.End()), lbrace: -1, rbrace: -1})
						}
					}
				case *ast.ValueSpec:
					doc, start := s.Doc, s.Pos()
					if single {
						doc, start = d.Doc, d.Pos()
					}
					for _, n := range s.Names {
						out = append(out, unit{Path: rel, Name: n.Name, Kind: "value", Doc: docOr(doc, start), Head: line(n.Pos()), End: line(s.End()), lbrace: -1, rbrace: -1})
					}
				}
			}
		}
	}
	return out
}

// unitsAt returns the units a span of a file cites (the tolerance above).
func unitsAt(units []unit, start, end int) []unit {
	var out []unit
	for _, u := range units {
		if start <= u.Head && u.Head <= end && start >= u.Doc && end <= u.End+1 {
			out = append(out, u)
		}
	}
	return out
}

// funcUnitAt returns the function or method whose lines (doc comment in,
// one line past its end) hold the span: the function a flow step lies in.
func funcUnitAt(units []unit, start, end int) (unit, bool) {
	for _, u := range units {
		if (u.Kind == "func" || u.Kind == "method") && start >= u.Doc && end <= u.End+1 && start <= u.End {
			return u, true
		}
	}
	return unit{}, false
}

// treeUnits parses every non-test Go file of a tree.
func treeUnits(t tree) map[string][]unit {
	out := map[string][]unit{}
	for _, rel := range slices.Sorted(mapKeys(t)) {
		if skipFile(rel) || strings.HasSuffix(rel, "_test.go") {
			continue
		}
		out[rel] = fileUnits(rel, t[rel])
	}
	return out
}

// blankLines returns src with lines from..to (1-based) emptied: the lines
// stay, so nothing else of the file moves.
func blankLines(src []byte, from, to int) []byte {
	ls := strings.Split(string(src), "\n")
	for i := from; i <= to && i <= len(ls); i++ {
		if i >= 1 {
			ls[i-1] = ""
		}
	}
	return []byte(strings.Join(ls, "\n"))
}

// packageClause is the package name a Go file declares.
func packageClause(src []byte) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.PackageClauseOnly)
	if err != nil {
		return ""
	}
	return f.Name.Name
}
