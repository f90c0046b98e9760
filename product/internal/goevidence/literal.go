package goevidence

import (
	"go/ast"
	"go/token"
	"slices"
	"strconv"
)

// StringLiteral reports whether a string literal, interpreted or raw, whose
// unquoted value equals one of values starts on a line inside span. Import
// paths are not considered: they name packages, not flags or keys.
func StringLiteral(filename string, src []byte, values []string, span Span) (bool, error) {
	p, err := parse(filename, src)
	if err != nil {
		return false, err
	}
	found := false
	for _, d := range p.file.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && span.Contains(p.line(lit.Pos())) {
				v, ok := stringValue(lit)
				found = found || ok && slices.Contains(values, v)
			}
			return !found
		})
		if found {
			return true, nil
		}
	}
	return false, nil
}

// stringValue returns the value of a string literal; other literals, and
// literals the parser accepted but strconv cannot unquote, have none.
func stringValue(lit *ast.BasicLit) (string, bool) {
	if lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}
