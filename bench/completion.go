package bench

import (
	"fmt"
	"slices"

	"github.com/needle-dev/needle/product/complete"
)

// completion is needlebench completion bash|zsh|fish: the script that
// completes needlebench's command lines from this binary's help (see
// needle help completion).
func (h *harness) completion(args []string) int {
	fs := h.flags("completion")
	if !h.parse(fs, args) {
		return 2
	}
	if fs.NArg() != 1 || !slices.Contains(complete.Shells, fs.Arg(0)) {
		fmt.Fprintf(h.stderr, "needlebench completion: name one shell: bash, zsh or fish\n\n%s", usage)
		return 2
	}
	script, err := complete.Script(fs.Arg(0), "needlebench")
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench completion: %v\n", err)
		return 1
	}
	fmt.Fprint(h.stdout, script)
	return 0
}

// completionProgram is needlebench's commands as its help's Commands
// section lists them.
func completionProgram() complete.Program {
	return complete.Program{Name: "needlebench", Commands: complete.Summary("needlebench", usage), Flags: []string{"--help"}}
}
