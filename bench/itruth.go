package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The intervention truth: the harness's ground truth, by a method the
// validators do not use. Validators read the source (go/types: where a
// name is declared, which call resolves to what) and coverage; the truth
// changes the program and watches what happens, on a copy of each module
// version, never through product code. Per capability kind:
//
//   - implementation_location of a symbol: delete the cited declaration
//     (its lines emptied, nothing else moved) and compile a reference to
//     the subject (`var _ = F`, `func _() { var x T; _ = x.M }`) in each
//     package where that reference compiles unmutated. The location is
//     true when the compiler then reports the reference: the cited lines
//     were what the subject's name meant. A method may shadow one of the
//     same name promoted from an embedded field, through which the
//     reference still compiles: then the cited method, renamed, is true
//     when the new name selects on a value of the type and not on a value
//     of a type defined from it (which keeps only promoted methods). The
//     compiler decides, not the harness's reading of the source.
//   - implementation_location of a cli_option: a program that parses the
//     module's flags (a main package of the module, or a driver of the
//     harness built against the module: cobra's Command, urfave/cli's App,
//     the flag.CommandLine of a package that registers flags when it is
//     imported) is run with the flag and with unknown flags, and the flag
//     must be recognised (behave differently from an unknown one). Then
//     each expression of the cited file whose value is the flag's name (a
//     string literal, or a package constant holding one) is replaced by a
//     call returning a mutant name, and the program built again: the site
//     defines the flag when the flag is no longer recognised or the mutant
//     name now is (after the first argument prefix, a path to a
//     subcommand, that recognised it), or when under another prefix that
//     recognised it the flag moved to the mutant name (both: each of
//     cobra's completion subcommands defines its own --no-descriptions). A read, a test passing the flag, a subcommand of that
//     name leave the parser as it was: false. A constant's declaration
//     cannot take a run-time value and does not build: false.
//   - focused_tests: a cited test must be declared in the cited file, be
//     part of its package's test binary (a file that a build constraint
//     leaves out is not: an undefined name appended to the file breaks
//     the test binary's build only when the file is compiled into it, the
//     compiler decides), and pass unmutated (the outcome the coverage runs
//     recorded). It reaches the subject when breaking the subject makes it
//     fail: every body of a symbol (or of a file) starts with a panic, a
//     cli_option's defining sites are renamed. The broken code also records
//     that it ran: a test that fails is true, a test that never ran the
//     broken code is false. A test that ran a symbol's panicking body and
//     still passes (a recover swallowed the panic: text/template's, the
//     test's own) runs again with the body exiting the process instead,
//     which nothing recovers: true when it then fails. A test that still
//     passes (the mutant survived), or one that ran a flag's renamed site
//     and passes, is unjudged and counted.
//   - runtime_flow: the functions that hold flow steps are instrumented
//     (a call at the start of each body records its entry, a deferred one
//     its exit) and every test that could enter one of them runs on its
//     own, as do the scenarios flows name (a test, a subtest, a command
//     with arguments); each run records its entries and exits in order. A
//     flow is true when its first step is a true location of the subject
//     and its steps, mapped to the functions they lie in, fire in order in
//     one run of its scenario ("default": any test of the module), each
//     entered while the steps before it are still running: the next step
//     runs within the previous one, by a direct call, through a function
//     value or an interface, or further down. Entries in order alone are
//     not enough: a table test runs the same functions again and again,
//     and a function merely named like the callee would come after the
//     first step in some run.
//
// The truth is computed once per module version at corpus generation and
// stored as corpus data (corpus/<name>/truth/<module>@<version>.json,
// format TruthFormat), pinned by digest in the manifest like the coverage.
// It is keyed by declaration — a path, a name and the lines of that
// declaration at that version — so that a span Needle serves after a proof
// replay, at other lines, is judged by the declaration it maps to
// (units.go says how spans map to declarations).

// TruthFormat tags a truth file of this format.
const TruthFormat = "needlebench.truth/v1"

// TruthData is the intervention truth of one module version.
type TruthData struct {
	Format    string `json:"format"`
	Module    string `json:"module"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Sandbox   string `json:"sandbox"`
	// Units are the declarations the records below name, by index.
	Units []unit `json:"units"`
	// Locations: symbol subjects, one record per declaration broken.
	Locations []LocationCase `json:"locations"`
	// Probes: per cli_option subject, the program that showed the flag
	// recognised (or why none did).
	Probes []FlagProbe `json:"probes"`
	// Sites: per cli_option subject, each expression renamed.
	Sites []FlagSite `json:"sites"`
	// TestFiles: per cited _test.go file, whether its package's test
	// binary compiles it.
	TestFiles []TestFileCase `json:"test_files"`
	// Reach: per subject and cited test, what breaking the subject did.
	Reach []ReachCase `json:"reach"`
	// Functions are the instrumented functions (indexes into Units): a
	// trace entry is an index into this list.
	Functions []int          `json:"functions"`
	Scenarios []ScenarioSpec `json:"scenarios"`
	Runs      []TraceRun     `json:"runs"`
}

// Verdicts of a record.
const (
	verdictTrue     = "true"
	verdictFalse    = "false"
	verdictUnjudged = "unjudged"
)

// LocationCase is one declaration deleted for a symbol subject.
type LocationCase struct {
	Subject string `json:"subject"` // kind:name
	Unit    int    `json:"unit"`
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
}

// FlagProbe is the program that observes a cli_option subject.
type FlagProbe struct {
	Subject string   `json:"subject"`
	Program string   `json:"program,omitempty"` // "main:DIR", "driver", "commandline:DIR"
	Args    []string `json:"args,omitempty"`    // the arguments before the flag
	// More are the other argument prefixes under which the program
	// recognises the flag (each of a command's subcommands may define it).
	More  [][]string `json:"more_args,omitempty"`
	Files []string   `json:"files"`         // the files whose sites were renamed
	Why   string     `json:"why,omitempty"` // why there is no probe
}

// FlagSite is one expression whose value is a flag's name, renamed.
type FlagSite struct {
	Subject string `json:"subject"`
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Unit    int    `json:"unit"` // the declaration holding it; -1 if none
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
}

// TestFileCase is one cited _test.go file broken: true when the test
// binary of its package no longer builds (the file is compiled into it).
type TestFileCase struct {
	Path    string `json:"path"`
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
}

// ReachCase is one cited test run with its subject broken.
type ReachCase struct {
	Subject string `json:"subject"`
	Dir     string `json:"dir"`
	Test    string `json:"test"`
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
}

// ScenarioSpec says what run a flow's scenario (as written) is.
type ScenarioSpec struct {
	Scenario string   `json:"scenario"`
	Kind     string   `json:"kind"` // tests (any test), test, command
	Dir      string   `json:"dir,omitempty"`
	Test     string   `json:"test,omitempty"`
	Program  string   `json:"program,omitempty"`
	Args     []string `json:"args,omitempty"`
}

// TraceRun is one instrumented run: a test (Dir, Test) or a command
// scenario (Scenario), with its events in order: i ≥ 0 entered function i
// (an index into Functions), -i-1 left it.
type TraceRun struct {
	Dir      string `json:"dir,omitempty"`
	Test     string `json:"test,omitempty"`
	Scenario string `json:"scenario,omitempty"`
	Outcome  string `json:"outcome"`
	Entries  []int  `json:"entries"`
	Cut      bool   `json:"cut,omitempty"` // the run entered more than the hook records
}

// truthFile is where a corpus keeps the truth of module@version.
func truthFile(corpusDir, module, version string) string {
	return filepath.Join(corpusDir, "truth", strings.ReplaceAll(module, "/", "_")+"@"+version+".json")
}

// encode writes the truth as JSON, one record a line.
func (d *TruthData) encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n")
	head := []struct {
		k, v string
	}{{"format", d.Format}, {"module", d.Module}, {"version", d.Version}, {"go_version", d.GoVersion}, {"sandbox", d.Sandbox}}
	for _, h := range head {
		v, _ := json.Marshal(h.v)
		fmt.Fprintf(&b, "  %q: %s,\n", h.k, v)
	}
	list := func(name string, n int, item func(int) any, last bool) error {
		fmt.Fprintf(&b, "  %q: [", name)
		for i := range n {
			v, err := json.Marshal(item(i))
			if err != nil {
				return err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n    ")
			b.Write(v)
		}
		if n > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString("]")
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		return nil
	}
	for _, err := range []error{
		list("units", len(d.Units), func(i int) any { return d.Units[i] }, false),
		list("locations", len(d.Locations), func(i int) any { return d.Locations[i] }, false),
		list("probes", len(d.Probes), func(i int) any { return d.Probes[i] }, false),
		list("sites", len(d.Sites), func(i int) any { return d.Sites[i] }, false),
		list("test_files", len(d.TestFiles), func(i int) any { return d.TestFiles[i] }, false),
		list("reach", len(d.Reach), func(i int) any { return d.Reach[i] }, false),
		list("functions", len(d.Functions), func(i int) any { return d.Functions[i] }, false),
		list("scenarios", len(d.Scenarios), func(i int) any { return d.Scenarios[i] }, false),
		list("runs", len(d.Runs), func(i int) any { return d.Runs[i] }, true),
	} {
		if err != nil {
			return nil, err
		}
	}
	b.WriteString("}\n")
	var check TruthData
	if err := decodeStrict(b.Bytes(), &check); err != nil {
		return nil, fmt.Errorf("encode truth: %w", err)
	}
	return b.Bytes(), nil
}

// loadTruthData reads the truth of module@version and checks it against
// the digest the manifest pins and against itself.
func loadTruthData(corpusDir, module string, v ModuleVersion) (*TruthData, error) {
	file := truthFile(corpusDir, module, v.Version)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("truth of %s@%s: %w (regenerate the corpus with its manifest's generator command)", module, v.Version, err)
	}
	if got := fileDigest(data); got != v.Truth {
		return nil, fmt.Errorf("truth of %s@%s: %s has digest %s, the manifest pins %q (regenerate the corpus with its manifest's generator command)",
			module, v.Version, file, got, v.Truth)
	}
	var d TruthData
	if err := decodeStrict(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if d.Format != TruthFormat || d.Module != module || d.Version != v.Version {
		return nil, fmt.Errorf("%s: format %q for %s@%s, want %q for %s@%s", file, d.Format, d.Module, d.Version, TruthFormat, module, v.Version)
	}
	if err := d.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &d, nil
}

// check verifies every index and verdict of the records.
func (d *TruthData) check() error {
	unitOK := func(i int) bool { return i >= 0 && i < len(d.Units) }
	verdictOK := func(v string) bool { return v == verdictTrue || v == verdictFalse || v == verdictUnjudged }
	for _, l := range d.Locations {
		if !unitOK(l.Unit) || !verdictOK(l.Verdict) {
			return fmt.Errorf("location %+v: bad unit or verdict", l)
		}
	}
	for _, s := range d.Sites {
		if (s.Unit != -1 && !unitOK(s.Unit)) || !verdictOK(s.Verdict) {
			return fmt.Errorf("site %+v: bad unit or verdict", s)
		}
	}
	for _, f := range d.TestFiles {
		if !verdictOK(f.Verdict) {
			return fmt.Errorf("test file %+v: bad verdict", f)
		}
	}
	for _, r := range d.Reach {
		if !verdictOK(r.Verdict) {
			return fmt.Errorf("reach %+v: bad verdict", r)
		}
	}
	for _, f := range d.Functions {
		if !unitOK(f) {
			return fmt.Errorf("function %d: no such unit", f)
		}
	}
	for _, r := range d.Runs {
		for _, e := range r.Entries {
			if e < -len(d.Functions) || e >= len(d.Functions) {
				return fmt.Errorf("run %s%s: entry %d out of range", r.Test, r.Scenario, e)
			}
		}
	}
	for _, s := range d.Scenarios {
		if !slices.Contains([]string{"tests", "test", "command"}, s.Kind) {
			return fmt.Errorf("scenario %q: kind %q", s.Scenario, s.Kind)
		}
	}
	return nil
}
