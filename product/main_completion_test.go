package product

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompletion_HelpIsTheFlagSet: completion offers the flags each
// command's help documents, and those are the flags its flag set defines,
// no more and no fewer; a flag takes a value exactly when its help gives it
// an argument. So neither the help nor completion can drift from the
// commands. Asking each command for its help opens nothing.
func TestCompletion_HelpIsTheFlagSet(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	t.Setenv(envDataDir, data)
	prog := completionProgram()
	checked := 0
	for _, cmd := range commands {
		verbs := []string{""}
		if slices.Contains(verbCommands, cmd.path) {
			verbs = prog.CommandVerbs(cmd.path) // otherwise its verbs are arguments, after its flags (completion bash)
		}
		for _, verb := range verbs {
			args := []string{"-h"}
			if verb != "" {
				args = []string{verb, "-h"}
			}
			var sets []*flag.FlagSet
			var out, errb bytes.Buffer
			c := &cli{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
				sawFlags: func(fs *flag.FlagSet) { sets = append(sets, fs) }}
			name := strings.TrimSpace(cmd.path + " " + verb)
			if code := cmd.run(c, args); code != 0 || out.String() != cmd.usage || len(sets) != 1 {
				t.Errorf("needle %s -h: exit %d, %d flag sets, stderr %q; want its usage and one flag set", name, code, len(sets), errb.String())
				continue
			}
			if drift := prog.Drift(sets[0], cmd.path, verb); drift != "" {
				t.Errorf("needle %s: %s", name, drift)
			}
			checked++
		}
	}
	if checked < len(commands) {
		t.Errorf("checked %d forms of %d commands", checked, len(commands))
	}
	if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("asking for help touched the data directory: %v", err)
	}
}

// TestCompletion_Complete: needle __complete answers from the command
// table alone: the mode, then the candidates. It exits 0 and writes
// nothing to stderr whatever it is given, and never touches a data
// directory (it runs before any default is looked up).
func TestCompletion_Complete(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	t.Setenv(envDataDir, data)
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"ch"}, "words\nchange\n"},
		{[]string{"change", "a"}, "words\napprove\napply\n"},
		{[]string{"need", "resolve", "--data-dir", ""}, "dirs\n"},
		{[]string{"need", "resolve", "--data-dir=/t"}, "dirs --data-dir=\n"},
		{[]string{"need", "compile", "--routes", "x", "--m"}, "words\n--marker\tread a @@need marker instead of JSON\n"},
		{[]string{"exec", "--coordination", "c"}, "words\ncontinue-working\n"},
		{[]string{"profile", "s"}, "words\nshow\n"},
		{[]string{"help", "change", "ap"}, "words\napprove\napply\n"},
		{[]string{"completion", ""}, "words\nbash\nzsh\nfish\n"},
		{[]string{"change", "show", "--json", ""}, "default\n"},
		{[]string{"frobnicate", "--x", ""}, "default\n"},
		{[]string{"db", "check", "--frob", "--"}, "words\n--data-dir\n--help\n"},
	} {
		out, errOut, code := runMain(t, "", append([]string{"__complete"}, tc.words...)...)
		if out != tc.want || errOut != "" || code != 0 {
			t.Errorf("needle __complete %q: exit %d, stdout %q, stderr %q; want stdout %q", tc.words, code, out, errOut, tc.want)
		}
	}
	out, errOut, code := runMain(t, "", "__complete")
	if !strings.HasPrefix(out, "words\nneed\nevidence\n") || !strings.HasSuffix(out, "completion\nhelp\n") || errOut != "" || code != 0 {
		t.Errorf("needle __complete: exit %d, stdout %q, stderr %q; want every command", code, out, errOut)
	}
	if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("completion touched the data directory: %v", err)
	}
}

// TestCompletion_Script: needle completion SHELL prints the shell's script,
// which calls this binary back; anything else is a usage error.
func TestCompletion_Script(t *testing.T) {
	for shell, line := range map[string]string{
		"bash": "complete -o default -F _needle_complete needle\n",
		"zsh":  "\tcompdef _needle needle\n",
		"fish": "complete -c needle -f -a '(_needle_complete)'\n",
	} {
		out, errOut, code := runMain(t, "", "completion", shell)
		if code != 0 || errOut != "" || !strings.Contains(out, line) || !strings.Contains(out, " __complete ") {
			t.Errorf("needle completion %s: exit %d, stderr %q, script:\n%s", shell, code, errOut, out)
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		out, errOut, code := runMain(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "name one shell: bash, zsh or fish") {
			t.Errorf("needle %q: exit %d, stdout %q, stderr %q; want a usage error", args, code, out, errOut)
		}
	}
	if out, _, code := runMain(t, "", "completion", "--help"); code != 0 || out != usageCompletion {
		t.Errorf("needle completion --help: exit %d, %q", code, out)
	}
}
