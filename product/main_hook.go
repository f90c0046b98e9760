package product

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const usageHookCodex = `Usage: needle hook codex [--data-dir DIR] [--role-profile ID] [--cache-only] [--codex CMD] [--routes LIST] [--deadline DUR]

The Codex Stop hook, as 'needle hook install --codex' installs it; codex runs
it with one hook event on stdin. When the model's last message holds one
@@need marker at its top level (not in a code block, quote or list), the
need is resolved in the Codex session's ledger (session "codex:<thread id>",
the same limits as MCP: 3 needs, 3 workers) and the hook answers
{"decision":"block","reason":…}: codex continues the turn with Needle's
reply — the FrontierView, a typed bypass, or for a marker that does not read
a short message naming the problem. Otherwise it prints nothing and the turn
ends. A user turn gets at most 4 replies (the need limit plus one); the last
one says so.

The repository is the session's working directory. The worker backend is
--codex or the codex.command setting. --deadline runs from the start, reading
stdin included: a hook event not read by then fails the hook (status 1); at
the deadline a running worker is interrupted and its process group killed,
and the reply is a bypass. The hook
stands down inside 'needle exec' (NEEDLE_EXEC_SESSION set). It exits 0, or 1
when it fails (codex then lets the turn end); never 2, which codex would feed
to the model.

Flags:
  --data-dir DIR      the Needle data directory (holds needle.db; default: see needle help)
  --role-profile ID   the role profile whose newest revision a new session freezes (default "default")
  --cache-only        never spawn a worker; misses are typed bypasses
  --codex CMD         the App Server command of workers (overrides the codex.command setting)
  --routes LIST       comma-separated enabled routes (default: all)
  --deadline DUR      the hook's own deadline (default 4m)
`

// hookCodex never exits 2: codex would feed its stderr to the model.
func (c *cli) hookCodex(args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(c.stderr, "needle hook codex: internal error: %v\n", r)
			code = 1
		}
	}()
	fs := c.flags("hook codex")
	dataDir := fs.String("data-dir", "", "")
	profileID := fs.String("role-profile", DefaultProfileID, "")
	cacheOnly := fs.Bool("cache-only", false, "")
	codex := fs.String("codex", "", "")
	routeList := fs.String("routes", "", "")
	deadline := fs.Duration("deadline", defaultHookDeadline, "")
	if code, ok := c.parse(fs, usageHookCodex, args); !ok {
		return min(code, 1)
	}
	if *dataDir == "" || fs.NArg() != 0 || *deadline <= 0 {
		fmt.Fprintf(c.stderr, "needle hook codex: --data-dir is required, the deadline positive, and there are no arguments\n")
		return 1
	}
	cfg := codexHookConfig{DataDir: c.absPath(*dataDir), RoleProfile: *profileID, CacheOnly: *cacheOnly, CodexCommand: *codex,
		Deadline: *deadline, ExecSession: os.Getenv(execSessionEnv), Log: c.stderr}
	var err error
	if *routeList != "" {
		if cfg.Routes, err = parseRouteSet(*routeList); err != nil {
			c.fail("hook codex", err)
			return 1
		}
	}
	if err := serveCodexHook(c.ctx, cfg, c.stdin, c.stdout); err != nil {
		c.fail("hook codex", err)
		return 1
	}
	return 0
}

const usageHookInstall = `Usage: needle hook install --codex [--user|--project] [--data-dir DIR] [--role-profile ID] [--cache-only] [--deadline DUR] [--no-trust]

Install the Codex Stop hook ('needle hook codex' with these flags, run by this
needle binary) into codex's hooks file: the user's $CODEX_HOME/hooks.json
(~/.codex/hooks.json; --user, the default) or the project's
<repository root>/.codex/hooks.json (--project, for the repository of the
current directory). The file is merged: other hooks stay as they are and where
they are; Needle's hook is added at the end, or updated in place; installing
twice changes nothing. A hooks file or config that cannot be edited safely
(not JSON or TOML Needle can merge, or not a regular file: a named pipe, a
device, a directory) is refused at once and nothing is changed.

Codex runs a user or project hook only when the user's config.toml trusts it
('codex exec' skips an untrusted hook without a word), so the trust entry
codex's own review would write is recorded in $CODEX_HOME/config.toml, unless
--no-trust. A project hooks file is read only in a trusted project: the
command says how to trust it when it is not.

Flags:
  --codex             install for Codex (the one client so far)
  --user              the user's hooks file (default)
  --project           the project's hooks file
  --data-dir DIR      the Needle data directory the hook uses
  --role-profile ID   the role profile of the hook's sessions (default "default")
  --cache-only        the hook never spawns a worker
  --deadline DUR      the hook's own deadline (default 4m); codex's timeout is one minute more
  --no-trust          do not record the trust entry; codex will ask to review the hook
`

const usageHookUninstall = `Usage: needle hook uninstall [--codex] [--user|--project]

Remove Needle's Stop hook from codex's hooks file (see 'needle hook install')
and the trust entries it recorded. Other hooks stay; the trust of hooks whose
position in the file changed is moved with them where it was recorded in the
plain form, otherwise codex will ask to review them again.

Flags:
  --codex      for Codex (the default and only client)
  --user       the user's hooks file (default)
  --project    the project's hooks file of the current directory's repository
`

// hookFiles returns the hooks file and the user's config.toml of a scope,
// and for the project scope the project root.
func (c *cli) hookFiles(project bool) (hooksFile, configFile, root string, err error) {
	home, err := codexHome()
	if err != nil {
		return "", "", "", err
	}
	configFile = filepath.Join(home, "config.toml")
	if !project {
		return filepath.Join(home, "hooks.json"), configFile, "", nil
	}
	if root, err = projectRoot(); err != nil {
		return "", "", "", err
	}
	return filepath.Join(root, ".codex", "hooks.json"), configFile, root, nil
}

// projectRoot is codex's project root for the current directory: the
// nearest directory holding .git, else the directory itself.
func projectRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", &Error{Op: "hook.install", Kind: kindIO, Err: err}
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return wd, nil
		}
	}
}

func (c *cli) hookInstall(args []string) int {
	fs := c.flags("hook install")
	forCodex := fs.Bool("codex", false, "")
	fs.Bool("user", false, "")
	project := fs.Bool("project", false, "")
	dataDir := fs.String("data-dir", "", "")
	profileID := fs.String("role-profile", DefaultProfileID, "")
	cacheOnly := fs.Bool("cache-only", false, "")
	deadline := fs.Duration("deadline", defaultHookDeadline, "")
	noTrust := fs.Bool("no-trust", false, "")
	if code, ok := c.parse(fs, usageHookInstall, args); !ok {
		return code
	}
	if !*forCodex || *dataDir == "" || fs.NArg() != 0 || *deadline <= 0 || userAndProject(args) {
		fmt.Fprintf(c.stderr, "needle hook install: --codex and --data-dir are required, --user and --project exclude each other\n\n%s", usageHookInstall)
		return 2
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	var data string
	if err == nil {
		data, err = filepath.Abs(*dataDir)
	}
	if err != nil {
		return c.fail("hook install", &Error{Op: "hook.install", Kind: kindIO, Err: err})
	}
	// The profile must exist now, not at the first stop.
	if err := c.checkHookProfile(data, *profileID); err != nil {
		return c.fail("hook install", err)
	}
	argv := []string{exe, "hook", "codex", "--data-dir", data, "--role-profile", *profileID}
	if *cacheOnly {
		argv = append(argv, "--cache-only")
	}
	argv = append(argv, "--deadline", deadline.String())
	hooksFile, configFile, root, err := c.hookFiles(*project)
	if err != nil {
		return c.fail("hook install", err)
	}
	res, err := installCodexHook(hooksFile, configFile, root, argv, *deadline, !*noTrust)
	if err != nil {
		return c.fail("hook install", err)
	}
	c.hookInstallReport(res)
	return 0
}

// checkHookProfile fails unless the role profile exists in the data
// directory.
func (c *cli) checkHookProfile(data, profileID string) error {
	h, release, err := c.openDataHome(data)
	if err != nil {
		return err
	}
	_, err = h.Profile(c.ctx, profileID)
	release()
	return err
}

// hookInstallReport prints where the hook went, whether it is trusted,
// and the notes of the install.
func (c *cli) hookInstallReport(res hookInstall) {
	verb := "installed the Needle Stop hook in"
	if !res.Changed {
		verb = "the Needle Stop hook is already installed in"
	}
	fmt.Fprintf(c.stdout, "%s %s\n", verb, res.HooksFile)
	if res.Trusted {
		fmt.Fprintf(c.stdout, "trusted in %s as hooks.state.%q (%s)\n", res.ConfigFile, res.Key, res.Hash)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(c.stdout, "note: %s\n", n)
	}
}

// userAndProject reports whether both --user and --project were given.
func userAndProject(args []string) bool {
	var user, project bool
	for _, a := range args {
		switch strings.TrimLeft(a, "-") {
		case "user", "user=true":
			user = true
		case "project", "project=true":
			project = true
		}
	}
	return user && project
}

func (c *cli) hookUninstall(args []string) int {
	fs := c.flags("hook uninstall")
	fs.Bool("codex", true, "")
	fs.Bool("user", false, "")
	project := fs.Bool("project", false, "")
	if code, ok := c.parse(fs, usageHookUninstall, args); !ok {
		return code
	}
	if fs.NArg() != 0 || userAndProject(args) {
		fmt.Fprintf(c.stderr, "needle hook uninstall: no arguments; --user and --project exclude each other\n\n%s", usageHookUninstall)
		return 2
	}
	hooksFile, configFile, _, err := c.hookFiles(*project)
	if err != nil {
		return c.fail("hook uninstall", err)
	}
	res, err := uninstallCodexHook(hooksFile, configFile)
	if err != nil {
		return c.fail("hook uninstall", err)
	}
	if res.Changed {
		fmt.Fprintf(c.stdout, "removed the Needle Stop hook from %s\n", res.HooksFile)
	} else {
		fmt.Fprintf(c.stdout, "no Needle Stop hook in %s\n", res.HooksFile)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(c.stdout, "note: %s\n", n)
	}
	return 0
}
