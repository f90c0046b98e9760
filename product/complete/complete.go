// Package complete completes a command line from the help of a command
// table, for the shell completion scripts of needle and needlebench. A
// script is a few lines: it runs the program back with the words typed so
// far (PROG __complete WORDS…) and the program answers from the very help
// text its --help prints, so completion never drifts from the commands it
// completes. It reads nothing but its arguments: no store, no runtime, no
// file, no environment.
//
// A command's help names what is completed: its "Usage:" lines (a verb
// after the command's path, as in "needle config set …", and the flags of
// each form) and its "Flags:" section (one flag, or several separated by
// commas, at the start of a line indented by two, with its description).
// A flag's argument tells what its value completes to: a|b|c those words,
// a DIR directories, a FILE, PATH or BIN file names, anything else the
// shell's default.
package complete

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Hidden is the command the scripts run the program with: PROG __complete
// WORDS… answers on stdout (Reply.Write), always exits 0 and writes nothing
// to stderr. It is in no command table and no help.
const Hidden = "__complete"

// Command is one command of a table: its path ("change run") and its
// help text.
type Command struct {
	Path  string
	Usage string
}

// Program is a program to complete: its name and its command table.
type Program struct {
	Name     string
	Commands []Command
	// Flags are the flags the program takes in place of a command
	// ("--help", "--version").
	Flags []string
	// HelpCommand: "NAME help COMMAND…" names a command (needle's help
	// command, which is in no table).
	HelpCommand bool
}

// Flag is a flag a command's help documents.
type Flag struct {
	Name string // "--data-dir"
	Arg  string // its value's metavariable ("DIR", "new-turn|continue-working"); "" for a boolean flag
	Desc string // its description in the Flags section, or ""
	// Repeat: the flag may be given more than once ("TEXT...", or
	// "repeat" in its description).
	Repeat bool
}

// Mode says what the shell completes the current word to.
type Mode string

const (
	// Words: Reply.Words, and nothing else.
	Words Mode = "words"
	// Dirs: directory names.
	Dirs Mode = "dirs"
	// Files: file (and directory) names.
	Files Mode = "files"
	// Default: whatever the shell completes by default (file names in
	// bash, zsh and fish): a positional argument, an ID, a value Needle
	// has no list of.
	Default Mode = "default"
)

// Candidate is one word the current word completes to.
type Candidate struct {
	Word string
	Desc string
}

// Reply is the answer to a completion request.
type Reply struct {
	Mode Mode
	// Prefix is the part of the current word before the value to
	// complete ("--data-dir=" of "--data-dir=/tm"): the shell completes
	// the rest and puts Prefix back in front.
	Prefix string
	Words  []Candidate
}

// Write writes r in the protocol the scripts read: a first line with the
// mode (and the prefix, after a blank), then one candidate a line, its
// description after a tab.
func (r Reply) Write(w io.Writer) error {
	b := bufio.NewWriter(w)
	b.WriteString(string(r.Mode))
	if r.Prefix != "" {
		b.WriteString(" " + r.Prefix)
	}
	b.WriteByte('\n')
	for _, c := range r.Words {
		b.WriteString(c.Word)
		if c.Desc != "" {
			b.WriteString("\t" + c.Desc)
		}
		b.WriteByte('\n')
	}
	return b.Flush()
}

// Complete answers the completion of words, the words after the program's
// name up to the one under the cursor, which is the last ("" when the
// cursor follows a blank).
func (p Program) Complete(words []string) Reply {
	cur, before := "", words
	if n := len(words); n > 0 {
		cur, before = words[n-1], words[:n-1]
	}
	cmds := p.parse()
	if p.HelpCommand && len(before) > 0 && before[0] == "help" {
		return wordsReply(nextWords(cmds, before[1:]), cur)
	}
	for _, cmd := range cmds {
		if len(before) >= len(cmd.path) && slices.Equal(before[:len(cmd.path)], cmd.path) {
			return cmd.complete(before[len(cmd.path):], cur)
		}
	}
	if strings.HasPrefix(cur, "-") {
		if len(before) == 0 {
			return wordsReply(p.Flags, cur)
		}
		return wordsReply([]string{"--help"}, cur)
	}
	next := nextWords(cmds, before)
	if len(before) == 0 && p.HelpCommand {
		next = append(next, "help")
	}
	if len(next) == 0 {
		return Reply{Mode: Default} // not a command: the shell's guess is as good
	}
	return wordsReply(next, cur)
}

// CommandVerbs returns the verbs of the command at path ("set", "get",
// "list" of needle config), in the order of its usage.
func (p Program) CommandVerbs(path string) []string {
	for _, cmd := range p.parse() {
		if strings.Join(cmd.path, " ") == path {
			return cmd.verbs()
		}
	}
	return nil
}

// CommandFlags returns the flags the help of the command at path
// documents for verb ("" for a command without verbs, or for every verb).
func (p Program) CommandFlags(path, verb string) []Flag {
	for _, cmd := range p.parse() {
		if strings.Join(cmd.path, " ") == path {
			return cmd.flagsFor(verb)
		}
	}
	return nil
}

// nextWords lists the words that follow prefix in the commands' paths.
func nextWords(cmds []command, prefix []string) []string {
	var next []string
	for _, cmd := range cmds {
		if len(cmd.path) > len(prefix) && slices.Equal(cmd.path[:len(prefix)], prefix) && !slices.Contains(next, cmd.path[len(prefix)]) {
			next = append(next, cmd.path[len(prefix)])
		}
	}
	return next
}

func wordsReply(words []string, cur string) Reply {
	r := Reply{Mode: Words}
	for _, w := range words {
		if strings.HasPrefix(w, cur) {
			r.Words = append(r.Words, Candidate{Word: w})
		}
	}
	return r
}

// complete completes cur after args, the words that follow the command's
// path. It reads args as the command's flag package does: a verb first
// when the command has verbs, then flags (a flag that takes a value
// takes the next word, unless it is written --flag=value), up to the first
// argument that is no flag or "--", after which no word is a flag.
func (cmd command) complete(args []string, cur string) Reply {
	verb := ""
	if verbs := cmd.verbs(); len(verbs) > 0 {
		if len(args) == 0 {
			if strings.HasPrefix(cur, "-") {
				return wordsReply([]string{"--help"}, cur)
			}
			return wordsReply(verbs, cur)
		}
		verb, args = args[0], args[1:]
		if !slices.Contains(verbs, verb) {
			return Reply{Mode: Default}
		}
	}
	flags := cmd.flagsFor(verb)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			return Reply{Mode: Default} // the arguments began
		}
		f := lookup(flags, a)
		if i+1 < len(args) && args[i+1] == "=" {
			// bash splits --flag=value into three words at its word break "=".
			if i+2 == len(args) {
				return valueReply(f, "", cur)
			}
			i += 2
			continue
		}
		if strings.Contains(a, "=") || f == nil || f.Arg == "" {
			continue
		}
		if i+1 == len(args) { // cur is this flag's value ("=" in bash: "--flag=" typed)
			return valueReply(f, "", strings.TrimPrefix(cur, "="))
		}
		i++
	}
	if !strings.HasPrefix(cur, "-") {
		return Reply{Mode: Default}
	}
	if name, value, ok := strings.Cut(cur, "="); ok {
		return valueReply(lookup(flags, name), name+"=", value)
	}
	return flagsReply(flags, args, cur)
}

// lookup finds the flag a word names (-name, --name or --name=value).
func lookup(flags []Flag, word string) *Flag {
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	for i := range flags {
		if strings.TrimLeft(flags[i].Name, "-") == name {
			return &flags[i]
		}
	}
	return nil
}

// valueReply completes the value of f, typed as value after prefix.
func valueReply(f *Flag, prefix, value string) Reply {
	switch {
	case f == nil || f.Arg == "":
		return Reply{Mode: Words} // no such flag, or one that takes no value
	case strings.Contains(f.Arg, "|") && isWordList(f.Arg): // new-turn|continue-working
		r := wordsReply(strings.Split(f.Arg, "|"), value)
		r.Prefix = prefix
		return r
	case strings.Contains(f.Arg, "FILE") || strings.Contains(f.Arg, "PATH") || strings.Contains(f.Arg, "BIN"):
		return Reply{Mode: Files, Prefix: prefix}
	case strings.Contains(f.Arg, "DIR"):
		return Reply{Mode: Dirs, Prefix: prefix}
	}
	return Reply{Mode: Default, Prefix: prefix}
}

// flagsReply lists the flags that complete cur, leaving out those args
// already give (unless they repeat), and --help.
func flagsReply(flags []Flag, args []string, cur string) Reply {
	r := Reply{Mode: Words}
	for _, f := range append(slices.Clone(flags), Flag{Name: "--help"}) {
		given := slices.ContainsFunc(args, func(a string) bool { return lookup([]Flag{f}, a) != nil })
		if strings.HasPrefix(f.Name, cur) && (!given || f.Repeat) {
			r.Words = append(r.Words, Candidate{Word: f.Name, Desc: f.Desc})
		}
	}
	return r
}

// Drift compares the flags a command's flag set defines with the flags its
// help documents for path and verb: it returns "" when they are the same
// names, each taking a value in both or in neither, and otherwise says how
// they differ. The tests of every command table call it, so completion,
// which reads the help, cannot drift from what the command accepts.
func (p Program) Drift(fs *flag.FlagSet, path, verb string) string {
	defined := map[string]bool{} // flag name → it takes a value
	fs.VisitAll(func(f *flag.Flag) {
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		defined[f.Name] = !ok || !b.IsBoolFlag()
	})
	documented := map[string]bool{}
	for _, f := range p.CommandFlags(path, verb) {
		documented[strings.TrimPrefix(f.Name, "--")] = f.Arg != ""
	}
	if maps.Equal(defined, documented) {
		return ""
	}
	return fmt.Sprintf("its flag set defines %v, its help documents %v (flag: takes a value)", defined, documented)
}
