package product

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runtimeCheck is needle doctor's runtime line for dataDir.
func runtimeCheck(t *testing.T, dataDir string) doctorCheck {
	t.Helper()
	d := &doctorRun{c: &cli{ctx: context.Background()}, dataDir: dataDir}
	d.runtime()
	if len(d.checks) != 1 {
		t.Fatalf("the runtime check made %d lines", len(d.checks))
	}
	return d.checks[0]
}

// TestDoctor_Runtime: the runtime line is ok while a runtime answers on
// the data directory's socket; once it stopped it warns, naming needle
// serve, and a socket a dead runtime left behind is told as such.
func TestDoctor_Runtime(t *testing.T) {
	data := shortDir(t)
	rt, err := startRuntime(context.Background(), runtimeConfig{DataDir: data, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if c := runtimeCheck(t, data); c.Status != doctorOK || !strings.Contains(c.Detail, "serves "+data) || c.Fix != "" {
		t.Errorf("with a runtime: %+v", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if c := runtimeCheck(t, data); c.Status != doctorWarn || !strings.Contains(c.Detail, "no runtime serves") || c.Fix != "needle serve --data-dir "+data {
		t.Errorf("after shutdown: %+v", c)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(data, socketFileName), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if c := runtimeCheck(t, data); c.Status != doctorWarn || !strings.Contains(c.Detail, "left from a runtime that stopped") {
		t.Errorf("with a stale socket: %+v", c)
	}
}

// codexMCPCheck is needle doctor's mcp-codex line for dataDir, with
// config as $CODEX_HOME/config.toml.
func codexMCPCheck(t *testing.T, dataDir, config string) doctorCheck {
	t.Helper()
	home := t.TempDir()
	MustWriteFile(t, filepath.Join(home, "config.toml"), config)
	t.Setenv("CODEX_HOME", home)
	d := &doctorRun{c: &cli{ctx: context.Background()}, dataDir: dataDir}
	d.codexMCP()
	if len(d.checks) != 1 {
		t.Fatalf("the mcp-codex check made %d lines", len(d.checks))
	}
	return d.checks[0]
}

// TestDoctor_CodexMCPDataDir: codex starts an MCP server with HOME but
// without NEEDLE_DATA_DIR or XDG_DATA_HOME (unless its env table or
// env_vars pass them), so the README's registration, which names no
// --data-dir, serves $HOME/.local/share/needle whatever this shell sets.
// The doctor judges it by that, and its fix is the README's registration,
// with --data-dir only when the default is not the doctor's.
func TestDoctor_CodexMCPDataDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv(envDataDir, "")
	def := filepath.Join(home, ".local", "share", "needle")
	other := filepath.Join(t.TempDir(), "data")
	readme := "[mcp_servers.needle]\ncommand = \"needle\"\nargs = [\"mcp\", \"serve\", \"--main-model\", \"gpt-5-codex\", \"--role-profile\", \"default\", \"--codex\", \"codex\"]\n"

	if c := codexMCPCheck(t, def, readme); c.Status != doctorOK {
		t.Errorf("the README's registration, doctor of the default data directory: %+v", c)
	}
	// The shell sets NEEDLE_DATA_DIR (so the doctor's data directory is
	// other), codex does not pass it on.
	t.Setenv(envDataDir, other)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "xdg"))
	c := codexMCPCheck(t, other, readme)
	if c.Status != doctorWarn || !strings.Contains(c.Detail, "names no --data-dir") || !strings.Contains(c.Detail, "it serves "+def+", not "+other) ||
		c.Fix != "codex mcp add needle -- needle mcp serve --data-dir "+other+" --main-model gpt-5-codex --role-profile default --codex codex" {
		t.Errorf("the README's registration, NEEDLE_DATA_DIR set in the shell: %+v", c)
	}
	// Passed on by the env table (codex mcp add --env) or env_vars.
	for name, config := range map[string]string{
		"env":            readme + "env = { NEEDLE_DATA_DIR = \"" + other + "\" }\n",
		"env_vars":       readme + "env_vars = [\"NEEDLE_DATA_DIR\"]\n",
		"env_vars table": readme + "env_vars = [{ name = \"NEEDLE_DATA_DIR\" }]\n",
	} {
		if c := codexMCPCheck(t, other, config); c.Status != doctorOK {
			t.Errorf("NEEDLE_DATA_DIR passed on by %s: %+v", name, c)
		}
	}
	// No registration: the fix registers the README's way.
	c = codexMCPCheck(t, other, "model = \"m\"\n")
	if c.Status != doctorWarn || c.Fix != "codex mcp add needle -- needle mcp serve --data-dir "+other+" --main-model gpt-5-codex --role-profile default --codex codex" {
		t.Errorf("no registration: %+v", c)
	}
	t.Setenv(envDataDir, "")
	t.Setenv("XDG_DATA_HOME", "")
	if c := codexMCPCheck(t, def, "model = \"m\"\n"); c.Fix != "codex mcp add needle -- needle mcp serve --main-model gpt-5-codex --role-profile default --codex codex" {
		t.Errorf("no registration, the default data directory: %+v", c)
	}
}
