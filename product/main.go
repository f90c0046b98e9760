package product

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/needle-dev/needle/product/complete"
)

// Main is the needle command. It returns the process exit status: 0 on
// success, 1 on failure, 2 on invalid input or a usage error (and 3 for
// needle change's conflicts).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, usageNeedle)
		return 2
	}
	return c.dispatch(args)
}

type cli struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	// dir is the directory relative paths name files in, and pathEnv the
	// PATH commands are looked up in: the caller's, when the resident
	// runtime runs a command for a client (ipc.go); "" means this
	// process's own.
	dir, pathEnv string
	// rt is set when the command runs inside the resident runtime: it opens
	// no store of its own but uses the runtime's.
	rt *Runtime
	// terminal: the client's stderr is a terminal (stderr is then the
	// runtime's relay of it), columns wide (0: unknown).
	terminal bool
	columns  int
	// defaults are the flags withDefaults filled in, by name: the
	// client's, in the runtime (main_defaults.go).
	defaults map[string]string
	// files, in the resident runtime, reads input files from the client.
	files *clientFiles
	// sawFlags, when set, is given each flag set flags makes: the
	// completion test holds the commands' flag sets to their help.
	sawFlags func(*flag.FlagSet)
}

// cliCommand is one leaf of the command tree.
type cliCommand struct {
	path  string // "need compile"
	usage string // full help text
	run   func(c *cli, args []string) int
	// resident: the command runs in the resident runtime of its
	// --data-dir when one runs (runtime_exec.go).
	resident residency
}

// commands is the command table; set in init, because the runtime's
// commands run commands.
var commands []cliCommand

func init() {
	commands = []cliCommand{
		{"need compile", usageNeedCompile, (*cli).needCompile, local},
		{"need resolve", usageNeedResolve, (*cli).needResolve, residentCall},
		{"evidence schema", usageEvidenceSchema, (*cli).evidenceSchema, local},
		{"evidence propose", usageEvidencePropose, (*cli).evidencePropose, residentCall},
		{"evidence refresh", usageEvidenceRefresh, (*cli).evidenceRefresh, residentCall},
		{"mcp serve", usageMCPServe, (*cli).mcpServe, residentStream},
		// exec and the hooks depend on the caller's environment (the
		// exec session, the user's codex configuration): they run here.
		{"exec", usageExec, (*cli).exec, local},
		{"hook codex", usageHookCodex, (*cli).hookCodex, local},
		{"hook install", usageHookInstall, (*cli).hookInstall, local},
		{"hook uninstall", usageHookUninstall, (*cli).hookUninstall, local},
		{"change list", usageChangeList, (*cli).changeList, residentCall},
		{"change show", usageChangeShow, (*cli).changeShow, residentCall},
		{"change events", usageChangeEvents, (*cli).changeEvents, residentCall},
		{"change diff", usageChangeDiff, (*cli).changeDiff, residentCall},
		{"change start", usageChangeStart, (*cli).changeStart, residentCall},
		{"change run", usageChangeRun, (*cli).changeRun, residentCall},
		{"change approve", usageChangeApprove, (*cli).changeApprove, residentCall},
		{"change apply", usageChangeApply, (*cli).changeApply, residentCall},
		{"change cancel", usageChangeCancel, (*cli).changeCancel, residentCall},
		{"profile", usageProfile, (*cli).profileCmd, residentCall},
		{"config", usageConfig, (*cli).config, residentCall},
		{"db check", usageDBCheck, (*cli).dbCheck, residentCall},
		{"stats", usageStats, (*cli).stats, residentCall},
		{"gc", usageGC, (*cli).gc, local},
		{"doctor", usageDoctor, (*cli).doctor, local}, // checks the caller's environment
		{"serve", usageServe, (*cli).serve, local},
		{"ui", usageUI, (*cli).ui, local},
		{"version", usageVersion, (*cli).version, local},
		{"completion", usageCompletion, (*cli).completion, local},
	}
}

// usageNeedle is needle --help.
const usageNeedle = `Needle answers a coding model's typed needs from certified, provably fresh
evidence, or runs a bounded worker, or says to bypass.

Usage:
  needle <command> [arguments]

Commands:
  need compile [--marker] [--routes LIST] FILE|-
                    compile a need request; print its need_id and canonical IR
  need resolve [--repository DIR] [--data-dir DIR] [--cache-only] [--codex CMD] [--routes LIST] FILE|-
                    resolve a need against certified evidence; print the result
  evidence schema KIND
                    print the strict JSON Schema of a proposal of KIND
  evidence propose [--repository DIR] [--data-dir DIR] FILE|-
                    validate a proposal with the trusted validators and store it
  evidence refresh [--repository DIR] [--data-dir DIR]
                    re-prove changed evidence now, so the next asks are exact hits
  mcp serve [--data-dir DIR] [--repository DIR] --main-model NAME --role-profile ID [--cache-only] [--codex CMD] [--routes LIST] [--refresh-interval DUR]
                    serve the MCP tools (need_context, and with a worker the change tools) on stdio,
                    re-proving changed evidence in the background
  exec [--coordination new-turn|continue-working] --codex CMD [--data-dir DIR] PROMPT
                    run the main model as a Codex App Server thread and answer its @@need markers
  hook codex [--data-dir DIR] [--role-profile ID] [--cache-only] [--codex CMD] [--deadline DUR]
                    the Codex Stop hook: answer a @@need marker in the model's last message
  hook install --codex [--user|--project] [--data-dir DIR] [--no-trust] …
                    install the Codex Stop hook into codex's hooks file and trust it
  hook uninstall [--codex] [--user|--project]
                    remove the Codex Stop hook and its trust
  change list|show|events|diff|start|run|approve|apply|cancel [--repository DIR] [--data-dir DIR] ...
                    a supervised change as a lifecycle: explore, implement, test,
                    review, verify, then apply after your approval
  profile list|show|create [--data-dir DIR] [ID [FILE]]
                    manage role profiles (immutable revisions; "default" is built in)
  config set|get|list [--data-dir DIR] [KEY [VALUE]]
                    manage profile settings (codex.command, codex.home, worker.deadline,
                    worker.continue, tests.codex, tests.cache, tests.deadline)
  db check [--data-dir DIR]
                    open the store in DIR (creating or upgrading it) and verify it
  stats [--data-dir DIR] [--json]
                    what Needle saved: hits, tokens saved, stale evidence withheld, proofs by kind
  gc [--data-dir DIR] [--dry-run]
                    remove checkouts, codex homes and test scratch left by processes that are gone
  doctor [--data-dir DIR] [--repository DIR] [--json]
                    check what Needle depends on (go, git, codex, the sandbox, the store,
                    the runtime, MCP registrations, the Stop hook); each line says the fix
  serve [--data-dir DIR] [--addr ADDR]
                    run the resident runtime of DIR: IPC for the commands above,
                    the web UI and API on loopback HTTP (a port kept per DIR)
  ui [--data-dir DIR] [--open]
                    print (and open) a one-time login URL of the running runtime's web UI
  version           print the version, compiler, schema head and definition id
                    (also needle --version)
  completion bash|zsh|fish
                    print the shell's completion script (needle help completion: how to load it)
  help [COMMAND]    print help for a command

Defaults: --data-dir is $NEEDLE_DATA_DIR, else $XDG_DATA_HOME/needle, else
~/.local/share/needle; --repository is the git top level of the working
directory. Commands print the next command to run with only the flags that
differ from these.

Exit status: 0 success, 1 failure, 2 invalid input or usage error, 5 a stored
record that does not match its content address (nothing is written or served
from it); needle change exits 3 on a conflict (a work tree that drifted under a
patch: the 409, nothing written; a stale approval; another runner of the same
lifecycle).
Run 'needle help COMMAND' for the flags of a command.
`

func (c *cli) dispatch(args []string) int {
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return c.help(args[1:])
	case "--version", "-version":
		return c.version(args[1:])
	case complete.Hidden:
		return c.complete(args[1:]) // before any default is looked up: it opens nothing
	}
	if cmd, rest, ok := lookupCommand(args); ok {
		if len(rest) == 1 && isHelpFlag(rest[0]) && !strings.Contains(cmd.path, " ") {
			fmt.Fprint(c.stdout, cmd.usage)
			return 0
		}
		if c.rt == nil {
			rest = c.withDefaults(cmd, rest)
		}
		if cmd.resident != local && c.rt == nil {
			if code, ok := c.viaRuntime(cmd, rest); ok {
				return code
			}
		}
		return cmd.run(c, rest)
	}
	if group := groupUsage(args[0]); group != "" {
		if len(args) == 2 && isHelpFlag(args[1]) {
			fmt.Fprint(c.stdout, group)
			return 0
		}
		fmt.Fprintf(c.stderr, "needle: %q needs a subcommand\n\n%s", strings.Join(args, " "), group)
		return 2
	}
	fmt.Fprintf(c.stderr, "needle: unknown command %q\n\n%s", strings.Join(args, " "), usageNeedle)
	return 2
}

// lookupCommand finds the command args name and returns its arguments.
func lookupCommand(args []string) (cliCommand, []string, bool) {
	for _, cmd := range commands {
		words := strings.Fields(cmd.path)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == cmd.path {
			return cmd, args[len(words):], true
		}
	}
	return cliCommand{}, nil, false
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
		fmt.Fprint(c.stdout, usageNeedle)
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
	if c.sawFlags != nil {
		c.sawFlags(fs)
	}
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

// errShutdown is the cause (context.Cause) of a Main context that the
// user or the host ended on purpose (SIGINT, SIGTERM): a requested stop,
// not a failure.
var errShutdown = errors.New("shutdown requested")

// ShutdownContext returns a context that ends when one of signals arrives,
// with cause errShutdown (naming the signal): what cmd/needle gives Main.
// stop releases the signals.
func ShutdownContext(parent context.Context, signals ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, signals...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			cancel(fmt.Errorf("%w (%v)", errShutdown, sig))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// stopping reports whether the command's context ended because a stop was
// requested (see ShutdownContext).
func (c *cli) stopping() bool { return errors.Is(context.Cause(c.ctx), errShutdown) }

// fail reports err on one line and returns the exit status for its kind. A
// command cut short by a requested stop says so instead of "context
// canceled".
func (c *cli) fail(cmd string, err error) int {
	var e *Error
	switch {
	case c.stopping() && errors.Is(err, context.Canceled):
		fmt.Fprintf(c.stderr, "needle %s: stopped before it finished: %v\n", cmd, context.Cause(c.ctx))
		return 1
	case errors.As(err, &e) && e.Kind == KindInvalidInput:
		msg := e.Err.Error()
		if e.Path != "" {
			msg = e.Path + ": " + msg
		}
		fmt.Fprintf(c.stderr, "needle %s: invalid input: %s\n", cmd, oneLine(msg))
	default:
		fmt.Fprintf(c.stderr, "needle %s: %s\n", cmd, oneLine(userMessage(err)))
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

// readInput reads FILE or stdin ("-"), refusing more than limit bytes. In
// the resident runtime the client reads FILE (runtime_exec.go).
func (c *cli) readInput(name string, limit int) ([]byte, error) {
	if name != "-" && c.files != nil {
		return c.files.read(name, limit)
	}
	r := c.stdin
	if name != "-" {
		f, err := os.Open(c.absPath(name))
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				pe.Path = name // as the user wrote it, wherever the command runs
			}
			return nil, &Error{Op: "read input", Kind: kindIO, Err: err}
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, &Error{Op: "read input", Kind: kindIO, Err: err}
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
		Version(), compilerVersion, schemaHead(), DefinitionID())
	return 0
}

// absPath resolves a path the user gave against the caller's directory: the
// IPC client's inside the resident runtime, this process's otherwise. The
// result is absolute, so nothing downstream depends on a working
// directory (a test runner refuses a relative cache; a checkout's command
// runs elsewhere).
func (c *cli) absPath(p string) string {
	if p == "" || p == "-" || filepath.IsAbs(p) {
		return p
	}
	if c.dir != "" {
		return filepath.Join(c.dir, p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// openEngine opens an engine for cfg: over its own store, or inside the
// resident runtime over the runtime's store.
func (c *cli) openEngine(cfg Config) (*Engine, error) {
	cfg.Repository, cfg.DataDir = c.absPath(cfg.Repository), c.absPath(cfg.DataDir)
	if c.rt == nil {
		return Open(c.ctx, cfg)
	}
	if err := c.rt.serves(cfg.DataDir); err != nil {
		return nil, err
	}
	return c.rt.engine(c.ctx, cfg)
}

// openEngineSettings is openEngine for a configuration that depends on
// the profile settings: configure completes cfg from them, read from the
// store the engine then opens over, so a command opens its store once.
func (c *cli) openEngineSettings(cfg Config, configure func(settings map[string]string, cfg *Config) error) (*Engine, error) {
	cfg.Repository = c.absPath(cfg.Repository)
	cfg.DataDir = c.absPath(cfg.DataDir)
	st, release, err := c.openStore(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	settings, err := st.Settings(c.ctx)
	if err == nil {
		err = configure(settings, &cfg)
	}
	if err != nil {
		release()
		return nil, err
	}
	if c.rt != nil {
		return c.rt.engine(c.ctx, cfg)
	}
	e, err := openEngine(c.ctx, cfg, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	e.ownStore = true
	return e, nil
}

// Version returns the module version of the running binary, or "(devel)"
// followed by the commit a build from a clone was made from.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	// A build from a clone: the commit it was built from, when go build
	// stamped it.
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = " " + s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	return "(devel)" + rev + dirty
}

// routesFlag is the value of a --routes flag: every route when it is empty,
// else the comma-separated list parseRouteSet reads.
func routesFlag(list string) (routeSet, error) {
	if list == "" {
		return AllRoutes(), nil
	}
	return parseRouteSet(list)
}
