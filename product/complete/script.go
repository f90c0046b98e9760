package complete

import (
	"fmt"
	"strings"
)

// Shells are the shells Script writes for.
var Shells = []string{"bash", "zsh", "fish"}

// Script returns the completion script of the program prog for shell
// (one of Shells). The script completes by running the command as typed
// (PROG, or ./PROG, or a path) with __complete and the words before the
// cursor, so it always answers as the binary it runs; it shows nothing of
// that command's stderr. prog must be a plain lower-case name.
func Script(shell, prog string) (string, error) {
	if prog == "" || strings.Trim(prog, "abcdefghijklmnopqrstuvwxyz") != "" {
		return "", fmt.Errorf("complete: program name %q is not a plain lower-case name", prog)
	}
	var s string
	switch shell {
	case "bash":
		s = bashScript
	case "zsh":
		s = zshScript
	case "fish":
		s = fishScript
	default:
		return "", fmt.Errorf("unknown shell %q (want one of %s)", shell, strings.Join(Shells, ", "))
	}
	return strings.ReplaceAll(s, "PROG", prog), nil
}

// bashScript needs bash 4 (compopt). A reply of mode default leaves
// COMPREPLY empty, so complete's -o default falls back to readline's file
// names; words turn that fallback off. bash splits --flag=value at its
// word break "=", so the current word "=" is an empty value.
const bashScript = `# bash completion for PROG. Load it with: source <(PROG completion bash)
_PROG_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[0]} mode prefix line opt
	[[ $cur == = ]] && cur=
	[[ $cmd == "~/"* ]] && cmd=$HOME/${cmd#"~/"}
	COMPREPLY=()
	{
		read -r mode prefix || return 0
		case $mode in
		words)
			compopt +o default 2>/dev/null
			while IFS= read -r line; do COMPREPLY+=("$prefix${line%%$'\t'*}"); done
			;;
		dirs | files)
			compopt -o filenames 2>/dev/null
			opt=-f
			[[ $mode == dirs ]] && opt=-d
			while IFS= read -r line; do COMPREPLY+=("$prefix$line"); done < <(compgen "$opt" -- "${cur#"$prefix"}")
			;;
		esac
	} < <("$cmd" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
	return 0
}
complete -o default -F _PROG_complete PROG
`

// zshScript works sourced (after compinit) and as the file _PROG in a
// directory of $fpath, where compinit autoloads it.
const zshScript = `#compdef PROG
# zsh completion for PROG. Load it with: source <(PROG completion zsh)
# (after compinit), or save it as _PROG in a directory of $fpath.
_PROG() {
	local cmd=${(Q)words[1]} mode line
	local -a reply cands
	[[ $cmd == '~/'* ]] && cmd=$HOME/${cmd#'~/'}
	reply=("${(@f)$("$cmd" __complete "${(@Q)words[2,CURRENT]}" 2>/dev/null)}")
	mode=${reply[1]%% *}
	[[ $reply[1] == *' '* ]] && compset -P '*='
	case $mode in
	words)
		for line in "${(@)reply[2,-1]}"; do
			[[ -z $line ]] && continue
			if [[ $line == *$'\t'* ]]; then
				cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
			else
				cands+=("${line//:/\\:}")
			fi
		done
		(( $#cands )) && _describe -t values PROG cands
		;;
	dirs) _files -/ ;;
	files | default) _files ;;
	esac
}
if [[ $funcstack[1] == _PROG ]]; then
	_PROG "$@"
else
	compdef _PROG PROG
fi
`

// fishScript turns fish's own file completion off (-f) and gives it back
// for the replies that ask for file names.
const fishScript = `# fish completion for PROG. Load it with: PROG completion fish | source
function _PROG_complete
	set -l words (commandline -opc)
	set -l cur (commandline -ct)
	set -l cmd (string replace -r '^~/' "$HOME/" -- $words[1])
	set -l reply ($cmd __complete $words[2..-1] "$cur" 2>/dev/null)
	or return
	set -l head (string split -m 1 ' ' -- $reply[1])
	set -l prefix "$head[2]"
	set -l value "$cur"
	test -n "$prefix"; and set value (string replace -r -- '^[^=]*=' '' "$cur")
	switch $head[1]
		case words
			for line in $reply[2..-1]
				echo $prefix$line
			end
		case dirs
			for line in (__fish_complete_directories $value)
				echo $prefix$line
			end
		case files default
			for line in (__fish_complete_path $value)
				echo $prefix$line
			end
	end
end
complete -c PROG -f -a '(_PROG_complete)'
`
