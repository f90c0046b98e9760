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
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
	"github.com/needle-dev/needle/product/internal/strictjson"
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
	// Body is the first line of a function's or method's body past its
	// docstring, which runs only when it is called (0 when the docstring
	// is the whole body).
	Body int `json:"body,omitempty"`
	// Alias is, for a variable bound to a bare name (X = Y), that name.
	Alias string `json:"alias,omitempty"`
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
	Options     []Option     `json:"options"`
	Imports     []Import     `json:"imports"`
	SyntaxError *SyntaxError `json:"syntax_error,omitempty"`
}

// An Import is a `from Module import name as as` statement of the
// module's top level (or under if, try or with there): what a package's
// __init__.py re-exports. Level counts the leading dots of a relative
// import; a name "*" imports them all.
type Import struct {
	Module string      `json:"module"`
	Level  int         `json:"level"`
	Line   int         `json:"line"`
	Names  [][2]string `json:"names"` // name, and the name it is bound to ("" for itself)
	// Cond: the statement is under an if, try or with (TYPE_CHECKING, an
	// ImportError fallback): whether it runs is not known from the source.
	Cond bool `json:"cond,omitempty"`
}

// Imported returns what the import imports to bind name in the importing
// module: the imported name, or "*" for a star import (which binds it if
// the module it reads from exports it).
func (im Import) Imported(name string) (string, bool) {
	for _, n := range im.Names {
		switch {
		case n[0] == "*":
			return "*", true
		case n[1] == name || n[1] == "" && n[0] == name:
			return n[0], true
		}
	}
	return "", false
}

// Kinds of option.
const (
	OptionFlag = "flag" // a command-line flag
	OptionEnv  = "env"  // an environment variable the program reads
)

// APIs that define options, as an Option names them: the module whose
// call defines it (click-like modules by their own name), or "os" for a
// read of os.environ (os.environ[...], .get, .setdefault, .pop, in) or
// os.getenv.
var apis = map[string]bool{"argparse": true, "optparse": true, "click": true, "rich_click": true, "cloup": true, "asyncclick": true, "typer": true, "os": true}

// An Option is a command-line flag or an environment variable that the
// source defines by meaning: argparse's add_argument, optparse's
// add_option, click's option decorators and Option class and the envvar
// of its parameters, typer's parameters (an Option default or Annotated
// metadata, or any parameter with a default of a typer command), and
// reads of os.environ and os.getenv. A string constant names each; a
// string that merely equals a name defines nothing, and is not one.
type Option struct {
	Kind string `json:"kind"`
	// Names are the flag's names as declared (--x, -x; both of click's
	// --x/--no-x) or the variable's.
	Names []string `json:"names"`
	API   string   `json:"api"`
	// Line is the line of the name (a parameter's, when Derived); Start
	// and End the lines of the call, subscript or comparison defining it,
	// with the name; Outer those of the function (with its decorators) or
	// module-level statement holding it.
	Line  int    `json:"line"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Outer [2]int `json:"outer"`
	// Flags are the names of the flag an environment variable feeds
	// (click's and typer's envvar).
	Flags []string `json:"flags,omitempty"`
	// Derived is a typer flag named after its parameter (user_name is
	// --user-name; a bool's is --x and --no-x).
	Derived bool `json:"derived,omitempty"`
}

// maxDecls bounds the declarations, and the options, of one file.
const maxDecls = 1 << 16

// maxName bounds the length of an option's name.
const maxName = 256

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
	if err := strictjson.Decode(out, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	if !version.MatchString(f.Python) {
		return nil, fmt.Errorf("%w: Python version %q", ErrOutput, f.Python)
	}
	if f.SyntaxError != nil {
		if len(f.Decls) != 0 || len(f.Options) != 0 || f.SyntaxError.Line < 0 || f.SyntaxError.Line > lines+1 {
			return nil, fmt.Errorf("%w: syntax error at line %d of %d, with declarations", ErrOutput, f.SyntaxError.Line, lines)
		}
		return &f, nil
	}
	if len(f.Decls) > maxDecls {
		return nil, fmt.Errorf("%w: %d declarations", ErrOutput, len(f.Decls))
	}
	if len(f.Options) > maxDecls || len(f.Imports) > maxDecls {
		return nil, fmt.Errorf("%w: %d options, %d imports", ErrOutput, len(f.Options), len(f.Imports))
	}
	for _, im := range f.Imports {
		if err := im.check(lines); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOutput, err)
		}
	}
	for _, d := range f.Decls {
		if err := d.check(lines); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOutput, err)
		}
	}
	for _, o := range f.Options {
		if err := o.check(lines); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOutput, err)
		}
	}
	return &f, nil
}

func (im Import) check(lines int) error {
	if im.Level < 0 || im.Level > 64 || im.Level == 0 && im.Module == "" || len(im.Names) == 0 || len(im.Names) > maxDecls || im.Line < 1 || im.Line > lines {
		return fmt.Errorf("import from %q at level %d of %d names", im.Module, im.Level, len(im.Names))
	}
	if im.Module != "" && !dotted(im.Module) {
		return fmt.Errorf("import from %q", im.Module)
	}
	for _, n := range im.Names {
		if !(n[0] == "*" && n[1] == "") && (!dotted(n[0]) || strings.Contains(n[0], ".") || n[1] != "" && (!dotted(n[1]) || strings.Contains(n[1], "."))) {
			return fmt.Errorf("import of %q as %q", n[0], n[1])
		}
	}
	return nil
}

// dotted reports whether s is a dotted name of Python identifiers.
func dotted(s string) bool { return len(s) <= maxName && qualified.MatchString(s) }

func (o Option) check(lines int) error {
	switch {
	case o.Kind != OptionFlag && o.Kind != OptionEnv:
		return fmt.Errorf("option kind %q", o.Kind)
	case !apis[o.API]:
		return fmt.Errorf("option API %q", o.API)
	case len(o.Names) == 0 || len(o.Names) > 64 || len(o.Flags) > 64:
		return fmt.Errorf("option with %d names, %d flags", len(o.Names), len(o.Flags))
	case o.Kind == OptionEnv && (len(o.Names) != 1 || o.Derived):
		return fmt.Errorf("variable %q: %d names", o.Names[0], len(o.Names))
	case !(1 <= o.Outer[0] && o.Outer[0] <= o.Start && o.Start <= o.Line && o.Line <= o.End && o.End <= o.Outer[1] && o.Outer[1] <= lines):
		return fmt.Errorf("option %q: lines %d, %d-%d in %d-%d outside 1-%d", o.Names[0], o.Line, o.Start, o.End, o.Outer[0], o.Outer[1], lines)
	}
	for _, n := range o.Names {
		if !optionName(n, o.Kind == OptionFlag) {
			return fmt.Errorf("option name %q", n)
		}
	}
	for _, n := range o.Flags {
		if !optionName(n, true) {
			return fmt.Errorf("flag name %q", n)
		}
	}
	return nil
}

// optionName reports whether n can name a flag (one that starts with -)
// or a variable: printable, without blanks, at most maxName bytes.
func optionName(n string, flag bool) bool {
	if n == "" || len(n) > maxName || !utf8.ValidString(n) || flag && (!strings.HasPrefix(n, "-") || strings.Trim(n, "-") == "") {
		return false
	}
	for _, r := range n {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
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
	case d.Body != 0 && (d.Kind == KindClass || d.Kind == KindVariable || d.Body < d.Line || d.Body > d.End):
		return fmt.Errorf("%s: a %s whose body starts at line %d of %d-%d", d.Name, d.Kind, d.Body, d.Line, d.End)
	case d.Alias != "" && (d.Kind != KindVariable || !qualified.MatchString(d.Alias) || strings.Contains(d.Alias, ".")):
		return fmt.Errorf("%s: alias %q", d.Name, d.Alias)
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
