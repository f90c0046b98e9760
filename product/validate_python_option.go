package product

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/pydecl"
	"github.com/needle-dev/needle/product/internal/typecheck"
)

// Python options and keys are known by meaning, as Go's are: Python's
// parser reads the file (pydecl) and reports the calls and reads that
// define a flag or an environment variable — argparse's add_argument,
// optparse's add_option, click's option decorators, its Option class and
// the envvar of its parameters, typer's parameters, and reads of
// os.environ and os.getenv — each named by a string constant. A string
// that merely equals the name (a help text, a test passing the flag, a
// comparison, a write to os.environ) is a use, never a definition. That
// the call is argparse's, click's or typer's is judged by its name and the
// module's imports, not by running it: static, and the note says so.

// pyOptionAt proves that the cli_option or configuration_key subject s is
// defined in the Python file rel at span: the span overlaps the call (or
// read) that defines it and stays inside the function, with its
// decorators, or the module-level statement that holds that call. It
// returns the claim's detail; handled is false when Python's parser cannot
// run here, and the caller falls back to the lexical rule.
func (val *validator) pyOptionAt(field string, s Subject, rel string, src []byte, span typecheck.Span) (detail string, ok, handled bool) {
	f, handled := val.pyParse(field, rel, src)
	if f == nil {
		return "", false, handled
	}
	kinds := optionKinds(s.Kind)
	var defs, here []pyOptionDef
	for _, o := range f.Options {
		for _, d := range pyDefinitions(o, rel) {
			if slices.Contains(kinds, d.Kind) && d.Matches(s.Name) {
				defs = append(defs, pyOptionDef{d, o})
				if span.Start <= o.End && o.Start <= span.End {
					here = append(here, pyOptionDef{d, o})
				}
			}
		}
	}
	if len(here) == 0 {
		val.v.reject("%s: %s %q is not defined in %s:%d-%d: no argparse, optparse, click or typer option, and no read of os.environ, names it there (a string equal to the name is a use, not a definition; Python %s's ast)%s",
			field, s.Kind, s.Name, rel, span.Start, span.End, f.Python, pyDefinedAt(defs))
		return "", false, true
	}
	lines := strings.Split(string(src), "\n")
	for _, d := range here {
		if n, why := pyOptionAgrees(d.o, lines); why != "" {
			val.v.undecide("%s: the interpreter's answer for %s %q does not match the source at %s:%d (%s)", field, s.Kind, s.Name, rel, n, why)
			return "", false, true
		}
	}
	d := here[0]
	if pyTestFile(rel) {
		val.v.reject("%s: %s:%d defines %s %q in a test file, for tests only: a definition in a test file is never the implementation of an option%s",
			field, rel, d.o.Line, s.Kind, s.Name, pyDefinedAt(slices.DeleteFunc(defs, func(x pyOptionDef) bool { return x.o.Line == d.o.Line })))
		return "", false, true
	}
	if span.Start < d.o.Outer[0] || span.End > d.o.Outer[1]+1 {
		val.v.reject("%s: %s:%d-%d runs beyond the %s that defines %s %q (%s:%d-%d)", field, rel, span.Start, span.End, pyOuterWhat(d.o), s.Kind, s.Name, rel, d.o.Outer[0], d.o.Outer[1])
		return "", false, true
	}
	val.v.note("%s %q: defined by %s at %s:%d-%d, as Python %s's ast reads it", s.Kind, s.Name, d.def.Callee, rel, d.o.Start, d.o.End, f.Python)
	val.v.note("static: that the call is %s's was judged by its name and the module's imports, not by running it", d.o.API)
	return optionDetail(d.def), true, true
}

// pyOptionDef is one definition of an option the parser reported.
type pyOptionDef struct {
	def typecheck.Definition
	o   pydecl.Option
}

// pyDefinitions are the definitions one reported option makes, in the
// terms Go's options use, so that a subject names a Python flag as it
// names a Go one (--x, -x, x, "-x, --x"; a variable by its exact name).
func pyDefinitions(o pydecl.Option, rel string) []typecheck.Definition {
	d := typecheck.Definition{Form: typecheck.FormCall, From: typecheck.FromLiteral, Callee: pyCallee(o), File: rel, Line: o.Line,
		Site: typecheck.Span{Start: o.Start, End: o.End}}
	if o.Derived {
		d.From = typecheck.FromFieldName
	}
	if o.Kind == pydecl.OptionEnv {
		d.Kind, d.Long = typecheck.DefEnv, o.Names[0]
		d.Aliases = pyFlagNames(o.Flags)
		return []typecheck.Definition{d}
	}
	// One definition for each name, the others its aliases: --no-x and
	// -q are as much the flag's names as --x.
	d.Kind = typecheck.DefFlag
	bare := pyFlagNames(o.Names)
	var out []typecheck.Definition
	for i, n := range o.Names {
		e := d
		if !strings.HasPrefix(n, "--") && len([]rune(bare[i])) == 1 {
			e.Short = bare[i]
		} else {
			e.Long = bare[i]
		}
		e.Aliases = slices.Delete(slices.Clone(bare), i, i+1)
		out = append(out, e)
	}
	return out
}

// pyFlagNames are flag names without their dashes.
func pyFlagNames(names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, strings.TrimLeft(n, "-"))
	}
	return out
}

// pyCallee names what defines an option, for the claim's detail and the
// notes.
func pyCallee(o pydecl.Option) string {
	switch {
	case o.API == "argparse" && slices.Equal(o.Names, []string{"-h", "--help"}):
		return "argparse parser's own help"
	case o.API == "argparse":
		return "argparse add_argument"
	case o.API == "optparse":
		return "optparse add_option"
	case o.API == "os":
		return "a read of os.environ"
	case o.Derived:
		return "a parameter of a typer command"
	case o.Kind == pydecl.OptionEnv:
		return o.API + " envvar"
	}
	return o.API + " option"
}

// pyDefinedAt lists where else the file defines the option, for a
// rejection.
func pyDefinedAt(defs []pyOptionDef) string {
	var at []string
	for _, d := range defs {
		if s := fmt.Sprintf("%d-%d", d.o.Start, d.o.End); !slices.Contains(at, s) {
			at = append(at, s)
		}
	}
	if len(at) == 0 {
		return ""
	}
	return "; it is defined at lines " + strings.Join(at, ", ")
}

// pyOuterWhat names what holds a definition: a function, or a statement.
func pyOuterWhat(o pydecl.Option) string {
	if o.Outer[0] == o.Start && o.Outer[1] == o.End {
		return "statement"
	}
	return "function or statement"
}

// pyTestFile reports whether rel is a test file by pytest's default rules
// (test_*.py, *_test.py), a test.py, tests.py or conftest.py, or a file in
// a tests or test directory: what it defines, it defines for tests.
func pyTestFile(rel string) bool {
	base := path.Base(rel)
	if strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "test.py" || base == "tests.py" || base == "conftest.py" {
		return true
	}
	return slices.ContainsFunc(strings.Split(path.Dir(rel), "/"), func(d string) bool { return d == "tests" || d == "test" })
}

// implicitNames are the names click's decorators give the options they
// define when the call names none, and argparse's and optparse's parsers
// their help (and optparse's its version, given one).
var implicitNames = map[string][]string{"--version": {"version_option", "version="}, "--help": {"help_option", "ArgumentParser", "add_parser", "OptionParser"},
	"-h": {"ArgumentParser", "add_parser", "OptionParser"}, "--password": {"password_option"}, "--yes": {"confirmation_option"}}

// pyOptionAgrees checks an option the interpreter reported against the
// source itself, since the interpreter may be the repository's: each name
// stands quoted in the lines of its definition (between quotes, or beside
// a / of click's --x/--no-x), a name click's decorator or argparse's
// parser gives stands beside that decorator or parser, a typer parameter's is the parameter's, and the API's
// own word (add_argument, environ, option, ...) is there. It returns the
// line and what is wrong, or "".
func pyOptionAgrees(o pydecl.Option, lines []string) (int, string) {
	if o.End > len(lines) {
		return o.End, "past the end"
	}
	text := strings.Join(lines[o.Start-1:o.End], "\n")
	word := map[string][]string{"argparse": {"add_argument", "ArgumentParser", "add_parser"}, "optparse": {"add_option", "OptionParser"}, "os": {"environ", "getenv"}}[o.API]
	if word == nil {
		word = []string{"option", "Option", "envvar"}
	}
	if !o.Derived && !slices.ContainsFunc(word, func(w string) bool { return strings.Contains(text, w) }) {
		return o.Start, "no " + strings.Join(word, " or ")
	}
	for i, n := range o.Names {
		switch {
		case o.Derived:
			param := strings.ReplaceAll(strings.TrimPrefix(n, "--"), "-", "_")
			if strings.HasPrefix(n, "--no-") && i > 0 {
				param = strings.ReplaceAll(strings.TrimPrefix(n, "--no-"), "-", "_")
			}
			if !typerParam(lines[o.Line-1], param) || !strings.Contains(strings.Join(lines, "\n"), "typer") {
				return o.Line, "no parameter " + param + " of a typer command"
			}
		case quotedIn(text, n):
		case slices.ContainsFunc(implicitNames[n], func(w string) bool { return strings.Contains(text, w) }):
		default:
			return o.Start, fmt.Sprintf("no %q", n)
		}
	}
	return 0, ""
}

// typerParam reports whether line holds the parameter name, annotated or
// with a default: name: T or name=.
func typerParam(line, name string) bool {
	for off := 0; off < len(line); {
		i := strings.Index(line[off:], name)
		if i < 0 {
			return false
		}
		i += off
		rest := strings.TrimLeft(line[i+len(name):], " \t")
		if (i == 0 || !isIdentByte(line[i-1])) && rest != "" && (rest[0] == ':' || rest[0] == '=' && !strings.HasPrefix(rest, "==")) {
			return true
		}
		off = i + 1
	}
	return false
}

// quotedIn reports whether name stands in text as a string constant's
// content or one of its /-separated parts, with blanks around it allowed.
func quotedIn(text, name string) bool {
	bound := func(c byte) bool { return c == '"' || c == '\'' || c == '/' || c == ' ' }
	for off := 0; off < len(text); {
		i := strings.Index(text[off:], name)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(name)
		if i > 0 && bound(text[i-1]) && j < len(text) && bound(text[j]) {
			return true
		}
		off = i + 1
	}
	return false
}
