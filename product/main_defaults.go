package product

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Where Needle works, when the command line does not say.
//
// --data-dir defaults to $NEEDLE_DATA_DIR, else $XDG_DATA_HOME/needle, else
// ~/.local/share/needle; --repository to the git top level of the working
// directory. The client fills the defaults in as explicit flags before a
// command runs, here or in the resident runtime, so a command always sees
// its flags and a runtime never guesses from its own environment. It
// remembers which flags it filled in (the runtime learns them from the
// execSpec), so that the commands it prints leave them out again.

// envDataDir names the data directory of commands that do not name one.
const envDataDir = "NEEDLE_DATA_DIR"

// defaultedFlags are the flags a default can fill in, in the order they are
// inserted.
var defaultedFlags = []string{"repository", "data-dir"}

// verbCommands take their verb before their flags (needle config set
// --data-dir DIR KEY VALUE).
var verbCommands = []string{"profile", "config"}

// DefaultDataDir is the data directory of a command that names none:
// $NEEDLE_DATA_DIR (made absolute), else $XDG_DATA_HOME/needle, else
// ~/.local/share/needle.
func DefaultDataDir() (string, error) {
	return dataDirIn(os.Getenv)
}

// dataDirIn is the default data directory of a needle started with the
// environment getenv reads: the doctor asks it of the environment a
// coding client gives the MCP servers it starts.
func dataDirIn(getenv func(string) string) (string, error) {
	if d := getenv(envDataDir); d != "" {
		return filepath.Abs(d)
	}
	if x := getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "needle"), nil
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".local", "share", "needle"), nil
	}
	return "", errors.New("no data directory: set --data-dir, $NEEDLE_DATA_DIR or $HOME")
}

// gitTopLevel is the top level of the git work tree the working directory
// is in, or "" when it is in none (or git is missing).
func (c *cli) gitTopLevel() string {
	git, err := c.lookPath("git")
	if err != nil {
		return ""
	}
	cmd := exec.CommandContext(c.ctx, git, "rev-parse", "--show-toplevel")
	cmd.Dir = c.dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return string(bytes.TrimRight(out, "\n"))
}

// withDefaults returns cmd's arguments with the flags it takes and args
// leave out filled in from their defaults. A default that cannot be found
// is left out: the command then says the flag is required.
func (c *cli) withDefaults(cmd cliCommand, args []string) []string {
	at := 0
	if slices.Contains(verbCommands, cmd.path) {
		if len(args) == 0 {
			return args
		}
		at = 1
	}
	first, _, _ := strings.Cut(cmd.usage, "\n")
	var add []string
	for _, name := range defaultedFlags {
		if !strings.Contains(first, "--"+name+" ") || hasFlagArg(args, name) {
			continue
		}
		v := c.flagDefault(name)
		if v == "" {
			continue
		}
		if c.defaults == nil {
			c.defaults = map[string]string{}
		}
		c.defaults[name] = v
		add = append(add, "--"+name+"="+v)
	}
	return slices.Insert(slices.Clone(args), at, add...)
}

// flagDefault is the default of a defaulted flag, or "".
func (c *cli) flagDefault(name string) string {
	if name == "repository" {
		return c.gitTopLevel()
	}
	d, _ := DefaultDataDir()
	return d
}

// hasFlagArg says whether args set --name (or -name), with or without "=".
func hasFlagArg(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		f := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if f != a && (f == name || strings.HasPrefix(f, name+"=")) {
			return true
		}
	}
	return false
}

// runnable makes a printed `needle change …` command runnable as printed:
// it adds --repository and --data-dir unless the value is the one the
// default filled in. The values are the ones the user gave (shell-quoted),
// so the command runs from the same working directory.
func (c *cli) runnable(command, repository, dataDir string) string {
	words := strings.SplitN(command, " ", 4)
	if len(words) < 3 || words[0] != "needle" {
		return command
	}
	var add []string
	for _, f := range []struct{ name, value string }{{"repository", repository}, {"data-dir", dataDir}} {
		if f.value != "" && f.value != c.defaults[f.name] {
			add = append(add, "--"+f.name+" "+shellWord(f.value))
		}
	}
	return strings.Join(slices.Insert(words, 3, add...), " ")
}
