package testscripts

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// completionCase is a command line typed up to the cursor (a trailing
// blank: the cursor starts a new word) and what the shell must offer:
// exactly want, or, with some, at least want.
type completionCase struct {
	line string
	want []string
	some bool
}

// completionCases hold in every shell. A shell's candidates are compared
// as words: without fish's descriptions, a directory's trailing slash or
// the "--flag=" fish and zsh keep in front of a value.
var completionCases = []completionCase{
	{line: "needle ch", want: []string{"change"}},
	{line: "needle ", want: []string{"change", "completion", "help", "need", "version"}, some: true},
	{line: "needle change a", want: []string{"apply", "approve"}},
	{line: "needle change run --", want: []string{"--codex", "--data-dir", "--help", "--json", "--repository"}},
	{line: "needle change run --json --", want: []string{"--codex", "--data-dir", "--help", "--repository"}},
	{line: "needle change zz", want: nil},
	{line: "needle need resolve --data-dir da", want: []string{"data1", "data2"}},
	{line: "needle need resolve --data-dir=da", want: []string{"data1", "data2"}},
	{line: "needle need compile --m", want: []string{"--marker"}},
	{line: "needle exec --coordination=", want: []string{"continue-working", "new-turn"}},
	{line: "needle exec --record ", want: []string{"data1", "data2"}},
	{line: "needle change start --need ", want: []string{"data1", "data2", "datafile"}},
	{line: "needle help need ", want: []string{"compile", "resolve"}},
	{line: "needle config ", want: []string{"get", "list", "set"}},
	{line: "needle completion ", want: []string{"bash", "fish", "zsh"}},
	{line: "needlebench exp", want: []string{"experiment"}},
	{line: "needlebench experiment mcp-hit-latency --wo", want: []string{"--work"}},
}

// TestCompletion_Shells runs bash, zsh and fish for real, loads the
// scripts `needle completion SHELL` and `needlebench completion SHELL`
// print, as a user would, and asks each shell to complete command lines:
// the scripts call the needle and needlebench on PATH back. The shells
// run in a directory holding data1/, data2/ and the file datafile. A
// missing shell fails the test (apt-get install zsh fish; .ci/run
// installs them).
func TestCompletion_Shells(t *testing.T) {
	needlePath(t)
	work := t.TempDir()
	writeTree(t, work, map[string]string{"data1/x": "", "data2/x": "", "datafile": ""})
	var lines []string
	for _, c := range completionCases {
		lines = append(lines, c.line)
	}
	// zsh-fpath: zsh with the scripts saved as _needle and _needlebench in
	// a directory of $fpath, where compinit autoloads them.
	for _, variant := range []string{"bash", "zsh", "zsh-fpath", "fish"} {
		t.Run(variant, func(t *testing.T) {
			shell, _, _ := strings.Cut(variant, "-")
			if _, err := exec.LookPath(shell); err != nil {
				t.Fatalf("%s is not installed (apt-get install zsh fish; .ci/run installs them): %v", shell, err)
			}
			got := completeIn(t, variant, work, lines)
			for _, c := range completionCases {
				words := completionWords(got[c.line])
				if c.some && !containsAll(words, c.want) || !c.some && !slices.Equal(words, c.want) {
					t.Errorf("%s completes %q to %q (raw %q); want %q", shell, c.line, words, got[c.line], c.want)
				}
			}
		})
	}
}

// completeIn runs shell in dir with the completion scripts loaded and
// returns its completions of lines, each line's candidates as the shell
// printed them.
func completeIn(t *testing.T, variant, dir string, lines []string) map[string][]string {
	t.Helper()
	shell, _, _ := strings.Cut(variant, "-")
	home := t.TempDir()
	scripts := t.TempDir()
	var args []string
	switch shell {
	case "bash":
		args = []string{"--norc", "--noprofile", "-c", bashDriver, "bash"}
	case "zsh":
		load := zshSourced
		if variant == "zsh-fpath" {
			load = zshFpath
		}
		if err := os.WriteFile(filepath.Join(scripts, ".zshrc"), []byte(load+zshInit), 0o644); err != nil {
			t.Fatal(err)
		}
		args = []string{"-f", "-c", zshDriver, "zsh", scripts}
	case "fish":
		args = []string{"--no-config", "-c", fishDriver}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // guards a hang only
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, append(args, lines...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CACHE_HOME="+home, "TERM=dumb")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", shell, err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("%s wrote to stderr (completion must show no errors):\n%s", shell, stderr.String())
	}
	got := map[string][]string{}
	line := ""
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if strings.HasPrefix(l, "<<") && strings.HasSuffix(l, ">>") {
			line = l[2 : len(l)-2]
			got[line] = nil
			continue
		}
		if l != "" {
			got[line] = append(got[line], l)
		}
	}
	for _, l := range lines {
		if _, ok := got[l]; !ok {
			t.Fatalf("%s gave no answer for %q:\n%s", shell, l, stdout.String())
		}
	}
	return got
}

// completionWords reduces a shell's candidates to words: sorted, each once,
// without a description, a trailing slash or a "--flag=" in front of a
// value.
func completionWords(candidates []string) []string {
	var words []string
	for _, c := range candidates {
		c, _, _ = strings.Cut(c, "\t")
		if _, value, ok := strings.Cut(c, "="); ok && strings.HasPrefix(c, "--") {
			c = value
		}
		words = append(words, strings.TrimSuffix(c, "/"))
	}
	slices.Sort(words)
	return slices.Compact(words)
}

func containsAll(words, want []string) bool {
	for _, w := range want {
		if !slices.Contains(words, w) {
			return false
		}
	}
	return true
}

// bashDriver completes each argument as bash would: COMP_WORDS split at
// blanks and, as bash's COMP_WORDBREAKS does, around "=" (--flag=value
// is "--flag" "=" "value"), the function `complete -p` registers called
// with the command, the current and the previous word; COMPREPLY printed.
const bashDriver = `source <(needle completion bash)
source <(needlebench completion bash)
for line in "$@"; do
	words=()
	for w in $line; do
		if [[ $w == -*=* ]]; then
			words+=("${w%%=*}" "=")
			[[ -n ${w#*=} ]] && words+=("${w#*=}")
		else
			words+=("$w")
		fi
	done
	[[ $line == *" " ]] && words+=("")
	spec=$(complete -p "${words[0]}")
	fn=${spec#* -F }
	fn=${fn%% *}
	COMP_WORDS=("${words[@]}")
	COMP_CWORD=$((${#words[@]} - 1))
	COMP_LINE=$line
	COMP_POINT=${#line}
	COMPREPLY=()
	"$fn" "${words[0]}" "${words[COMP_CWORD]}" "${words[COMP_CWORD - 1]}"
	echo "<<$line>>"
	if ((${#COMPREPLY[@]})); then printf '%s\n' "${COMPREPLY[@]}"; fi
done
`

// zshSourced and zshFpath load the completion scripts in the two ways
// needle help completion gives: sourced after compinit, or saved in a
// directory of $fpath before it.
const (
	zshSourced = `autoload -Uz compinit && compinit -u -D
source <(needle completion zsh)
source <(needlebench completion zsh)
`
	zshFpath = `mkdir -p $__dir/fpath
needle completion zsh > $__dir/fpath/_needle
needlebench completion zsh > $__dir/fpath/_needlebench
fpath=($__dir/fpath $fpath)
autoload -Uz compinit && compinit -u -D
`
)

// zshInit ends the .zshrc of the interactive zsh of zshDriver, after the
// scripts are loaded: a compadd that also records every match the
// completion system adds (zsh has no way to list completions outside its
// line editor: the matching stays compadd's own, -O only collects the
// matches as well), and a line-init hook that says when the line editor
// is ready for the next line (zsh discards what is typed before), each
// line's matches going to their own file.
const zshInit = `PS1= RPS1= PROMPT_EOL_MARK=
unsetopt autolist automenu listambiguous
setopt nobeep
compadd() {
	if (( ${@[(I)-[OAD]*]} )); then
		builtin compadd "$@"
		return
	fi
	local -a hits
	builtin compadd -O hits "$@"
	(( $#hits )) && print -rl -- "${hits[@]}" >> $__dir/out.$__lines
	builtin compadd "$@"
}
__lines=0
zle-line-init() {
	(( ++__lines ))
	print -rn -- "<ready:$__lines>"
}
zle -N zle-line-init
`

// zshDriver starts an interactive zsh on a pseudo-terminal (zsh/zpty)
// with its .zshrc as its only start-up file (ZDOTDIR), types each argument, a
// tab, a line kill and a return into it, each once the line editor says
// it is ready, then prints what each completion recorded.
const zshDriver = `zmodload zsh/zpty || exit 3
dir=$1
shift
zpty -b z "__dir=$dir ZDOTDIR=$dir zsh -o no_global_rcs -i"
i=0
for line in "$@"; do
	(( i++ ))
	: > $dir/out.$i
	zpty -r z out "*<ready:$i>*" || exit 4
	zpty -w -n z "$line"$'\t'$'\C-u'$'\n'
done
zpty -r z out "*<ready:$(( i + 1 ))>*" || exit 4
zpty -d z
i=0
for line in "$@"; do
	(( i++ ))
	print -r -- "<<$line>>"
	cat $dir/out.$i
done
`

// fishDriver asks fish's own complete -C for each argument.
const fishDriver = `needle completion fish | source
needlebench completion fish | source
for line in $argv
	echo "<<$line>>"
	complete -C"$line"
end
`
