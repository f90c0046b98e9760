package complete

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// prog is a small program in the help styles the parser reads: verbs on
// usage lines of their own, a continued usage line, bracketed and bare
// flags, a Flags section with shared and continued entries.
var prog = Program{
	Name:        "tool",
	Flags:       []string{"--help", "--version"},
	HelpCommand: true,
	Commands: []Command{
		{"item add", `Usage: tool item add [--dir DIR] --name TEXT... [--mode fast|slow]
                     [--out FILE] [--force] NAME

Flags:
  --name TEXT     a name (repeat)
  --force         overwrite
  --a N, --b N    the bounds, which the
                  next line goes on describing
`},
		{"item remove", "Usage: tool item remove [--dir DIR] ID\n"},
		{"conf", `Usage: tool conf set [--dir DIR] KEY VALUE
       tool conf get [--dir DIR] [--raw] KEY

Keys:
  --not-a-flag    outside a Flags section
`},
		{"install", "Usage: tool install --codex [--user|--project]\n"},
	},
}

func words(r Reply) []string {
	var w []string
	for _, c := range r.Words {
		w = append(w, c.Word)
	}
	return w
}

func TestComplete(t *testing.T) {
	for _, tc := range []struct {
		line  string // the words, the last one after the last blank
		mode  Mode
		want  []string
		other string // Reply.Prefix
	}{
		{"", Words, []string{"item", "conf", "install", "help"}, ""},
		{"i", Words, []string{"item", "install"}, ""},
		{"-", Words, []string{"--help", "--version"}, ""},
		{"item ", Words, []string{"add", "remove"}, ""},
		{"item -", Words, []string{"--help"}, ""},
		{"help item r", Words, []string{"remove"}, ""},
		{"help item remove ", Words, nil, ""},
		{"item add --", Words, []string{"--dir", "--name", "--mode", "--out", "--force", "--a", "--b", "--help"}, ""},
		// A flag given is not offered again, unless it repeats.
		{"item add --force --name x --dir d --", Words, []string{"--name", "--mode", "--out", "--a", "--b", "--help"}, ""},
		{"item add --dir ", Dirs, nil, ""},
		{"item add --out ", Files, nil, ""},
		{"item add --name ", Default, nil, ""},
		{"item add --mode s", Words, []string{"slow"}, ""},
		{"item add --mode=", Words, []string{"fast", "slow"}, "--mode="},
		{"item add --out=x", Files, nil, "--out="},
		{"item add --force=", Words, nil, ""},
		// bash splits --dir=x into "--dir", "=", "x", and --dir= into "--dir", "=".
		{"item add --dir = x", Dirs, nil, ""},
		{"item add --dir =", Dirs, nil, ""},
		{"item add --dir = x --f", Words, []string{"--force"}, ""},
		// The flag package stops at the first argument, and after "--".
		{"item add NAME --", Default, nil, ""},
		{"item add -- --", Default, nil, ""},
		{"item add --force -", Words, []string{"--dir", "--name", "--mode", "--out", "--a", "--b", "--help"}, ""},
		// A verb comes before the flags; each verb has its own.
		{"conf ", Words, []string{"set", "get"}, ""},
		{"conf -", Words, []string{"--help"}, ""},
		{"conf get --", Words, []string{"--dir", "--raw", "--help"}, ""},
		{"conf set --", Words, []string{"--dir", "--help"}, ""},
		{"conf frob --", Default, nil, ""},
		{"install --", Words, []string{"--codex", "--user", "--project", "--help"}, ""},
		{"install --codex ", Default, nil, ""},
		{"nosuch ", Default, nil, ""},
	} {
		args := strings.Split(tc.line, " ")
		r := prog.Complete(args)
		if r.Mode != tc.mode || !reflect.DeepEqual(words(r), tc.want) || r.Prefix != tc.other {
			t.Errorf("complete %q: %s %q %v; want %s %q %v", tc.line, r.Mode, r.Prefix, words(r), tc.mode, tc.other, tc.want)
		}
	}
}

func TestFlags(t *testing.T) {
	want := []Flag{
		{Name: "--dir", Arg: "DIR"},
		{Name: "--name", Arg: "TEXT...", Desc: "a name (repeat)", Repeat: true},
		{Name: "--mode", Arg: "fast|slow"},
		{Name: "--out", Arg: "FILE"},
		{Name: "--force", Desc: "overwrite"},
		{Name: "--a", Arg: "N", Desc: "the bounds, which the next line goes on describing"},
		{Name: "--b", Arg: "N", Desc: "the bounds, which the next line goes on describing"},
	}
	if got := prog.CommandFlags("item add", ""); !reflect.DeepEqual(got, want) {
		t.Errorf("flags of item add:\n got %+v\nwant %+v", got, want)
	}
	if got := prog.CommandVerbs("conf"); !reflect.DeepEqual(got, []string{"set", "get"}) {
		t.Errorf("verbs of conf: %q", got)
	}
}

func TestReplyWrite(t *testing.T) {
	var b bytes.Buffer
	r := Reply{Mode: Words, Prefix: "--mode=", Words: []Candidate{{Word: "fast", Desc: "quick"}, {Word: "slow"}}}
	if err := r.Write(&b); err != nil || b.String() != "words --mode=\nfast\tquick\nslow\n" {
		t.Errorf("write: %q, %v", b.String(), err)
	}
}

// TestSummary reads a one-help program's Commands section: entries, their
// continued synopses, verbs, and a name with two entries.
func TestSummary(t *testing.T) {
	help := `bench is a harness.

Usage:
  bench <command> [arguments]

Commands:
  replay --transcripts PATH[,PATH...] [app-server]
                    stand in for a server
  corpus generate --name NAME [--seed N]
                  [--codex BIN | --unsandboxed] MODULE@OLD,NEW...
                    generate a corpus, [--not-this] --nor-this
  record [--codex BIN] CORPUS
                    re-record
  record --codex BIN --repository DIR|FILE.txtar --out DIR
                    record one
  experiment alpha [--calls N]
        [--grow] [--work DIR]
                    time alpha
  experiment beta --file FILE
                    time beta
  version           print the version
  help              print this help

Exit status: 0 success.
`
	p := Program{Name: "bench", Commands: Summary("bench", help)}
	var names []string
	for _, c := range p.Commands {
		names = append(names, c.Path)
	}
	if want := []string{"replay", "corpus", "record", "experiment", "version", "help"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("commands %q, want %q", names, want)
	}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"replay --", []string{"--transcripts", "--help"}},
		{"corpus ", []string{"generate"}},
		{"corpus generate --", []string{"--name", "--seed", "--codex", "--unsandboxed", "--help"}},
		{"record --", []string{"--codex", "--repository", "--out", "--help"}},
		{"experiment ", []string{"alpha", "beta"}},
		{"experiment alpha --", []string{"--calls", "--grow", "--work", "--help"}},
		{"experiment beta --", []string{"--file", "--help"}},
		{"version --", []string{"--help"}},
	} {
		if got := words(p.Complete(strings.Split(tc.line, " "))); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("complete %q: %q, want %q", tc.line, got, tc.want)
		}
	}
	for line, mode := range map[string]Mode{
		"replay --transcripts ":    Files,
		"record --repository ":     Files, // DIR|FILE.txtar
		"experiment alpha --work ": Dirs,
		"corpus generate --codex ": Files, // BIN
	} {
		if r := p.Complete(strings.Split(line, " ")); r.Mode != mode {
			t.Errorf("complete %q: %s, want %s", line, r.Mode, mode)
		}
	}
}

func TestScript(t *testing.T) {
	for _, shell := range Shells {
		s, err := Script(shell, "tool")
		if err != nil || strings.Contains(s, "PROG") || !strings.Contains(s, " "+Hidden+" ") {
			t.Errorf("%s: %v\n%s", shell, err, s)
		}
	}
	if _, err := Script("tcsh", "tool"); err == nil || !strings.Contains(err.Error(), `unknown shell "tcsh"`) {
		t.Errorf("tcsh: %v", err)
	}
	if _, err := Script("bash", "x; rm -rf ~"); err == nil {
		t.Error("a program name that is not a plain name was written into a script")
	}
}
