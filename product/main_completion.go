package product

import (
	"fmt"
	"slices"

	"github.com/needle-dev/needle/product/complete"
)

const usageCompletion = `Usage: needle completion bash
       needle completion zsh
       needle completion fish

Print a script that completes needle's command lines in the shell: the
commands and their subcommands, the flags of the command being typed, the
values of --coordination, and file and directory names after the flags that
take a FILE or a DIR. IDs and other arguments are left to the shell's own
completion. The script is small: it asks the needle it runs (the hidden
'needle __complete WORDS...', which reads nothing but the help of this
binary: no store, no runtime), so it always completes what the installed
binary takes.

Install it:
  bash   add to ~/.bashrc:  source <(needle completion bash)
  zsh    add to ~/.zshrc, after compinit:  source <(needle completion zsh)
         (or save it as _needle in a directory of $fpath, before compinit runs)
  fish   needle completion fish > ~/.config/fish/completions/needle.fish
         (or, for this session: needle completion fish | source)
`

func (c *cli) completion(args []string) int {
	fs := c.flags("completion")
	if code, ok := c.parse(fs, usageCompletion, args); !ok {
		return code
	}
	if fs.NArg() != 1 || !slices.Contains(complete.Shells, fs.Arg(0)) {
		fmt.Fprintf(c.stderr, "needle completion: name one shell: bash, zsh or fish\n\n%s", usageCompletion)
		return 2
	}
	script, err := complete.Script(fs.Arg(0), "needle")
	if err != nil {
		return c.fail("completion", err)
	}
	fmt.Fprint(c.stdout, script)
	return 0
}

// complete answers a completion script: the candidates for the last of
// words, from the command table's help alone. It never fails and never
// writes to stderr: a shell's completion shows no errors.
func (c *cli) complete(words []string) int {
	completionProgram().Complete(words).Write(c.stdout)
	return 0
}

// completionProgram is needle's command table as complete reads it.
func completionProgram() complete.Program {
	p := complete.Program{Name: "needle", Flags: []string{"--help", "--version"}, HelpCommand: true}
	for _, cmd := range commands {
		p.Commands = append(p.Commands, complete.Command{Path: cmd.path, Usage: cmd.usage})
	}
	return p
}
