package bench

import (
	"bytes"
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestCompletion_HelpIsTheFlagSet: completion reads needlebench's commands
// and flags from its help's Commands section, so that section must name
// every command of the table and, for each, the flags its flag set defines,
// no more and no fewer; a flag takes a value exactly when the help gives it
// an argument. Each command is asked for its help (-h), which runs nothing.
func TestCompletion_HelpIsTheFlagSet(t *testing.T) {
	prog := completionProgram()
	var listed []string
	for _, c := range prog.Commands {
		listed = append(listed, c.Path)
	}
	var table []string
	for _, c := range commands {
		table = append(table, c.name)
	}
	if want := append(table, "help"); !slices.Equal(slices.Sorted(slices.Values(listed)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("needlebench --help lists %q; the command table is %q (and help)", listed, table)
	}
	for _, c := range commands {
		verbs := prog.CommandVerbs(c.name)
		if c.name == "completion" || len(verbs) == 0 {
			verbs = []string{""} // completion's verbs are arguments, after its flags
		}
		for _, verb := range verbs {
			args := []string{"-h"}
			if verb != "" {
				args = []string{verb, "-h"}
			}
			var sets []*flag.FlagSet
			var out, errb bytes.Buffer
			h := &harness{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
				sawFlags: func(fs *flag.FlagSet) { sets = append(sets, fs) }}
			name := strings.TrimSpace(c.name + " " + verb)
			code := c.run(h, args)
			fs := flag.NewFlagSet(name, flag.ContinueOnError) // none: a command without flags
			switch {
			case len(sets) == 0 && code == 2: // a command without flags (version) refuses -h as an argument
			case len(sets) != 1 || code != 2 || !strings.Contains(errb.String(), "help requested"):
				t.Errorf("needlebench %s -h: exit %d, %d flag sets, stderr %.200q; want the usage error of -h and one flag set", name, code, len(sets), errb.String())
				continue
			default:
				fs = sets[0]
			}
			if drift := prog.Drift(fs, c.name, verb); drift != "" {
				t.Errorf("needlebench %s: %s", name, drift)
			}
		}
	}
}
