package product

import (
	"bytes"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/needle-dev/needle/product/internal/typecheck"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

// Lexical evidence: for languages Needle has no syntax-grade validator for,
// a subject is located only where a line has the shape of its definition in
// that language, for the whole qualified name. It is never more than
// lexical, and certificates and contexts say so.

// lexLang is how one language writes definitions. Each pattern has the
// placeholder NAME (the quoted name) and matches one definition line.
type lexLang struct {
	// defs define a function, method or variable; containers define a
	// type, class, module or namespace that may hold other definitions.
	defs, containers []string
	// indent: blocks are made by indentation (Python); otherwise by braces
	// or keywords, and a container holds what follows it up to its end.
	indent bool
	// braces: a container's block is delimited by { and }.
	braces bool
}

const lexName = "NAME"

var (
	cLike = lexLang{braces: true,
		defs: []string{
			`^[\w\s\*&:<>,~\[\]]*[\s\*&:]NAME\s*\([^;]*$`, // a function definition: a type, the name, parameters, no ';'
			`^\s*NAME\s*\([^;]*$`,
			`^\s*#\s*define\s+NAME\b`,
		},
		containers: []string{`\b(struct|class|union|enum|namespace)\s+NAME\b`}}
	jvmLike = lexLang{braces: true,
		defs: []string{
			`\b(fun|func|def)\s+(<[^>]*>\s*)?([\w.]+\.)?NAME\b`,
			`^\s*(@\w+(\([^)]*\))?\s+)*((public|private|protected|internal|static|final|abstract|synchronized|native|override|open|virtual|async|sealed|default|inline|suspend|operator|extern|unsafe|new|partial|readonly)\s+)*[\w<>\[\],.?]+\s+NAME\s*(<[^>]*>)?\s*\(`,
			`\b(val|var|let|const)\s+NAME\b`,
		},
		containers: []string{`\b(class|interface|enum|record|object|struct|protocol|trait|extension|namespace)\s+NAME\b`}}
	langs = map[string]lexLang{
		".py":  {indent: true, defs: []string{`^\s*(async\s+)?def\s+NAME\s*\(`, `^\s*NAME\s*(:[^=]*)?=[^=]`}, containers: []string{`^\s*class\s+NAME\b`}},
		".pyi": {indent: true, defs: []string{`^\s*(async\s+)?def\s+NAME\s*\(`}, containers: []string{`^\s*class\s+NAME\b`}},
		".rb":  {indent: true, defs: []string{`^\s*def\s+(self\.)?NAME\b`}, containers: []string{`^\s*(class|module)\s+NAME\b`}},
		".rs": {braces: true, defs: []string{`\bfn\s+NAME\b`, `\b(const|static)\s+(mut\s+)?NAME\s*:`, `\bmacro_rules!\s*NAME\b`},
			containers: []string{`\b(struct|enum|trait|mod|union|type)\s+NAME\b`, `\bimpl\b(\s*<[^{]*>)?\s+([\w:<>, ]+\s+for\s+)?([\w:]+::)?NAME\b`}},
		".js": jsLike, ".jsx": jsLike, ".mjs": jsLike, ".cjs": jsLike, ".ts": jsLike, ".tsx": jsLike, ".mts": jsLike, ".cts": jsLike,
		".java": jvmLike, ".kt": jvmLike, ".kts": jvmLike, ".scala": jvmLike, ".cs": jvmLike, ".swift": jvmLike, ".groovy": jvmLike, ".dart": jvmLike,
		".c": cLike, ".h": cLike, ".cc": cLike, ".cpp": cLike, ".cxx": cLike, ".hpp": cLike, ".hh": cLike, ".m": cLike,
		".php": {braces: true, defs: []string{`\bfunction\s+&?NAME\s*\(`}, containers: []string{`\b(class|interface|trait|enum|namespace)\s+NAME\b`}},
		".sh":  shLike, ".bash": shLike, ".zsh": shLike,
		".lua": {defs: []string{`\bfunction\s+([\w.:]+[.:])?NAME\s*\(`, `\blocal\s+NAME\s*=\s*function\b`}},
		".ex":  {defs: []string{`^\s*def(p|macro|macrop)?\s+NAME\b`}, containers: []string{`^\s*defmodule\s+([\w.]+\.)?NAME\b`}},
		".exs": {defs: []string{`^\s*def(p|macro|macrop)?\s+NAME\b`}, containers: []string{`^\s*defmodule\s+([\w.]+\.)?NAME\b`}},
		".pl":  {braces: true, defs: []string{`\bsub\s+NAME\b`}, containers: []string{`\bpackage\s+NAME\b`}},
		".pm":  {braces: true, defs: []string{`\bsub\s+NAME\b`}, containers: []string{`\bpackage\s+NAME\b`}},
		".zig": {braces: true, defs: []string{`\bfn\s+NAME\s*\(`, `\b(const|var)\s+NAME\b`}},
		".hs":  {defs: []string{`^NAME\s+::`, `^(data|newtype|type|class)\s+NAME\b`}},
		".ml":  {defs: []string{`^\s*let\s+(rec\s+)?NAME\b`, `^\s*type\s+NAME\b`}, containers: []string{`^\s*module\s+NAME\b`}},
		".erl": {defs: []string{`^NAME\s*\(`}},
		".clj": {defs: []string{`\(defn-?\s+NAME\b`, `\(def\s+NAME\b`}},
		".r":   {defs: []string{`^\s*NAME\s*(<-|=)\s*function\b`}},
		".R":   {defs: []string{`^\s*NAME\s*(<-|=)\s*function\b`}},
		".jl":  {defs: []string{`^\s*function\s+NAME\b`, `^\s*NAME\s*\([^)]*\)\s*=`}, containers: []string{`^\s*(struct|module|mutable struct)\s+NAME\b`}},
		".vue": jsLike, ".svelte": jsLike,
	}
	jsLike = lexLang{braces: true,
		defs: []string{
			`\bfunction\s*\*?\s*NAME\s*[(<]`,
			`\b(const|let|var)\s+NAME\s*(:[^=]+)?=`,
			`^\s*((static|async|get|set|public|private|protected|readonly|override|abstract)\s+)*\*?NAME\s*(<[^>]*>)?\s*\([^)]*\)\s*(:[^{]*)?\{\s*$`,
			`^\s*((static|public|private|protected|readonly)\s+)*NAME\s*(:[^=]+)?=\s*(async\s+)?(function|\(|[A-Za-z_$][\w$]*\s*=>)`,
			`^\s*NAME\s*:\s*(async\s+)?(function|\([^)]*\)\s*=>)`,
		},
		containers: []string{`\b(class|interface|enum|namespace|module)\s+NAME\b`, `\b(const|let|var)\s+NAME\s*=\s*\{`}}
	shLike = lexLang{defs: []string{`^\s*(function\s+)?NAME\s*\(\s*\)`, `^\s*function\s+NAME\b`}}
)

// proseExts are files of prose: a name in them is never a definition.
var proseExts = map[string]bool{".md": true, ".markdown": true, ".txt": true, ".rst": true, ".adoc": true, ".org": true, ".html": true, ".htm": true, "": true}

func langOf(rel string) (lexLang, bool) {
	l, ok := langs[path.Ext(rel)]
	return l, ok
}

func defPattern(p, name string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(p, lexName, regexp.QuoteMeta(name)))
}

// lexLine reports whether line matches one of patterns for name.
func lexLine(patterns []string, name, line string) bool {
	for _, p := range patterns {
		if defPattern(p, name).MatchString(line) {
			return true
		}
	}
	return false
}

// lexicalDefinition proves, lexically, that a symbol is defined in span: a
// line in the span has the shape of a definition of its last name part in
// the file's language and, for a qualified name, each earlier part is a
// container definition enclosing it (or, for the first part, the file's
// module: its base name or a directory of its path). A call site, prose,
// or a qualifier that is not there is no definition.
func (val *validator) lexicalDefinition(field string, s Subject, rel string, src []byte, span typecheck.Span, claim Claim) (Claim, typecheck.Span, bool, error) {
	val.lexical()
	lang, ok := langOf(rel)
	if !ok || proseExts[path.Ext(rel)] {
		val.v.reject("%s: %s is not a source file of a language Needle reads (lexically): it cannot hold a definition of %q", field, rel, s.Name)
		return Claim{}, span, false, nil
	}
	parts := strings.Split(strings.TrimSuffix(s.Name, "()"), ".")
	lines := strings.Split(string(src), "\n")
	last := parts[len(parts)-1]
	for n := span.Start; n <= span.End && n <= len(lines); n++ {
		line := lines[n-1]
		isDef := lexLine(lang.defs, last, line) || lexLine(lang.containers, last, line)
		if isDef && lexEnclosed(lang, rel, lines, n, parts[:len(parts)-1]) {
			return claim, span, true, nil
		}
	}
	val.v.reject("%s: no line of %s:%d-%d has the shape of a definition of %q (lexical evidence: %s)", field, rel, span.Start, span.End, s.Name, path.Ext(rel))
	return Claim{}, span, false, nil
}

// lexEnclosed reports whether the definition at line n (1-based) lies
// inside containers named by quals, innermost last.
func lexEnclosed(lang lexLang, rel string, lines []string, n int, quals []string) bool {
	at := n
	for i := len(quals) - 1; i >= 0; i-- {
		q := quals[i]
		found := 0
		for c := at - 1; c >= 1; c-- {
			if lexLine(lang.containers, q, lines[c-1]) && lexHolds(lang, lines, c, at) {
				found = c
				break
			}
		}
		if found == 0 {
			// The outermost qualifiers may name the file's module instead.
			return moduleNames(rel, quals[:i+1])
		}
		at = found
	}
	return true
}

// moduleNames reports whether quals name the file as a module: its base
// name without extension, preceded by its directories.
func moduleNames(rel string, quals []string) bool {
	return hasSuffix(strings.Split(strings.TrimSuffix(rel, path.Ext(rel)), "/"), quals)
}

// hasSuffix reports whether parts ends with tail.
func hasSuffix(parts, tail []string) bool {
	return len(tail) <= len(parts) && slices.Equal(parts[len(parts)-len(tail):], tail)
}

// lexHolds reports whether the container defined at line c holds line n:
// by indentation (every line between is blank or indented deeper than c),
// by braces (n comes before the brace that closes the first one opened at
// or after c), or, for keyword-block languages, by indentation as well.
func lexHolds(lang lexLang, lines []string, c, n int) bool {
	if lang.braces {
		depth, opened := 0, false
		for l := c; l < n; l++ {
			for _, r := range stripStrings(lines[l-1]) {
				switch r {
				case '{':
					depth++
					opened = true
				case '}':
					depth--
				}
			}
			if opened && depth <= 0 {
				return false
			}
		}
		return opened && depth > 0
	}
	base := indentOf(lines[c-1])
	if indentOf(lines[n-1]) <= base {
		return false
	}
	for l := c + 1; l < n; l++ {
		if strings.TrimSpace(lines[l-1]) != "" && indentOf(lines[l-1]) <= base {
			return false
		}
	}
	return true
}

func indentOf(line string) int {
	n := 0
	for _, r := range line {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 8
		default:
			return n
		}
	}
	return n
}

// stripStrings blanks out quoted strings and line comments, so braces in
// them are not counted.
func stripStrings(line string) string {
	var b strings.Builder
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote && (i == 0 || line[i-1] != '\\') {
				quote = 0
			}
		case r == '"' || r == '\'' || r == '`':
			quote = r
		case r == '/' && strings.HasPrefix(line[i:], "//"), r == '#':
			return b.String()
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// quoted matches string literals in a line.
var quoted = lazyregexp.New(`"([^"\\]|\\.)*"|'([^'\\]|\\.)*'|` + "`[^`]*`")

// lexicalOption proves, lexically, that a cli_option or configuration_key
// is defined in span: for a flag, a string literal on a line of the span
// holds its dashed spelling as a whole word ("--archive-dir", "-v,
// --verbose"), or is exactly its bare name on a line that defines a flag
// (long, flag, option, argument, Arg); for a key, a line assigns it
// (KEY=…, key: …, key = … in configuration files) or a string literal is
// exactly the key. Prose never defines anything.
func (val *validator) lexicalOption(field string, s Subject, rel string, src []byte, span typecheck.Span, claim Claim) (Claim, typecheck.Span, bool, error) {
	val.lexical()
	if proseExts[path.Ext(rel)] {
		val.v.reject("%s: %s is prose: it cannot hold a definition of %s %q", field, rel, s.Kind, s.Name)
		return Claim{}, span, false, nil
	}
	lines := strings.Split(string(src), "\n")
	bare := strings.TrimLeft(s.Name, "-")
	assign := regexp.MustCompile(`^\s*(export\s+)?["']?` + regexp.QuoteMeta(s.Name) + `["']?\s*[:=]`)
	flagWords := regexp.MustCompile(`(?i)\b(long|flag|option|argument|arg|opt)\b`)
	for n := span.Start; n <= span.End && n <= len(lines); n++ {
		line := lines[n-1]
		if s.Kind == subjectConfigurationKey && assign.MatchString(line) {
			return claim, span, true, nil
		}
		for _, lit := range quoted.FindAllString(line, -1) {
			text := lit[1 : len(lit)-1]
			switch {
			case s.Kind == subjectConfigurationKey && text == s.Name:
				return claim, span, true, nil
			case s.Kind == subjectCLIOption && strings.HasPrefix(s.Name, "-") && lexicalWord([]byte(text), s.Name, typecheck.Span{Start: 1, End: 1}):
				return claim, span, true, nil
			case s.Kind == subjectCLIOption && text == bare && flagWords.MatchString(line):
				return claim, span, true, nil
			}
		}
	}
	val.v.reject("%s: %s %q is not defined in %s:%d-%d (lexical evidence: a string literal defining it, or an assignment of the key)", field, s.Kind, s.Name, rel, span.Start, span.End)
	return Claim{}, span, false, nil
}

// lexicalTestDefined reports whether a non-Go test name is defined in src:
// a definition-shaped line for it in the file's language, or a test-framework
// call naming it (it("…"), test("…"), describe("…")).
func lexicalTestDefined(rel string, src []byte, name string) bool {
	lang, ok := langOf(rel)
	if !ok {
		return false
	}
	call := regexp.MustCompile(`\b(it|test|describe|context|specify|scenario)(\.\w+)?\s*\(\s*["'` + "`" + `]` + regexp.QuoteMeta(name) + `["'` + "`" + `]`)
	for _, line := range strings.Split(string(src), "\n") {
		if lexLine(lang.defs, name, line) || call.MatchString(line) {
			return true
		}
	}
	return false
}

// lexicalWord reports whether word occurs as a whole word on a line inside
// span: not preceded or followed by a letter, digit or underscore. It is the
// evidence for files Needle cannot parse, so callers label it "lexical".
//
// A word starting with '-' is a command-line flag: there '-' also counts as
// part of a word on both sides, so --crlf is found in "use --crlf." but not in
// "x--crlf" or "--crlf-mode".
func lexicalWord(src []byte, word string, span typecheck.Span) bool {
	if word == "" {
		return false
	}
	flag := word[0] == '-'
	n := 0
	for line := range bytes.Lines(src) {
		n++
		if n > span.End {
			break
		}
		if span.Contains(n) && containsWord(line, []byte(word), flag) {
			return true
		}
	}
	return false
}

// containsWord reports whether word occurs in line with a word boundary on
// both sides.
func containsWord(line, word []byte, flag bool) bool {
	for off := 0; off < len(line); {
		i := bytes.Index(line[off:], word)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(word)
		leftOK := start == 0 || !isWordByte(line[start-1], flag)
		rightOK := end == len(line) || !isWordByte(line[end], flag)
		if leftOK && rightOK {
			return true
		}
		off = start + 1
	}
	return false
}

func isWordByte(c byte, flag bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		return true
	}
	return flag && c == '-'
}

// lineCount returns the number of lines in src: a final line without a
// trailing newline counts, and an empty file has none.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}
