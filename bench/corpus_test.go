package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCorpus_DefaultDialect: the bundled default corpus speaks the natural
// dialect and holds every class of wrong answer, so that the validators
// are measured on what models write and on every way they are wrong, and
// right flows for "default", in prose and for a named test (urfave/cli's
// ShowAppHelp through the HelpPrinter variable). (A regeneration that lost
// a class or a form fails here.)
func TestCorpus_DefaultDialect(t *testing.T) {
	c, err := LoadCorpus("../corpus/default")
	if err != nil {
		t.Fatal(err)
	}
	answers, err := distinctAnswers(c)
	if err != nil {
		t.Fatal(err)
	}
	commands := map[string]*regexp.Regexp{
		"-run TestX .":         regexp.MustCompile(`^go test -run Test\S+ \.$`),
		"./... -run TestX":     regexp.MustCompile(`^go test \./\.\.\. -run Test\S+$`),
		"-run '^TestX$' ./":    regexp.MustCompile(`^go test -run '\^Test\S+\$' \./(\S+/)?$`),
		"-v":                   regexp.MustCompile(`^go test -v -run `),
		"-run=TestX":           regexp.MustCompile(`^go test -run=Test`),
		"-count=1":             regexp.MustCompile(`^go test -count=1 `),
		"double quotes":        regexp.MustCompile(`^go test -run "`),
		"import path":          regexp.MustCompile(`^go test github\.com/\S+ -run Test`),
		"-timeout 30s":         regexp.MustCompile(`^go test -timeout 30s -run \^Test\S+\$ github\.com/`),
		"canonical ./dir form": regexp.MustCompile(`^go test \.(/\S+)? -run '\^Test\S+\$'$`),
	}
	seenCmd := map[string]bool{}
	scenarios := map[string]int{} // of right flows: default, prose, a named test
	helpPrinter := false          // a right flow through urfave/cli's HelpPrinter
	classes := map[string]int{}
	kinds := map[string]int{}
	var dotPaths, subtests int
	flags := map[string]bool{}
	for _, a := range answers {
		kinds[a.Kind]++
		classes[a.Intended]++
		if a.subj.Kind == "cli_option" {
			flags[a.Module+"@"+a.Version+" "+a.subj.Name] = true
		}
		var p struct {
			Path     string `json:"path"`
			Scenario string `json:"scenario"`
			Steps    []struct {
				Path string `json:"path"`
			} `json:"steps"`
			Tests []struct {
				Path, Name, Command string
			} `json:"tests"`
		}
		if err := json.Unmarshal(a.proposal, &p); err != nil {
			t.Fatal(err)
		}
		if a.Kind == "runtime_flow" && a.Intended == "" {
			switch {
			case p.Scenario == "default":
				scenarios["default"]++
			case strings.Contains(p.Scenario, "Test"):
				scenarios["named test"]++
				if a.Module == "github.com/urfave/cli/v2" && a.subj.Name == "ShowAppHelp" && len(p.Steps) >= 2 {
					helpPrinter = true
				}
			default:
				scenarios["prose"]++
			}
		}
		paths := []string{p.Path}
		for _, s := range p.Steps {
			paths = append(paths, s.Path)
		}
		for _, tr := range p.Tests {
			paths = append(paths, tr.Path)
			if strings.Contains(tr.Name, "/") {
				subtests++
			}
			for name, re := range commands {
				if re.MatchString(tr.Command) {
					seenCmd[name] = true
				}
			}
		}
		if slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(p, "./") }) {
			dotPaths++
		}
	}
	for name := range commands {
		if !seenCmd[name] {
			t.Errorf("no test answer runs its test with %s", name)
		}
	}
	want := []string{"", "older_version"}
	for _, list := range wrongClasses {
		want = append(want, list...)
	}
	for _, class := range want {
		if classes[class] == 0 {
			t.Errorf("no answer of class %q", class)
		}
	}
	for _, k := range []string{"implementation_location", "runtime_flow", "focused_tests"} {
		if kinds[k] == 0 {
			t.Errorf("no %s answer", k)
		}
	}
	for _, sc := range []string{"default", "prose", "named test"} {
		if scenarios[sc] == 0 {
			t.Errorf("no right flow with a %s scenario (%v)", sc, scenarios)
		}
	}
	if !helpPrinter {
		t.Error("no right flow of urfave/cli's ShowAppHelp through HelpPrinter in the test that takes it")
	}
	if dotPaths == 0 || subtests == 0 {
		t.Errorf("%d answers cite ./ paths, %d tests are subtests; want some of each", dotPaths, subtests)
	}
	for _, f := range []string{"github.com/spf13/cobra@v1.8.1 --help", "github.com/spf13/cobra@v1.9.1 --help"} {
		if !flags[f] {
			t.Errorf("no answer about %s (a literal flag name in v1.8.1, a constant in v1.9.1)", f)
		}
	}
	t.Logf("%d distinct answers: %v; classes %v", len(answers), kinds, classes)
}

// TestCorpus_ModuleIsOneSubject: a module listed as two subjects is
// refused when the corpus loads, since play and validation give each
// module's work tree to one goroutine.
func TestCorpus_ModuleIsOneSubject(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"manifest.json", "sessions.jsonl"} {
		data, err := os.ReadFile(filepath.Join("../corpus/tiny", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "manifest.json" {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			subjects := m["subjects"].([]any)
			m["subjects"] = append(subjects, subjects[0])
			if data, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadCorpus("../corpus/tiny"); err != nil {
		t.Fatalf("the bundled tiny corpus: %v", err)
	}
	_, err := LoadCorpus(dir)
	if err == nil || !strings.Contains(err.Error(), "github.com/pkg/errors is a subject twice") {
		t.Fatalf("a module listed twice: got %v", err)
	}
}
