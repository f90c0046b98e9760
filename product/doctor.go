package product

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
	"golang.org/x/sys/unix"

	"github.com/needle-dev/needle/product/internal/codexhook"
	"github.com/needle-dev/needle/product/internal/ipc"
	"github.com/needle-dev/needle/product/web"
)

// needle doctor: what Needle depends on, each part checked where the
// commands that use it would look for it, and the command that fixes it.
// The checks read; they never run the hosts (Codex, Claude Code), and
// they change nothing but what the sandbox's self-test makes in the test
// cache (as the first test run would) and an existing store's pending
// migrations (as any command's open would).

// doctorStatus is a check's verdict: ok, warn (Needle works, with less)
// or fail (a command that needs the part will fail).
type doctorStatus string

const (
	doctorOK   doctorStatus = "ok"
	doctorWarn doctorStatus = "warn"
	doctorFail doctorStatus = "fail"
)

// doctorCheck is one line of needle doctor.
type doctorCheck struct {
	Check  string       `json:"check"`
	Status doctorStatus `json:"status"`
	Detail string       `json:"detail"`
	// Fix is the command (or the step) that makes the check pass; empty
	// when it passes.
	Fix string `json:"fix,omitempty"`
}

// doctorRun is what the checks share: the caller's directories and what
// the data directory's store says.
type doctorRun struct {
	c       *cli
	dataDir string // absolute
	repo    string // absolute; "" when not given
	// settings are the profile settings; nil when the store could not be
	// read (it does not exist yet, or the store check failed).
	settings map[string]string
	checks   []doctorCheck
}

// doctorProbeDeadline bounds each version probe (go, git, codex).
const doctorProbeDeadline = 30 * time.Second

// add appends a check's line.
func (d *doctorRun) add(check string, status doctorStatus, fix, format string, args ...any) {
	d.checks = append(d.checks, doctorCheck{Check: check, Status: status, Detail: fmt.Sprintf(format, args...), Fix: fix})
}

// runDoctor runs every check in order.
func (c *cli) runDoctor(dataDir, repo string) []doctorCheck {
	d := &doctorRun{c: c, dataDir: dataDir, repo: repo}
	d.tool("go", "install Go (https://go.dev/dl/) and put its bin directory on PATH", "env", "GOVERSION")
	d.tool("git", "install git (e.g. apt-get install git) and put it on PATH", "--version")
	d.repository()
	dirFailed := d.dataDirectory() == doctorFail
	if !d.store(dirFailed) {
		for _, check := range []string{"codex", "test-cache", "sandbox"} {
			d.add(check, doctorWarn, "", "not checked: the profile settings it depends on were not read (see store)")
		}
	} else {
		codex := d.worker()
		d.testCache()
		d.sandbox(codex)
	}
	d.runtime()
	d.codexMCP()
	d.claudeMCP()
	d.stopHook()
	return d.checks
}

// version runs path with args and returns the first line it prints.
func (d *doctorRun) version(path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(d.c.ctx, doctorProbeDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w %s", filepath.Base(path), strings.Join(args, " "), err, clip(oneLine(stderr.String()), 200))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return clip(line, 200), nil
}

// tool checks that name is on PATH and answers args (its version).
func (d *doctorRun) tool(name, fix string, args ...string) {
	path, err := d.c.lookPath(name)
	if err != nil {
		d.add(name, doctorFail, fix, "%s is not on PATH", name)
		return
	}
	v, err := d.version(path, args...)
	if err != nil {
		d.add(name, doctorFail, fix, "%s does not run: %v", path, err)
		return
	}
	d.add(name, doctorOK, "", "%s (%s)", v, path)
}

// repository checks that the repository, when given, is a git work tree:
// Needle snapshots a repository through git.
func (d *doctorRun) repository() {
	if d.repo == "" {
		return
	}
	git, err := d.c.lookPath("git")
	if err != nil {
		d.add("repository", doctorFail, "install git (e.g. apt-get install git) and put it on PATH", "%s cannot be read without git", d.repo)
		return
	}
	top, err := d.version(git, "-C", d.repo, "rev-parse", "--show-toplevel")
	if err != nil {
		d.add("repository", doctorFail, "git -C "+d.repo+" init", "%s is not a git work tree: Needle snapshots a repository through git", d.repo)
		return
	}
	d.add("repository", doctorOK, "", "%s (git work tree %s)", d.repo, top)
}

// dataDirectory checks the data directory and the modes of the store's
// files: the store holds the repositories' source, so it is the user's
// alone. It returns its verdict.
func (d *doctorRun) dataDirectory() doctorStatus {
	d.dataDirLine()
	return d.checks[len(d.checks)-1].Status
}

func (d *doctorRun) dataDirLine() {
	fi, err := os.Stat(d.dataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.add("data-dir", doctorWarn, "needle db check --data-dir "+d.dataDir,
			"%s does not exist yet; the first command creates it (mode 0700)", d.dataDir)
		return
	case err != nil:
		d.add("data-dir", doctorFail, "", "%v", err)
		return
	case !fi.IsDir():
		d.add("data-dir", doctorFail, "needle doctor --data-dir A_DIRECTORY", "%s is not a directory", d.dataDir)
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		d.add("data-dir", doctorFail, "use a data directory of your own", "%s belongs to uid %d, not to you (uid %d)", d.dataDir, st.Uid, os.Getuid())
		return
	}
	if d.repo != "" && inside(d.repo, d.dataDir) {
		d.add("data-dir", doctorFail, "use a --data-dir outside the repository (e.g. ~/.needle)",
			"%s is inside the repository %s: workers' checkouts must live outside it", d.dataDir, d.repo)
		return
	}
	var open []string
	for _, name := range []string{storeFileName, storeFileName + "-wal", storeFileName + "-shm"} {
		if f, err := os.Stat(filepath.Join(d.dataDir, name)); err == nil && f.Mode().Perm()&^0o600 != 0 {
			open = append(open, fmt.Sprintf("%s is %04o", name, f.Mode().Perm()))
		}
	}
	if len(open) > 0 {
		d.add("data-dir", doctorFail, "chmod 600 "+filepath.Join(d.dataDir, storeFileName)+"*",
			"the store's files must be the owner's alone: %s", strings.Join(open, ", "))
		return
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		d.add("data-dir", doctorWarn, "chmod 700 "+d.dataDir, "%s is %04o: other users can list it (the store files are 0600)", d.dataDir, perm)
		return
	}
	d.add("data-dir", doctorOK, "", "%s (%04o)", d.dataDir, fi.Mode().Perm())
}

// store opens an existing store, verifies it as needle db check does
// (which applies pending migrations) and reads the profile settings. It
// does not open the store of a data directory that failed its check:
// opening narrows the files' modes, and the doctor reports, not repairs.
// It reports whether the settings are known (none when there is no store).
func (d *doctorRun) store(dirFailed bool) bool {
	path := filepath.Join(d.dataDir, storeFileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if !dirFailed {
			d.add("store", doctorOK, "", "no store yet: the first command creates %s", path)
		}
		return true
	}
	if dirFailed {
		d.add("store", doctorWarn, "", "not opened while the data-dir check fails")
		return false
	}
	fix := "needle db check --data-dir " + d.dataDir
	h, release, err := d.c.openDataHome(d.dataDir)
	if err != nil {
		d.add("store", doctorFail, fix, "%s", oneLine(userMessage(err)))
		return false
	}
	defer release()
	rep, err := h.Check(d.c.ctx)
	if err == nil {
		d.settings, err = h.Settings(d.c.ctx)
	}
	if err != nil {
		d.add("store", doctorFail, fix, "%s", oneLine(userMessage(err)))
		return false
	}
	d.add("store", doctorOK, "", "%s, schema %d (head %d)", path, rep.SchemaVersion, rep.HeadVersion)
	return true
}

// worker checks the App Server command of workers: codex.command, else
// codex on PATH (which no command uses until it is configured). It
// returns the worker configuration the sandbox defaults from.
func (d *doctorRun) worker() *CodexConfig {
	set := "needle config set --data-dir " + d.dataDir + " codex.command "
	command := strings.TrimSpace(d.settings["codex.command"])
	if command == "" {
		path, err := d.c.lookPath("codex")
		if err != nil {
			d.add("codex", doctorFail, "install codex (npm install -g @openai/codex), then: "+set+"codex",
				"no worker: codex.command is not set and codex is not on PATH; needs are answered from evidence only and needle change run refuses")
			return nil
		}
		v, err := d.version(path, "--version")
		if err != nil {
			d.add("codex", doctorFail, "reinstall codex (npm install -g @openai/codex)", "%s does not run: %v", path, err)
			return nil
		}
		d.add("codex", doctorWarn, set+path,
			"no worker configured (codex.command); %s on PATH (%s) is used once configured, or by a registration's --codex", v, path)
		return nil
	}
	cfg, err := d.c.codexSettings(d.settings, "")
	if err != nil {
		d.add("codex", doctorFail, set+"codex", "codex.command %q: %s", command, oneLine(userMessage(err)))
		return nil
	}
	v, err := d.version(cfg.Command[0], "--version")
	if err != nil {
		d.add("codex", doctorWarn, set+"codex", "codex.command %q: %v", command, err)
		return cfg
	}
	if cfg.Home == "" {
		d.add("codex", doctorWarn, "needle config set --data-dir "+d.dataDir+" codex.home DIR",
			"codex.command %q: %s (%s); no codex home ($CODEX_HOME, ~/.codex or codex.home): a worker has no model or credentials", command, v, cfg.Command[0])
		return cfg
	}
	d.add("codex", doctorOK, "", "codex.command %q: %s (%s); worker home %s", command, v, cfg.Command[0], cfg.Home)
	return cfg
}

// testsConfig is how tests would run: the settings resolved as an engine
// resolves them, the cache defaulting to DATA_DIR/testrun.
func (d *doctorRun) testsConfig(codex *CodexConfig) (TestsConfig, error) {
	tc, err := d.c.testsSettings(d.settings, codex)
	if err != nil {
		return tc, err
	}
	tc = tc.resolve(d.dataDir)
	if tc.CacheDir == "" {
		tc.CacheDir = filepath.Join(d.dataDir, "testrun")
	}
	return tc, nil
}

// testCache checks the test runs' cache directory: absolute, and a
// writable directory or one that can be made.
func (d *doctorRun) testCache() {
	tc, _ := d.testsConfig(nil)
	dir, fix := tc.CacheDir, "needle config set --data-dir "+d.dataDir+" tests.cache /a/writable/directory"
	if !filepath.IsAbs(dir) {
		d.add("test-cache", doctorFail, fix, "%s is not an absolute path", dir)
		return
	}
	at := dir
	for {
		fi, err := os.Stat(at)
		if err == nil && !fi.IsDir() {
			d.add("test-cache", doctorFail, fix, "%s is not a directory", at)
			return
		}
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(at) == at {
			d.add("test-cache", doctorFail, fix, "%s: %v", dir, err)
			return
		}
		at = filepath.Dir(at)
	}
	if err := unix.Access(at, unix.W_OK|unix.X_OK); err != nil {
		d.add("test-cache", doctorFail, fix, "%s is not writable (%v)", at, err)
		return
	}
	if at != dir {
		d.add("test-cache", doctorOK, "", "%s (made at the first test run)", dir)
		return
	}
	d.add("test-cache", doctorOK, "", "%s (writable)", dir)
}

// sandbox runs the sandbox's self-test every test runner runs before its
// first test: Needle never runs a test outside it. Under a data directory
// that does not exist yet, the self-test runs in a scratch cache, so the
// doctor does not make the data directory.
func (d *doctorRun) sandbox(codex *CodexConfig) {
	tc, err := d.testsConfig(codex)
	fix := "needle config set --data-dir " + d.dataDir + " tests.codex /absolute/path/to/codex"
	if err != nil {
		d.add("sandbox", doctorFail, fix, "%s", oneLine(userMessage(err)))
		return
	}
	if tc.Codex == "" {
		d.add("sandbox", doctorFail, "install codex (npm install -g @openai/codex) or: "+fix,
			"no codex for the test sandbox (tests.codex, codex.command or codex on PATH): focused_tests are certified by static reach only and a change's tests cannot run")
		return
	}
	if _, err := os.Stat(d.dataDir); err != nil && strings.HasPrefix(tc.CacheDir, d.dataDir+string(filepath.Separator)) {
		scratch, err := os.MkdirTemp("", "needle-doctor-")
		if err != nil {
			d.add("sandbox", doctorFail, "", "%v", err)
			return
		}
		defer os.RemoveAll(scratch)
		tc.CacheDir = scratch
	}
	if err := CheckTests(d.c.ctx, tc); err != nil {
		d.add("sandbox", doctorFail, fix, "%s: %s", tc.Codex, oneLine(userMessage(err)))
		return
	}
	d.add("sandbox", doctorOK, "", "codex sandbox of %s passed the self-test (no network, writes confined)", tc.Codex)
}

// runtime asks the runtime of the data directory for its status over its
// socket.
func (d *doctorRun) runtime() {
	sock := filepath.Join(d.dataDir, socketFileName)
	fix := "needle serve --data-dir " + d.dataDir
	if len(sock) > ipc.MaxPath {
		d.add("runtime", doctorWarn, "use a shorter --data-dir path", "%s is too long for a unix socket: no runtime can serve it", sock)
		return
	}
	ctx, cancel := context.WithTimeout(d.c.ctx, doctorProbeDeadline)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ipc.BaseURL+"/api/v1/status", nil)
	resp, err := ipc.Client(sock).Do(req)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.add("runtime", doctorWarn, fix, "no runtime serves %s: no web UI; each command opens the store itself", d.dataDir)
		return
	case errors.Is(err, syscall.ECONNREFUSED):
		d.add("runtime", doctorWarn, fix, "%s is left from a runtime that stopped; needle serve replaces it", sock)
		return
	case err != nil:
		d.add("runtime", doctorFail, fix, "%s: %v", sock, err)
		return
	}
	defer resp.Body.Close()
	var status web.Status
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&status) != nil {
		d.add("runtime", doctorFail, fix, "the runtime at %s answered %s", sock, resp.Status)
		return
	}
	if status.Schema != schemaHead() {
		d.add("runtime", doctorWarn, "restart it: "+fix, "the runtime (needle %s) serves schema %d; this needle's head is %d", status.Version, status.Schema, schemaHead())
		return
	}
	d.add("runtime", doctorOK, "", "a runtime (needle %s) serves %s", status.Version, d.dataDir)
}

// mcpServer is one MCP server a host's configuration starts.
type mcpServer struct {
	Name    string
	Command string
	Args    []string
	Source  string // the file (and table) that names it
	// Getenv reads the environment the host starts the server with; nil
	// means the doctor's own (the host passes its whole environment on).
	Getenv func(string) string
}

// needleDataDir reports whether s runs needle mcp serve, and the data
// directory it names ("" when none).
func (s mcpServer) needleDataDir() (string, bool) {
	if filepath.Base(s.Command) != "needle" || len(s.Args) < 2 || s.Args[0] != "mcp" || s.Args[1] != "serve" {
		return "", false
	}
	return flagArg(s.Args[2:], "data-dir"), true
}

// judgeMCP turns the servers a host's files name into the check's line.
func (d *doctorRun) judgeMCP(check, host, fix string, servers []mcpServer) {
	for _, s := range servers {
		dir, ok := s.needleDataDir()
		if !ok {
			continue
		}
		if dir == "" && s.Getenv != nil {
			// No --data-dir: the server takes the default of the
			// environment the host gives it, which may not be the
			// doctor's.
			def, err := dataDirIn(s.Getenv)
			if def != d.dataDir || err != nil {
				d.add(check, doctorWarn, fix, "%s's server %q (%s) names no --data-dir, and %s starts it without $%s or $XDG_DATA_HOME of this shell: it serves %s, not %s",
					host, s.Name, s.Source, host, envDataDir, cmp.Or(def, "no data directory"), d.dataDir)
				return
			}
		}
		if dir != "" && d.c.absPath(dir) != d.dataDir {
			d.add(check, doctorWarn, fix, "%s's server %q (%s) serves the data directory %s, not %s", host, s.Name, s.Source, dir, d.dataDir)
			return
		}
		d.add(check, doctorOK, "", "%s starts needle mcp serve as %q (%s)", host, s.Name, s.Source)
		return
	}
	d.add(check, doctorWarn, fix, "%s does not start needle mcp serve: its model cannot ask Needle", host)
}

// mcpServeArgs are the arguments of needle mcp serve in a fix.
func (d *doctorRun) mcpServeArgs(repo, model string) string {
	return "needle mcp serve --data-dir " + d.dataDir + " --repository " + repo + " --main-model " + model + " --role-profile default" + d.workerFlag()
}

// workerFlag is what a registration adds for workers, as the README's
// does: --codex codex while no codex.command setting gives every command
// one (with it, the registration needs none).
func (d *doctorRun) workerFlag() string {
	if strings.TrimSpace(d.settings["codex.command"]) != "" {
		return ""
	}
	return " --codex codex"
}

// codexServerEnv is the environment codex 0.171.0 starts a stdio MCP server
// with: only a few variables of its own (codex-rs/rmcp-client,
// DEFAULT_ENV_VARS: HOME, PATH, USER, LANG, …; not NEEDLE_DATA_DIR or
// XDG_DATA_HOME), those the server's env_vars names, and its env table. It
// starts the server in the session's working directory, so that needle mcp
// serve's --repository default is the repository codex runs in.
func codexServerEnv(env map[string]string, envVars []any) func(string) string {
	return func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		if name == "HOME" {
			return os.Getenv(name)
		}
		for _, v := range envVars {
			named, _ := v.(string)
			if t, ok := v.(map[string]any); ok {
				named, _ = t["name"].(string)
			}
			if named == name {
				return os.Getenv(name)
			}
		}
		return ""
	}
}

// codexMCP reads codex's config.toml for an [mcp_servers.NAME] that runs
// needle mcp serve.
func (d *doctorRun) codexMCP() {
	// One registration serves every repository (codex starts the server
	// where the session runs); --data-dir only when the server's default
	// is not the doctor's.
	fix := "codex mcp add needle -- needle mcp serve"
	if def, err := dataDirIn(codexServerEnv(nil, nil)); err != nil || def != d.dataDir {
		fix += " --data-dir " + d.dataDir
	}
	fix += " --main-model gpt-5-codex --role-profile default" + d.workerFlag()
	home, err := codexHome()
	if err != nil {
		d.add("mcp-codex", doctorWarn, fix, "%s", oneLine(userMessage(err)))
		return
	}
	path := filepath.Join(home, "config.toml")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.add("mcp-codex", doctorFail, "", "%v", err)
		return
	}
	var doc struct {
		Servers map[string]struct {
			Command string            `toml:"command"`
			Args    []string          `toml:"args"`
			Env     map[string]string `toml:"env"`
			EnvVars []any             `toml:"env_vars"`
			Enabled *bool             `toml:"enabled"`
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(data), &doc); err != nil {
		d.add("mcp-codex", doctorFail, "repair "+path, "%s is not TOML codex can read: %s", path, oneLine(err.Error()))
		return
	}
	var servers []mcpServer
	for _, name := range sortedKeys(doc.Servers) {
		s := doc.Servers[name]
		if s.Enabled != nil && !*s.Enabled {
			continue
		}
		servers = append(servers, mcpServer{Name: name, Command: s.Command, Args: s.Args, Source: path, Getenv: codexServerEnv(s.Env, s.EnvVars)})
	}
	d.judgeMCP("mcp-codex", "Codex", fix, servers)
}

// claudeMCP reads Claude Code's MCP servers: the project's .mcp.json, and
// ~/.claude.json (the user's, and the project's local ones).
func (d *doctorRun) claudeMCP() {
	scope, repo := "--scope user", "/path/to/repo"
	if d.repo != "" {
		scope, repo = "--scope project", "."
	}
	fix := "claude mcp add " + scope + " needle -- " + d.mcpServeArgs(repo, "claude-sonnet")
	if d.repo != "" {
		fix = "cd " + d.repo + " && " + fix
	}
	var servers []mcpServer
	if d.repo != "" {
		path := filepath.Join(d.repo, ".mcp.json")
		s, err := claudeServers(path, func(doc claudeConfig) map[string]claudeServer { return doc.Servers })
		if err != nil {
			d.add("mcp-claude", doctorFail, "repair "+path, "%s", err)
			return
		}
		servers = append(servers, s...)
	}
	if home, err := os.UserHomeDir(); err == nil {
		path := filepath.Join(home, ".claude.json")
		s, err := claudeServers(path, func(doc claudeConfig) map[string]claudeServer {
			all := map[string]claudeServer{}
			for k, v := range doc.Projects[d.repo].Servers {
				all[k] = v
			}
			for k, v := range doc.Servers {
				all[k] = v
			}
			return all
		})
		if err != nil {
			d.add("mcp-claude", doctorFail, "repair "+path, "%s", err)
			return
		}
		servers = append(servers, s...)
	}
	d.judgeMCP("mcp-claude", "Claude Code", fix, servers)
}

// claudeConfig is what the doctor reads of a Claude Code file.
type claudeConfig struct {
	Servers  map[string]claudeServer `json:"mcpServers"`
	Projects map[string]struct {
		Servers map[string]claudeServer `json:"mcpServers"`
	} `json:"projects"`
}

type claudeServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// claudeServers reads the servers pick takes from the Claude Code file at
// path (none when it is missing).
func claudeServers(path string, pick func(claudeConfig) map[string]claudeServer) ([]mcpServer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc claudeConfig
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s is not JSON Claude Code can read: %v", path, err)
	}
	found := pick(doc)
	var out []mcpServer
	for _, name := range sortedKeys(found) {
		out = append(out, mcpServer{Name: name, Command: found[name].Command, Args: found[name].Args, Source: path})
	}
	return out, nil
}

// stopHook looks for Needle's Stop hook in codex's hooks files (the
// user's, and the repository's) and for its trust in the user's
// config.toml: codex runs an untrusted hook never, without a word.
func (d *doctorRun) stopHook() {
	fix := "needle hook install --codex --data-dir " + d.dataDir
	home, err := codexHome()
	if err != nil {
		d.add("stop-hook", doctorWarn, fix, "%s", oneLine(userMessage(err)))
		return
	}
	config := filepath.Join(home, "config.toml")
	files := []string{filepath.Join(home, "hooks.json")}
	if d.repo != "" {
		files = append(files, filepath.Join(d.repo, ".codex", "hooks.json"))
	}
	spec := codexHookSpec([]string{"needle", "hook", "codex"}, 0)
	for i, file := range files {
		found, err := codexhook.Find(file, spec)
		if err != nil {
			d.add("stop-hook", doctorFail, "repair "+file+", then: "+fix, "%s", oneLine(err.Error()))
			return
		}
		for _, h := range found {
			trusted, err := codexhook.TrustedHash(config, h.Key)
			switch dir := hookDataDir(h.Command); {
			case err != nil:
				d.add("stop-hook", doctorFail, "repair "+config, "%s", oneLine(err.Error()))
			case dir != d.dataDir:
				d.add("stop-hook", doctorWarn, fix, "installed in %s for the data directory %q, not %s", file, dir, d.dataDir)
			case h.Hash == "" || trusted != h.Hash:
				d.add("stop-hook", doctorWarn, fix, "installed in %s but not trusted in %s: codex skips it", file, config)
			case i == 1 && !d.projectTrusted(config):
				d.add("stop-hook", doctorWarn, "add to "+config+": "+strings.ReplaceAll(codexhook.ProjectLine(d.repo), "\n", " "),
					"installed and trusted in %s, but codex reads it only in a trusted project", file)
			default:
				d.add("stop-hook", doctorOK, "", "installed in %s and trusted", file)
			}
			return
		}
	}
	d.add("stop-hook", doctorWarn, fix, "not installed: @@need markers in Codex sessions go unanswered (MCP still works)")
}

// hookDataDir is the --data-dir of an installed hook's command line.
func hookDataDir(command string) string {
	words, _ := codexhook.Words(command)
	return flagArg(words, "data-dir")
}

// projectTrusted reports whether the user's config trusts the repository.
func (d *doctorRun) projectTrusted(config string) bool {
	facts, err := codexhook.InspectConfig(config)
	return err == nil && facts.TrustedProjects[d.repo]
}
