package complete

import (
	"slices"
	"strings"
)

// command is a Command as its help reads.
type command struct {
	path  []string
	forms []form
	flags []Flag // the Flags section's, for every form
}

// form is one "Usage:" line of a command (with its continuation lines).
type form struct {
	verbs []string // the verbs it names after the path ("set"; "bash|zsh|fish"), or none
	flags []Flag
}

func (p Program) parse() []command {
	cmds := make([]command, 0, len(p.Commands))
	for _, c := range p.Commands {
		cmds = append(cmds, parseCommand(p.Name, c))
	}
	return cmds
}

// parseCommand reads the usage lines and the Flags section of c's help.
// The usage lines run from "Usage:" to the first blank line; a line that
// starts with the program's name starts a form, any other continues one.
// The Flags section runs from a line ending in "Flags:" to the next blank
// line; a line indented deeper than its entries continues the description
// of the entry above.
func parseCommand(prog string, c Command) command {
	cmd := command{path: strings.Fields(c.Path)}
	inUsage, inFlags := false, false
	var entry []Flag // the Flags section's last entry
	for line := range strings.Lines(c.Usage) {
		line = strings.TrimRight(line, "\n")
		text := strings.TrimSpace(line)
		switch {
		case text == "":
			inUsage, inFlags = false, false
		case strings.HasPrefix(line, "Usage:"):
			inUsage = true
			cmd.addUsage(prog, strings.Fields(strings.TrimPrefix(line, "Usage:")))
		case inUsage:
			cmd.addUsage(prog, strings.Fields(text))
		case strings.HasSuffix(text, "Flags:"):
			inFlags = true
		case inFlags && strings.HasPrefix(line, "  -"):
			entry = flagLine(text)
			cmd.flags = append(cmd.flags, entry...)
		case inFlags && strings.HasPrefix(line, "   "):
			cmd.describe(entry, text)
		}
	}
	return cmd
}

// describe continues the description of the flags of a Flags entry.
func (cmd *command) describe(entry []Flag, text string) {
	for i := range cmd.flags {
		if slices.ContainsFunc(entry, func(f Flag) bool { return f.Name == cmd.flags[i].Name }) {
			f := &cmd.flags[i]
			f.Desc = strings.TrimSpace(f.Desc + " " + text)
			f.Repeat = f.Repeat || strings.Contains(f.Desc, "repeat")
		}
	}
}

// addUsage adds a usage line: a form of its own when it names the program
// ("needle config get [--data-dir DIR] KEY"), else the last form's
// continuation.
func (cmd *command) addUsage(prog string, words []string) {
	if len(words) > 0 && words[0] == prog {
		words = words[1:]
		for _, w := range cmd.path {
			if len(words) > 0 && words[0] == w {
				words = words[1:]
			}
		}
		var f form
		if len(words) > 0 && isWordList(words[0]) {
			f.verbs, words = strings.Split(words[0], "|"), words[1:]
		}
		cmd.forms = append(cmd.forms, f)
	}
	if len(cmd.forms) == 0 {
		return
	}
	last := &cmd.forms[len(cmd.forms)-1]
	last.flags = append(last.flags, usageFlags(words)...)
}

// isWordList says whether a usage word is a verb, or verbs separated by |:
// lower-case words, not a flag, a metavariable or an optional part.
func isWordList(word string) bool {
	for v := range strings.SplitSeq(word, "|") {
		if v == "" || v[0] < 'a' || v[0] > 'z' || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return false
		}
	}
	return true
}

// usageFlags reads the flags of usage words: [--name ARG], --name ARG,
// [--name], [--a|--b]. A flag takes the word after it as its argument
// unless its bracket closes first or that word is a flag, an optional
// part or a bar.
func usageFlags(words []string) []Flag {
	var flags []Flag
	for i := 0; i < len(words); i++ {
		word, closed := unbracket(words[i])
		var names []string
		for part := range strings.SplitSeq(word, "|") {
			if isFlag(part) {
				names = append(names, part)
			}
		}
		if len(names) == 0 {
			continue
		}
		arg := ""
		if next := i + 1; !closed && len(names) == 1 && next < len(words) && !strings.HasPrefix(words[next], "[") &&
			!strings.HasPrefix(words[next], "-") && words[next] != "|" {
			arg, _ = unbracket(words[next])
			i++
		}
		for _, n := range names {
			flags = append(flags, Flag{Name: n, Arg: arg, Repeat: strings.HasSuffix(arg, "...")})
		}
	}
	return flags
}

// unbracket strips the brackets a usage word opens and the ones it closes
// but did not open ("[--a", "DIR]", "FILE]]"), and says whether it closed
// one. PATH[,PATH...] keeps its own.
func unbracket(word string) (string, bool) {
	word = strings.TrimLeft(word, "[(")
	closed := false
	for word != "" && (strings.Count(word, "]") > strings.Count(word, "[") || strings.Count(word, ")") > strings.Count(word, "(")) {
		word, closed = word[:len(word)-1], true
	}
	return word, closed
}

// isFlag says whether a word is a flag's name: --name.
func isFlag(word string) bool {
	return len(word) > 2 && strings.HasPrefix(word, "--") && word[2] != '-'
}

// flagLine reads an entry of a Flags section: "--name ARG   description",
// or several flags: "--max-files N, --max-bytes N, --note TEXT   …". An
// argument is upper case; the first word that is neither a flag nor an
// argument starts the description.
func flagLine(text string) []Flag {
	words := strings.Fields(text)
	var flags []Flag
	i := 0
	for i < len(words) && isFlag(strings.TrimSuffix(words[i], ",")) {
		f := Flag{Name: strings.TrimSuffix(words[i], ",")}
		i++
		if i < len(words) && isMetavar(strings.TrimSuffix(words[i], ",")) {
			f.Arg = strings.TrimSuffix(words[i], ",")
			i++
		}
		flags = append(flags, f)
	}
	desc := strings.Join(words[i:], " ")
	for j := range flags {
		flags[j].Desc = desc
		flags[j].Repeat = strings.HasSuffix(flags[j].Arg, "...") || strings.Contains(desc, "repeat")
	}
	return flags
}

// isMetavar says whether a word is a flag's argument in a Flags section:
// upper case, as DIR, N or TEXT....
func isMetavar(word string) bool {
	return strings.ToUpper(word) == word && strings.ToLower(word) != word
}

// verbs lists the command's verbs, in the order of its forms.
func (cmd command) verbs() []string {
	var verbs []string
	for _, f := range cmd.forms {
		for _, v := range f.verbs {
			if !slices.Contains(verbs, v) {
				verbs = append(verbs, v)
			}
		}
	}
	return verbs
}

// flagsFor merges the flags of the forms of verb ("": of every form) and
// of the Flags section, each once: its argument and description from
// wherever the help gives them.
func (cmd command) flagsFor(verb string) []Flag {
	var all []Flag
	for _, f := range cmd.forms {
		if verb == "" || slices.Contains(f.verbs, verb) {
			all = append(all, f.flags...)
		}
	}
	all = append(all, cmd.flags...)
	var merged []Flag
	for _, f := range all {
		i := slices.IndexFunc(merged, func(m Flag) bool { return m.Name == f.Name })
		if i < 0 {
			merged = append(merged, f)
			continue
		}
		m := &merged[i]
		m.Repeat = m.Repeat || f.Repeat
		if m.Arg == "" {
			m.Arg = f.Arg
		}
		if m.Desc == "" {
			m.Desc = f.Desc
		}
	}
	return merged
}

// descIndent is the column a summary's descriptions start at.
const descIndent = 20

// Summary reads the Commands section of a program's one help (needlebench
// --help) as commands: an entry "  NAME [VERB] SYNOPSIS" indented by two,
// its synopsis continued on lines that start with "[" or "-" short of the
// description's column, its description after a run of three blanks or on
// the lines below. A name with several entries gets one Command whose
// Usage holds each synopsis as a form.
func Summary(prog, help string) []Command {
	var names []string
	synopses := map[string][]string{}
	in, last := false, ""
	for line := range strings.Lines(help) {
		line = strings.TrimRight(line, "\n")
		text := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case line == "Commands:":
			in = true
		case !in:
		case text == "":
			in = len(names) == 0
		case indent == 2:
			synopsis, _, _ := strings.Cut(text, "   ")
			last = strings.Fields(synopsis)[0]
			if _, ok := synopses[last]; !ok {
				names = append(names, last)
			}
			synopses[last] = append(synopses[last], synopsis)
		case indent < descIndent && last != "" && (text[0] == '[' || text[0] == '-'):
			s := synopses[last]
			s[len(s)-1] += " " + text
		}
	}
	cmds := make([]Command, 0, len(names))
	for _, name := range names {
		cmds = append(cmds, Command{Path: name, Usage: "Usage: " + prog + " " + strings.Join(synopses[name], "\n       "+prog+" ") + "\n"})
	}
	return cmds
}
