package product

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// settingKeys are the profile settings `needle config` manages, with a
// check of each value.
var settingKeys = map[string]struct {
	help  string
	check func(string) error
}{
	"codex.command": {"the App Server command (argv before \"app-server\", split at blanks)", func(v string) error {
		if len(strings.Fields(v)) == 0 {
			return fmt.Errorf("empty command")
		}
		return nil
	}},
	"codex.home": {"a directory whose config.toml and auth.json every worker's CODEX_HOME copies (default: $CODEX_HOME, else ~/.codex, when it is a directory)", func(v string) error {
		if !filepath.IsAbs(v) {
			return fmt.Errorf("%q is not an absolute path", v)
		}
		if info, err := os.Stat(v); err != nil || !info.IsDir() {
			return fmt.Errorf("%q is not a directory", v)
		}
		return nil
	}},
	"worker.deadline": {"the wall-clock bound of one worker turn (a Go duration, e.g. 2m)", checkDuration},
	"worker.continue": {"on: a residual or extension need continues its session's evidence worker thread; off: a fresh thread every time (default on)", func(v string) error {
		if v != "on" && v != "off" {
			return fmt.Errorf("%q is neither on nor off", v)
		}
		return nil
	}},
	"tests.codex": {"the real codex binary whose sandbox confines the tests Needle runs", func(v string) error {
		if !filepath.IsAbs(v) {
			return fmt.Errorf("%q is not an absolute path", v)
		}
		if info, err := os.Stat(v); err != nil || !info.Mode().IsRegular() {
			return fmt.Errorf("%q is not a file", v)
		}
		return nil
	}},
	"tests.cache": {"the directory of the test runs (GOCACHE, scratch, test checkouts, kept test binaries and baselines)", func(v string) error {
		if !filepath.IsAbs(v) {
			return fmt.Errorf("%q is not an absolute path", v)
		}
		return nil
	}},
	"tests.deadline": {"the wall-clock bound of one test run, build included (a Go duration)", checkDuration},
	"python.interpreter": {"the Python interpreter whose parser reads the repository's Python source and which runs its tests and flows, in the sandbox", func(v string) error {
		if !filepath.IsAbs(v) {
			return fmt.Errorf("%q is not an absolute path", v)
		}
		if info, err := os.Stat(v); err != nil || info.IsDir() {
			return fmt.Errorf("%q is not a file", v)
		}
		return nil
	}},
}

func checkDuration(v string) error {
	d, err := time.ParseDuration(v)
	if err == nil && d <= 0 {
		err = fmt.Errorf("must be positive")
	}
	return err
}

const usageConfig = `Usage: needle config set [--data-dir DIR] KEY VALUE
       needle config get [--data-dir DIR] KEY
       needle config list [--data-dir DIR]

Manage the settings of the Needle profile in DIR. Keys:
  codex.command     the App Server command (argv before "app-server", split at
                    blanks), e.g. "codex"; --codex on a command overrides it
  codex.home        a directory whose config.toml and auth.json are copied into
                    every worker's own CODEX_HOME (provider, model, credentials;
                    the MCP servers of config.toml are left out), e.g. ~/.codex
  worker.deadline   the wall-clock bound of one worker turn (default 2m)
  worker.continue   on: a residual or extension need of a session continues
                    the thread of the session's last evidence worker (a new
                    turn for the missing obligations, in the same checkout,
                    only while the work tree holds the same snapshot) instead
                    of a fresh thread; default on (off: a fresh thread each time)
  tests.codex       the real codex binary whose "codex sandbox" confines the
                    tests Needle runs, to certify focused_tests and in a change
                    lifecycle (no network, writes confined); default: the codex
                    of codex.command, else codex on PATH; with none, no test
                    runs (focused_tests: static reach only)
  tests.cache       the directory of those test runs: GOCACHE, scratch, the
                    test checkouts, and the test binaries and baselines kept
                    for later processes (default: DIR/testrun, one per
                    repository for focused_tests); a test writes only its
                    checkout and scratch, never the GOCACHE or what is kept,
                    so repositories and data directories may share one
                    (outside the repository)
  tests.deadline    the wall-clock bound of one test run, build included
                    (default 2m)
  python.interpreter
                    the Python whose own parser (ast) reads the repository's
                    Python source, and which runs its focused tests (pytest
                    under coverage.py, from its own environment: Needle
                    installs nothing) and its flows' scenarios, in the
                    tests' sandbox; default: the repository's .venv, else
                    python3 on PATH; with none, Python evidence is checked
                    lexically
`

// verbArgs parses `needle NAME VERB --data-dir DIR ARGS…` for commands made
// of verbs, each with a fixed number of arguments. ok is false when the
// command must stop with code.
func (c *cli) verbArgs(name, usage string, arity map[string]int, args []string) (verb, dataDir string, rest []string, code int, ok bool) {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usage)
		return "", "", nil, 2, false
	}
	verb = args[0]
	n, known := arity[verb]
	if !known {
		fmt.Fprintf(c.stderr, "needle %s: unknown verb %q\n\n%s", name, verb, usage)
		return "", "", nil, 2, false
	}
	fs := c.flags(name + " " + verb)
	dir := fs.String("data-dir", "", "")
	if code, ok := c.parse(fs, usage, args[1:]); !ok {
		return "", "", nil, code, false
	}
	if *dir == "" || fs.NArg() != n {
		fmt.Fprintf(c.stderr, "needle %s %s: --data-dir and %d arguments are required\n\n%s", name, verb, n, usage)
		return "", "", nil, 2, false
	}
	return verb, *dir, fs.Args(), 0, true
}

func (c *cli) config(args []string) int {
	verb, dataDir, rest, code, ok := c.verbArgs("config", usageConfig, map[string]int{"set": 2, "get": 1, "list": 0}, args)
	if !ok {
		return code
	}
	n := len(rest)
	if n > 0 {
		if err := checkSetting(rest[0], rest[n-1], verb == "set"); err != nil {
			return c.fail("config "+verb, err)
		}
	}
	h, release, err := c.openDataHome(dataDir)
	if err != nil {
		return c.fail("config "+verb, err)
	}
	defer release()
	return c.runConfig(h, verb, rest)
}

func checkSetting(key, value string, setting bool) error {
	k, ok := settingKeys[key]
	if !ok {
		return invalidf("config", "key", "unknown setting %q; want one of %s", key, strings.Join(sortedKeys(settingKeys), ", "))
	}
	if setting {
		if err := k.check(value); err != nil {
			return invalidf("config", key, "%v", err)
		}
	}
	return nil
}

func (c *cli) runConfig(h dataHome, verb string, args []string) int {
	if verb == "set" {
		if err := h.SetSetting(c.ctx, args[0], args[1]); err != nil {
			return c.fail("config set", err)
		}
		return 0
	}
	all, err := h.Settings(c.ctx)
	if err != nil {
		return c.fail("config "+verb, err)
	}
	if verb == "get" {
		v, ok := all[args[0]]
		if !ok {
			fmt.Fprintf(c.stderr, "needle config get: %s is not set\n", args[0])
			return 1
		}
		fmt.Fprintln(c.stdout, v)
		return 0
	}
	for _, k := range sortedKeys(all) {
		fmt.Fprintf(c.stdout, "%s=%s\n", k, all[k])
	}
	return 0
}

// codexConfig builds the worker configuration from a --codex flag, falling
// back to the profile settings; nil means no worker backend.
func codexConfig(ctx context.Context, dataDir, flagCommand string) (*CodexConfig, error) {
	return (&cli{ctx: ctx}).codexConfig(dataDir, flagCommand)
}

// codexConfig is codexConfig for the command's caller: its store (the
// runtime's, inside it), directory and PATH.
func (c *cli) codexConfig(dataDir, flagCommand string) (*CodexConfig, error) {
	settings, err := c.settings(dataDir)
	if err != nil {
		return nil, err
	}
	return c.codexSettings(settings, flagCommand)
}

// codexSettings is codexConfig from settings already read.
func (c *cli) codexSettings(settings map[string]string, flagCommand string) (*CodexConfig, error) {
	command := settings["codex.command"]
	if flagCommand != "" {
		command = flagCommand
	}
	if strings.TrimSpace(command) == "" {
		return nil, nil
	}
	argv := strings.Fields(command)
	// The App Server runs in a disposable checkout: resolve the command
	// now, against the caller's directory and PATH.
	path, err := c.lookPath(argv[0])
	if err != nil {
		return nil, invalidf("config", "codex.command", "App Server command %q: %v", argv[0], err)
	}
	argv[0] = path
	cfg := &CodexConfig{Command: argv, Home: settings["codex.home"], Path: c.pathEnv}
	if cfg.Home == "" {
		cfg.Home = defaultCodexHome()
	}
	cfg.Continue = settings["worker.continue"] != "off" // on unless turned off
	if d := settings["worker.deadline"]; d != "" {
		if cfg.Deadline, err = time.ParseDuration(d); err != nil {
			return nil, invalidf("config", "worker.deadline", "%v", err)
		}
	}
	return cfg, nil
}

// defaultCodexHome is the codex.home of a worker command without one: the
// home the user's own codex reads, $CODEX_HOME, else ~/.codex, so a worker
// runs with the model and credentials codex has. It is empty when that is
// not a directory (a worker then gets an empty CODEX_HOME).
func defaultCodexHome() string {
	dir := os.Getenv("CODEX_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".codex")
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() || !filepath.IsAbs(dir) {
		return ""
	}
	return dir
}

// testsConfig says how tests are run: the tests.codex, tests.cache and
// tests.deadline settings, the sandbox defaulting to the codex binary of the
// worker command, else to codex on PATH. Without one Needle runs no test.
func testsConfig(ctx context.Context, dataDir string, codex *CodexConfig) (TestsConfig, error) {
	return (&cli{ctx: ctx}).testsConfig(dataDir, codex)
}

// testsConfig is testsConfig for the command's caller: its store (the
// runtime's, inside it), directory and PATH.
func (c *cli) testsConfig(dataDir string, codex *CodexConfig) (TestsConfig, error) {
	settings, err := c.settings(dataDir)
	if err != nil {
		return TestsConfig{}, err
	}
	return c.testsSettings(settings, codex)
}

// testsSettings is testsConfig from settings already read.
func (c *cli) testsSettings(settings map[string]string, codex *CodexConfig) (TestsConfig, error) {
	var err error
	var cfg TestsConfig
	if d := settings["tests.deadline"]; d != "" {
		if cfg.Deadline, err = time.ParseDuration(d); err != nil {
			return TestsConfig{}, invalidf("config", "tests.deadline", "%v", err)
		}
	}
	cfg.Codex, cfg.CacheDir, cfg.Python = settings["tests.codex"], settings["tests.cache"], settings["python.interpreter"]
	if c.stderr != nil {
		stderr := c.stderr
		cfg.Notice = func(msg string) { fmt.Fprintf(stderr, "needle: %s\n", msg) }
	}
	if cfg.Codex == "" && codex != nil && len(codex.Command) > 0 && filepath.Base(codex.Command[0]) == "codex" {
		cfg.Codex = codex.Command[0]
	}
	if cfg.Codex == "" {
		if p, err := c.lookPath("codex"); err == nil {
			cfg.Codex = p
		}
	}
	return cfg, nil
}

const usageProfile = `Usage: needle profile list [--data-dir DIR]
       needle profile show [--data-dir DIR] ID
       needle profile create [--data-dir DIR] ID FILE|-

Manage role profiles: how workers run for a session (worker model, effort,
session limits, sandbox per role). A profile is versioned by immutable
revisions: create appends a revision, and a session freezes the newest
revision when it connects. The built-in profile "default" exists from the
first start. A profile body is JSON:
  {"worker_model":"","effort":"","limits":{"needs":3,"workers":3},
   "sandbox":{"evidence":"read-only","patch":"workspace-write","verifier":"read-only"}}
and, optionally, "roles": the lifecycle's explorer, implementer,
test_runner, reviewer and verifier, each {"sandbox","model","effort",
"prompts"} ("prompts": the role's prompt set, "" or its own: evidence,
patch, review, verify; the test runner has none). The verifier must be a
distinct worker: a verifier with the reviewer's or the implementer's
sandbox, model, effort and prompts is invalid input.
`

// lookPath finds an executable the way the caller's shell would: in the
// caller's directory and PATH (exec.LookPath's rules, which in the resident
// runtime are the client's, not the runtime's), as an absolute path.
func (c *cli) lookPath(name string) (string, error) {
	if c.dir == "" && c.pathEnv == "" {
		path, err := exec.LookPath(name)
		if err != nil {
			return "", err
		}
		return filepath.Abs(path)
	}
	var dirs []string
	if strings.Contains(name, "/") {
		dirs = []string{""}
	} else {
		dirs = filepath.SplitList(c.pathEnv)
	}
	for _, d := range dirs {
		p := c.absPath(filepath.Join(d, name))
		if executable(p) {
			return filepath.Abs(p)
		}
	}
	return "", exec.ErrNotFound
}

func (c *cli) profileCmd(args []string) int {
	verb, dataDir, rest, code, ok := c.verbArgs("profile", usageProfile, map[string]int{"list": 0, "show": 1, "create": 2}, args)
	if !ok {
		return code
	}
	var body profile
	if verb == "create" {
		data, err := c.readInput(rest[1], 64<<10)
		if err == nil {
			err = decodeProfile(data, &body)
		}
		if err != nil {
			return c.fail("profile create", err)
		}
	}
	h, release, err := c.openDataHome(dataDir)
	if err != nil {
		return c.fail("profile "+verb, err)
	}
	defer release()
	var out any
	switch verb {
	case "list":
		out, err = h.Profiles(c.ctx)
	case "show":
		out, err = h.Profile(c.ctx, rest[0])
	case "create":
		out, err = h.CreateProfile(c.ctx, rest[0], body)
	}
	if err != nil {
		return c.fail("profile "+verb, err)
	}
	return c.writeJSON(out)
}

// decodeProfile decodes a profile body strictly: unknown fields are errors.
func decodeProfile(data []byte, p *profile) error {
	if _, err := parseJSONTree(data); err != nil { // duplicate keys, trailing data, …
		return err
	}
	if err := decodeStrict(data, p); err != nil {
		return invalidf("profile", "$", "%v", err)
	}
	return checkProfile(*p)
}
