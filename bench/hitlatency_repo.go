package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/needle-dev/needle/product"
)

// The latency experiment's repository: a small Go command (a line searcher
// with a --crlf flag, the subject of the MCP seed's need_context example),
// generated functions to certify as many artifacts as a series asks for,
// and, for the directory series, data files that make the work tree large.
// Every proposal cites lines found in the generated text, so the evidence
// certifies without anyone counting lines by hand.

// latencySources are the command's files; fill/ and data/ are generated.
var latencySources = map[string]string{
	"go.mod": "module example.com/hitlat\n\ngo 1.22\n",
	"main.go": `package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout))
}

// run parses args, searches r and writes matches to w.
func run(args []string, r io.Reader, w io.Writer) int {
	o, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if NewSearcher(o).Search(r, w) == 0 {
		return 1
	}
	return 0
}
`,
	"flags.go": `package main

import "flag"

// parseFlags parses the command line into Options.
func parseFlags(args []string) (*Options, error) {
	fs := flag.NewFlagSet("hitlat", flag.ContinueOnError)
	crlf := fs.Bool("crlf", false, "treat CRLF as a line terminator")
	nullData := fs.Bool("null-data", false, "use NUL as the line terminator")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return newOptions(fs.Arg(0), *crlf, *nullData), nil
}
`,
	"options.go": `package main

// Options holds the parsed command line.
type Options struct {
	Pattern    string
	CRLF       bool
	Terminator byte
}

// newOptions builds Options; NUL data wins over CRLF.
func newOptions(pattern string, crlf, nullData bool) *Options {
	o := &Options{Pattern: pattern, Terminator: '\n'}
	if nullData {
		o.Terminator = 0
	}
	o.CRLF = crlf && !nullData
	return o
}
`,
	"search.go": `package main

import (
	"bytes"
	"io"
)

// Searcher finds lines matching a pattern.
type Searcher struct {
	pattern string
	split   func([]byte) [][]byte
}

// NewSearcher builds a Searcher from the options.
func NewSearcher(o *Options) *Searcher {
	return &Searcher{pattern: o.Pattern, split: lineSplitter(o)}
}

// lineSplitter picks how input is cut into lines.
func lineSplitter(o *Options) func([]byte) [][]byte {
	if o.CRLF {
		return splitCRLF
	}
	term := o.Terminator
	return func(data []byte) [][]byte { return bytes.Split(data, []byte{term}) }
}

// splitCRLF cuts data at CRLF or LF line ends.
func splitCRLF(data []byte) [][]byte {
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimSuffix(l, []byte("\r"))
	}
	return lines
}

// Search copies matching lines from r to w and returns how many matched.
func (s *Searcher) Search(r io.Reader, w io.Writer) int {
	data, err := io.ReadAll(r)
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range s.split(data) {
		if bytes.Contains(line, []byte(s.pattern)) {
			w.Write(append(line, '\n'))
			n++
		}
	}
	return n
}
`,
	"search_test.go": `package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCRLF(t *testing.T) {
	o, err := parseFlags([]string{"--crlf", "x"})
	if err != nil || !o.CRLF {
		t.Fatalf("parseFlags: %+v, %v", o, err)
	}
}

func TestSplitCRLF(t *testing.T) {
	got := splitCRLF([]byte("a\r\nb\n"))
	if len(got) != 3 || string(got[0]) != "a" {
		t.Fatalf("splitCRLF = %q", got)
	}
}

func TestSearchMatches(t *testing.T) {
	if n := searchAll(t, "b", "a\r\nb\r\nab\n"); n != 2 {
		t.Fatalf("matches = %d", n)
	}
}

// searchAll runs a CRLF Searcher over input.
func searchAll(t *testing.T, pattern, input string) int {
	t.Helper()
	var out bytes.Buffer
	return NewSearcher(&Options{Pattern: pattern, CRLF: true}).Search(strings.NewReader(input), &out)
}
`,
}

// fillPerFile is how many generated functions share one file of fill/.
const fillPerFile = 100

// fillName is the name of the i-th generated function.
func fillName(i int) string { return fmt.Sprintf("F%05d", i) }

// fillFile is the path of the file that declares the i-th function.
func fillFile(i int) string { return fmt.Sprintf("fill/fill_%03d.go", i/fillPerFile) }

// fillSource is the file holding functions first .. first+n-1.
func fillSource(first, n int) string {
	var b strings.Builder
	b.WriteString("package fill\n")
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "\n// %s returns its number.\nfunc %s() int {\n\treturn %d\n}\n", fillName(i), fillName(i), i)
	}
	return b.String()
}

// writeLatencyRepo writes the command and fills generated functions into
// dir and commits them as a git repository.
func writeLatencyRepo(ctx context.Context, dir string, fills int) error {
	files := map[string]string{}
	for name, src := range latencySources {
		files[name] = src
	}
	for first := 0; first < fills; first += fillPerFile {
		files[fillFile(first)] = fillSource(first, min(fillPerFile, fills-first))
	}
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			return err
		}
	}
	if _, err := git(ctx, dir, "init", "-q"); err != nil {
		return err
	}
	return commitAll(ctx, dir, "hitlat")
}

func commitAll(ctx context.Context, dir, msg string) error {
	if _, err := git(ctx, dir, "add", "-A"); err != nil {
		return err
	}
	_, err := git(ctx, dir, "commit", "-q", "-m", msg)
	return err
}

// growDataFiles adds data files to dir/data until it holds n, 100 to a
// directory two levels deep, and commits them. The top-level listing of the
// repository does not change (data/ exists from the first file on), so
// evidence that depends on it stays fresh.
func growDataFiles(ctx context.Context, dir string, have, n int) error {
	for i := have; i < n; i++ {
		p := filepath.Join(dir, "data", fmt.Sprintf("d%02d", i/10000), fmt.Sprintf("d%03d", i/100%100), fmt.Sprintf("f%06d.txt", i))
		if i%100 == 0 || i == have {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "sample line %d\r\n", i), 0o644); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return commitAll(ctx, dir, fmt.Sprintf("%d data files", n))
}

// declSpan returns the 1-based lines of the first line of src that starts with
// head through the first line after it that is exactly "}".
func declSpan(src, head string) (start, end int, err error) {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		if start == 0 && strings.HasPrefix(l, head) {
			start = i + 1
		}
		if start != 0 && l == "}" {
			return start, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("no %q … } in the generated source", head)
}

// locationProposal is an implementation_location proposal of subject at the
// declaration that starts with head in file.
func locationProposal(kind, name, file, src, head string) ([]byte, error) {
	start, end, err := declSpan(src, head)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"kind": "implementation_location",
		"subject": map[string]string{"kind": kind, "name": name}, "path": file, "start_line": start, "end_line": end})
}

// coreProposals is the evidence every series certifies first: where --crlf
// is defined, how it flows into Options, a test that covers it, where
// NewSearcher is implemented, and the tests of the root package that reach
// splitCRLF (certified representative: the validators never certify a test
// list exhaustive).
func coreProposals() ([][]byte, error) {
	loc, err := locationProposal("cli_option", "--crlf", "flags.go", latencySources["flags.go"], "func parseFlags")
	if err != nil {
		return nil, err
	}
	searcher, err := locationProposal("symbol", "NewSearcher", "search.go", latencySources["search.go"], "func NewSearcher")
	if err != nil {
		return nil, err
	}
	s1, e1, err := declSpan(latencySources["flags.go"], "func parseFlags")
	if err != nil {
		return nil, err
	}
	s2, e2, err := declSpan(latencySources["options.go"], "func newOptions")
	if err != nil {
		return nil, err
	}
	flow, _ := json.Marshal(map[string]any{"kind": "runtime_flow", "subject": map[string]string{"kind": "cli_option", "name": "--crlf"},
		"scenario": "default", "steps": []map[string]any{
			{"path": "flags.go", "start_line": s1, "end_line": e1, "summary": "the --crlf flag is parsed"},
			{"path": "options.go", "start_line": s2, "end_line": e2, "summary": "CRLF is kept unless NUL data wins"}}})
	test := func(name string) map[string]string {
		return map[string]string{"path": "search_test.go", "name": name, "command": product.TestCommand("search_test.go", name)}
	}
	tests, _ := json.Marshal(map[string]any{"kind": "focused_tests", "subject": map[string]string{"kind": "cli_option", "name": "--crlf"},
		"tests": []any{test("TestCRLF")}})
	reaching, _ := json.Marshal(map[string]any{"kind": "focused_tests", "subject": map[string]string{"kind": "symbol", "name": "splitCRLF"},
		"tests": []any{test("TestSplitCRLF"), test("TestSearchMatches")}})
	return [][]byte{loc, flow, tests, searcher, reaching}, nil
}

// fillProposal is the implementation_location of the i-th generated function.
func fillProposal(i int) ([]byte, error) {
	first := i / fillPerFile * fillPerFile
	return locationProposal("symbol", fillName(i), fillFile(i), fillSource(first, fillPerFile), "func "+fillName(i)+"(")
}

// The probes: needs the experiment asks again and again, in the dialect a
// main model writes. trace is the MCP seed's need_context example (a
// runtime flow, its implementation and, preferred, focused tests); locate
// asks where a symbol is implemented (the path that also looks for claims
// about the symbol in other evidence); tests asks for tests that reach a
// function (evidence that depends on the files its test binary compiled).
var (
	probeTrace = probe{name: "trace", what: "trace.state-flow of --crlf (the MCP seed's need_context request)", args: `{
  "route": "trace.state-flow",
  "subject": {"kind": "cli_option", "name": "--crlf"},
  "required": [
    {"kind": "implementation_location", "polarity": "positive", "selection": "primary"},
    {"kind": "runtime_flow", "scenario": "default", "completeness": "contract_complete", "granularity": "stepwise"}
  ],
  "preferred": [
    {"kind": "focused_tests", "polarity": "positive", "selection": "representative", "completeness": "open_world"}
  ],
  "world": {"source": "current", "platform": "current", "features": "default"},
  "task": "Trace how --crlf changes matching and search line terminators."
}`}
	probeLocate = probe{name: "locate", what: "locate.implementation of the symbol NewSearcher", args: `{"route": "locate.implementation",
  "subject": {"kind": "symbol", "name": "NewSearcher"}, "task": "Where is NewSearcher implemented?"}`}
	probeTests = probe{name: "tests", what: "tests.relevant of splitCRLF (focused tests a run showed reach it; never exhaustive)", args: `{"route": "tests.relevant",
  "subject": {"kind": "symbol", "name": "splitCRLF"},
  "required": [{"kind": "focused_tests", "selection": "representative"}],
  "task": "Which tests exercise splitCRLF?"}`}
)

// probe is a need the experiment asks repeatedly.
type probe struct {
	name, what, args string
}

// params is the tools/call params of the probe, on one line.
func (p probe) params() []byte {
	var c bytes.Buffer
	if err := json.Compact(&c, []byte(p.args)); err != nil {
		panic("bench: probe " + p.name + " is not JSON: " + err.Error())
	}
	return fmt.Appendf(nil, `{"name":"need_context","arguments":%s}`, c.Bytes())
}
