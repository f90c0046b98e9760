// Package pydecl reads the declarations of a Python file with Python's own
// parser: the ast module of the repository's interpreter, run by a script
// embedded here (decls.py) on the source given on stdin. The script
// imports nothing of the repository and executes none of the source, but
// the interpreter may be the repository's own (a .venv), so the caller
// runs it in the sandbox, and its output is untrusted: Parse checks every
// field.
package pydecl

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

//go:embed decls.py
var script string

// Argv is the command that prints the declarations of the source on its
// stdin: isolated mode (-I: no environment variables, no user site, not
// the working directory on sys.path), no site module (-S) and no bytecode
// written (-B).
func Argv(interpreter string) []string {
	return []string{interpreter, "-I", "-S", "-B", "-c", script}
}

// Kinds of declaration.
const (
	KindClass    = "class"
	KindFunction = "function" // a def at module level or inside a def
	KindMethod   = "method"   // a def in a class body
	KindVariable = "variable" // a name an assignment binds at module or class level
)

// Decl is one declaration.
type Decl struct {
	// Name is the qualified name inside the module, as Python's
	// __qualname__ writes it without its <locals> parts: f, C, C.m, f.g.
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Line is the line of the def, class or assignment; First the line of
	// its first decorator (Line without one); End its last line.
	Line  int `json:"line"`
	First int `json:"first"`
	End   int `json:"end"`
	// Decorators and, for a class, Bases are the dotted names of the
	// decorator and base expressions ("" for another expression).
	Decorators []string `json:"decorators,omitempty"`
	Bases      []string `json:"bases,omitempty"`
}

// SyntaxError is the parser's refusal of the source.
type SyntaxError struct {
	Line int    `json:"line"`
	Msg  string `json:"msg"`
}

// File is what the script printed for one source.
type File struct {
	Python      string       `json:"python"` // the interpreter's version, X.Y.Z
	Decls       []Decl       `json:"decls"`
	SyntaxError *SyntaxError `json:"syntax_error,omitempty"`
}

// maxDecls bounds the declarations of one file.
const maxDecls = 1 << 16

var (
	version   = lazyregexp.New(`^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$`)
	qualified = lazyregexp.New(`^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*(\.[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*)*$`)
	dottedOK  = lazyregexp.New(`^([\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*(\.[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*)*)?$`)
)

// ErrOutput is the error of output the script could not have printed for
// a source of that many lines.
var ErrOutput = errors.New("pydecl: malformed output")

// Parse reads the script's output for a source of lines lines, checking
// that every declaration lies within it and is well formed.
func Parse(out []byte, lines int) (*File, error) {
	var f File
	dec := json.NewDecoder(strings.NewReader(string(out)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: more after the value", ErrOutput)
	}
	if !version.MatchString(f.Python) {
		return nil, fmt.Errorf("%w: Python version %q", ErrOutput, f.Python)
	}
	if f.SyntaxError != nil {
		if len(f.Decls) != 0 || f.SyntaxError.Line < 0 || f.SyntaxError.Line > lines+1 {
			return nil, fmt.Errorf("%w: syntax error at line %d of %d, with declarations", ErrOutput, f.SyntaxError.Line, lines)
		}
		return &f, nil
	}
	if len(f.Decls) > maxDecls {
		return nil, fmt.Errorf("%w: %d declarations", ErrOutput, len(f.Decls))
	}
	for _, d := range f.Decls {
		if err := d.check(lines); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOutput, err)
		}
	}
	return &f, nil
}

func (d Decl) check(lines int) error {
	switch {
	case !qualified.MatchString(d.Name):
		return fmt.Errorf("name %q", d.Name)
	case d.Kind != KindClass && d.Kind != KindFunction && d.Kind != KindMethod && d.Kind != KindVariable:
		return fmt.Errorf("%s: kind %q", d.Name, d.Kind)
	case !(1 <= d.First && d.First <= d.Line && d.Line <= d.End && d.End <= lines):
		return fmt.Errorf("%s: lines %d, %d-%d outside 1-%d", d.Name, d.First, d.Line, d.End, lines)
	case d.Kind == KindVariable && (d.First != d.Line || len(d.Decorators) != 0):
		return fmt.Errorf("%s: a variable with decorators", d.Name)
	case d.Kind != KindClass && len(d.Bases) != 0:
		return fmt.Errorf("%s: bases of a %s", d.Name, d.Kind)
	}
	for _, n := range append(append([]string{}, d.Decorators...), d.Bases...) {
		if !dottedOK.MatchString(n) {
			return fmt.Errorf("%s: decorator or base %q", d.Name, n)
		}
	}
	return nil
}

// Tail is the last line of d's block with the comments that trail its
// last statement, indented deeper than its def or class line (lines is the
// source, split at newlines): Python's inspect counts them to the block,
// and so does a reader. It is End when none trail it.
func (d Decl) Tail(lines []string) int {
	if d.Kind == KindVariable || d.Line > len(lines) {
		return d.End
	}
	indent := Indent(lines[d.Line-1])
	tail := d.End
	for n := d.End + 1; n <= len(lines); n++ {
		l := lines[n-1]
		trimmed := strings.TrimSpace(l)
		switch {
		case trimmed == "":
			continue
		case strings.HasPrefix(trimmed, "#") && Indent(l) > indent:
			tail = n
			continue
		}
		break
	}
	return tail
}

// Indent is the width of a line's leading blanks, a tab counting to the
// next multiple of 8 as Python's tokenizer counts it.
func Indent(line string) int {
	w := 0
	for _, r := range line {
		switch r {
		case ' ':
			w++
		case '\t':
			w = (w/8 + 1) * 8
		case '\f':
			w = 0
		default:
			return w
		}
	}
	return w
}

// Lookup returns the declarations named name in f.
func (f *File) Lookup(name string) []Decl {
	var out []Decl
	for _, d := range f.Decls {
		if d.Name == name {
			out = append(out, d)
		}
	}
	return out
}
