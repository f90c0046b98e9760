package product

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// Main is the needle command. It returns the process exit status: 0 on
// success, 1 on failure, 2 on invalid input or a usage error (and 3 for
// needle change's conflicts).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	return c.dispatch(args)
}

type cli struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
}

// command is one leaf of the command tree.
type command struct {
	path  string // "need compile"
	usage string // full help text
	run   func(c *cli, args []string) int
}

var commands = []command{
	{"need compile", usageNeedCompile, (*cli).needCompile},
	{"need resolve", usageNeedResolve, (*cli).needResolve},
	{"evidence schema", usageEvidenceSchema, (*cli).evidenceSchema},
	{"evidence propose", usageEvidencePropose, (*cli).evidencePropose},
	{"mcp serve", usageMCPServe, (*cli).mcpServe},
	{"exec", usageExec, (*cli).exec},
	{"hook codex", usageHookCodex, (*cli).hookCodex},
	{"hook install", usageHookInstall, (*cli).hookInstall},
	{"hook uninstall", usageHookUninstall, (*cli).hookUninstall},
	{"change list", usageChangeList, (*cli).changeList},
	{"change show", usageChangeShow, (*cli).changeShow},
	{"change events", usageChangeEvents, (*cli).changeEvents},
	{"change diff", usageChangeDiff, (*cli).changeDiff},
	{"change start", usageChangeStart, (*cli).changeStart},
	{"change run", usageChangeRun, (*cli).changeRun},
	{"change approve", usageChangeApprove, (*cli).changeApprove},
	{"change apply", usageChangeApply, (*cli).changeApply},
	{"change cancel", usageChangeCancel, (*cli).changeCancel},
	{"profile", usageProfile, (*cli).profileCmd},
	{"config", usageConfig, (*cli).config},
	{"db check", usageDBCheck, (*cli).dbCheck},
	{"version", usageVersion, (*cli).version},
}

const usage = `Needle answers a coding model's typed needs from certified, provably fresh
evidence, or runs a bounded worker, or says to bypass.

Usage:
  needle <command> [arguments]

Commands:
  need compile [--marker] [--routes LIST] FILE|-
                    compile a need request; print its need_id and canonical IR
  need resolve --repository DIR --data-dir DIR [--cache-only] [--codex CMD] [--routes LIST] FILE|-
                    resolve a need against certified evidence; print the result
  evidence schema KIND
                    print the strict JSON Schema of a proposal of KIND
  evidence propose --repository DIR --data-dir DIR FILE|-
                    validate a proposal with the trusted validators and store it
  mcp serve --data-dir DIR --repository DIR --main-model NAME --role-profile ID [--cache-only] [--codex CMD]
                    serve the MCP tool need_context on stdio
  exec [--coordination new-turn|continue-working] --codex CMD --data-dir DIR PROMPT
                    run the main model as a Codex App Server thread and answer its @@need markers
  hook codex --data-dir DIR [--role-profile ID] [--cache-only] [--codex CMD] [--deadline DUR]
                    the Codex Stop hook: answer a @@need marker in the model's last message
  hook install --codex [--user|--project] --data-dir DIR [--no-trust] …
                    install the Codex Stop hook into codex's hooks file and trust it
  hook uninstall [--codex] [--user|--project]
                    remove the Codex Stop hook and its trust
  change list|show|events|diff|start|run|approve|apply|cancel --repository DIR --data-dir DIR ...
                    a supervised change as a lifecycle: explore, implement, test,
                    review, verify, then apply after your approval
  profile list|show|create --data-dir DIR [ID [FILE]]
                    manage role profiles (immutable revisions; "default" is built in)
  config set|get|list --data-dir DIR [KEY [VALUE]]
                    manage profile settings (codex.command, codex.home, worker.deadline,
                    tests.codex, tests.cache)
  db check --data-dir DIR
                    open the store in DIR (creating or upgrading it) and verify it
  version           print the version, compiler, schema head and definition id
  help [COMMAND]    print help for a command

Exit status: 0 success, 1 failure, 2 invalid input or usage error; needle change
exits 3 on a conflict (a work tree that drifted under a patch: the 409, nothing
written; a stale approval; another runner of the same lifecycle).
Run 'needle help COMMAND' for the flags of a command.
`

func (c *cli) dispatch(args []string) int {
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return c.help(args[1:])
	}
	for _, cmd := range commands {
		words := strings.Fields(cmd.path)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == cmd.path {
			if len(words) == 1 && len(args) == 2 && isHelpFlag(args[1]) {
				fmt.Fprint(c.stdout, cmd.usage)
				return 0
			}
			return cmd.run(c, args[len(words):])
		}
	}
	if group := groupUsage(args[0]); group != "" {
		if len(args) == 2 && isHelpFlag(args[1]) {
			fmt.Fprint(c.stdout, group)
			return 0
		}
		fmt.Fprintf(c.stderr, "needle: %q needs a subcommand\n\n%s", strings.Join(args, " "), group)
		return 2
	}
	fmt.Fprintf(c.stderr, "needle: unknown command %q\n\n%s", strings.Join(args, " "), usage)
	return 2
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// groupUsage lists the commands of a group ("need", "evidence", …), or
// returns "" when name is not a group.
func groupUsage(name string) string {
	var b strings.Builder
	for _, cmd := range commands {
		if strings.HasPrefix(cmd.path, name+" ") {
			first, _, _ := strings.Cut(cmd.usage, "\n")
			b.WriteString(first + "\n")
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return b.String() + "\nRun 'needle help " + name + " SUBCOMMAND' for details.\n"
}

func (c *cli) help(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stdout, usage)
		return 0
	}
	for _, cmd := range commands {
		if strings.Join(args, " ") == cmd.path {
			fmt.Fprint(c.stdout, cmd.usage)
			return 0
		}
	}
	if group := groupUsage(strings.Join(args, " ")); group != "" {
		fmt.Fprint(c.stdout, group)
		return 0
	}
	fmt.Fprintf(c.stderr, "needle help: unknown command %q\n", strings.Join(args, " "))
	return 2
}

// flags returns a silent flag set for a command; parse prints the usage.
func (c *cli) flags(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet("needle "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses flags; it reports an exit status when the command must stop
// (help requested: 0; bad flags: 2).
func (c *cli) parse(fs *flag.FlagSet, usage string, args []string) (int, bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, usage)
		return 0, false
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n\n%s", fs.Name(), err, usage)
		return 2, false
	}
	return 0, true
}

// fail reports err on one line and returns the exit status for its kind.
func (c *cli) fail(cmd string, err error) int {
	var e *Error
	switch {
	case errors.As(err, &e) && e.Kind == KindInvalidInput:
		msg := e.Err.Error()
		if e.Path != "" {
			msg = e.Path + ": " + msg
		}
		fmt.Fprintf(c.stderr, "needle %s: invalid input: %s\n", cmd, oneLine(msg))
	default:
		fmt.Fprintf(c.stderr, "needle %s: %s\n", cmd, oneLine(err.Error()))
	}
	return exitCodeOf(err)
}

func (c *cli) writeJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(c.stderr, "needle: write output: %v\n", err)
		return 1
	}
	return 0
}

// readInput reads FILE or stdin ("-"), refusing more than limit bytes.
func (c *cli) readInput(name string, limit int) ([]byte, error) {
	r := c.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, &Error{Op: "read input", Kind: KindIO, Err: err}
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, &Error{Op: "read input", Kind: KindIO, Err: err}
	}
	if len(data) > limit {
		return nil, invalidf("read input", "$", "input is larger than %d bytes", limit)
	}
	return data, nil
}

const usageVersion = `Usage: needle version

Print the needle version, the need compiler version, the store schema head
and the semantic-definition id of this binary.
`

func (c *cli) version(args []string) int {
	fs := c.flags("version")
	if code, ok := c.parse(fs, usageVersion, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(c.stderr, "needle version: takes no arguments\n")
		return 2
	}
	fmt.Fprintf(c.stdout, "needle %s\ncompiler %s\nschema head %d\ndefinition %s\n",
		Version(), CompilerVersion, schemaHead(), DefinitionID())
	return 0
}

// Version returns the module version of the running binary, or "(devel)".
func Version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
