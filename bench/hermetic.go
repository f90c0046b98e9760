package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// How the harness runs the go command and third-party test code. Every go
// command it runs on a corpus module is hermetic: nothing is fetched
// (GOPROXY=off; the dependencies were downloaded through the proxy, and
// verified, when the module was materialized), the local toolchain, no
// workspace, no vet step. Third-party test binaries run inside the pinned
// codex's Linux sandbox (`codex sandbox`: bubblewrap, no network, writes
// confined to the roots the harness names), which the harness checks with
// a probe before it trusts it.

// goEnv is the environment of the harness's go commands: the user's, less
// every setting that could fetch or redirect, plus extra.
func goEnv(extra ...string) []string {
	drop := map[string]bool{"GOFLAGS": true, "GOPROXY": true, "GOSUMDB": true, "GONOSUMDB": true, "GONOSUMCHECK": true,
		"GOPRIVATE": true, "GONOPROXY": true, "GOINSECURE": true, "GOTOOLCHAIN": true, "GOWORK": true, "GOENV": true, "GOVCS": true}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	env = append(env, "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off", "GOENV=off", "GOTELEMETRY=off")
	return append(env, extra...)
}

// goCommand runs the go command hermetically in dir and returns its
// stdout; a failure carries its stderr.
func goCommand(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = goEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 4000 {
			msg = msg[:4000] + " …"
		}
		return out, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, msg)
	}
	return out, nil
}

// goValue is `go env NAME`.
func goValue(ctx context.Context, name string) (string, error) {
	out, err := goCommand(ctx, "", "env", name)
	return strings.TrimSpace(string(out)), err
}

// sandbox runs third-party test code. A nil *sandbox runs it unsandboxed
// (corpus generate --unsandboxed: the corpus modules are pinned
// third-party code we chose, but the default is the sandbox).
type sandbox struct {
	codex string // the codex binary
	home  string // its CODEX_HOME: an empty harness-owned directory
}

// sandboxProfile is the permission profile the command line defines.
const sandboxProfile = "needlebench_coverage"

// wrap returns the argv running argv in dir where only writable can be
// written and no socket can be opened.
func (s *sandbox) wrap(dir string, writable []string, argv []string) []string {
	if s == nil {
		return argv
	}
	var table strings.Builder
	table.WriteString(`{"/"="read"`)
	for _, w := range writable {
		fmt.Fprintf(&table, ",%s=\"write\"", tomlQuote(w))
	}
	table.WriteString("}")
	return append([]string{s.codex, "sandbox",
		"-c", "permissions." + sandboxProfile + ".filesystem=" + table.String(),
		"-c", "permissions." + sandboxProfile + ".network={enabled=false}",
		"-P", sandboxProfile, "-C", dir, "--"}, argv...)
}

func (s *sandbox) env() []string {
	if s == nil {
		return nil
	}
	return []string{"CODEX_HOME=" + s.home}
}

func tomlQuote(s string) string {
	b, _ := json.Marshal(s) // a JSON string without control characters is a TOML basic string
	return string(b)
}

func (s *sandbox) String() string {
	if s == nil {
		return "none: the tests ran unsandboxed (--unsandboxed)"
	}
	return "codex sandbox: no network, writes confined to the module copy and a scratch directory"
}

// probeSource tries what a test must not do inside the sandbox.
const probeSource = `package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

func main() {
	inside, outside, addr := os.Args[1], os.Args[2], os.Args[3]
	if err := os.WriteFile(filepath.Join(inside, "probe"), []byte("ok"), 0o644); err != nil {
		fmt.Println("write inside failed:", err)
	}
	if err := os.WriteFile(filepath.Join(outside, "probe"), []byte("escaped"), 0o644); err == nil {
		fmt.Println("write outside succeeded")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		fmt.Println("tcp connect succeeded")
	}
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		l.Close()
		fmt.Println("tcp listen succeeded")
	}
}
`

// probe checks the sandbox before any third-party code runs in it: a
// write inside its writable root works, a write outside, a TCP connect to
// a loopback listener and a TCP listen all fail.
func (s *sandbox) probe(ctx context.Context, scratch string) error {
	if s == nil {
		return nil
	}
	dir, err := os.MkdirTemp(scratch, "probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src, inside, outside := filepath.Join(dir, "src"), filepath.Join(dir, "inside"), filepath.Join(dir, "outside")
	for _, d := range []string{src, inside, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module probe\n\ngo 1.21\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(probeSource), 0o644); err != nil {
		return err
	}
	bin := filepath.Join(dir, "probe")
	if _, err := goCommand(ctx, src, "build", "-o", bin, "."); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var out, stderr bytes.Buffer
	r := runGroup(ctx, time.Minute, inside, append(s.env(), "PATH=/usr/bin:/bin"),
		s.wrap(inside, []string{inside}, []string{bin, inside, outside, ln.Addr().String()}), &out, &stderr)
	if r != nil {
		return fmt.Errorf("the sandbox did not run its probe: %v: %s", r, stderr.String())
	}
	if msg := strings.TrimSpace(out.String()); msg != "" {
		return fmt.Errorf("the sandbox failed its probe: %s", msg)
	}
	if _, err := os.Stat(filepath.Join(outside, "probe")); err == nil {
		return errors.New("the sandbox failed its probe: a file was written outside")
	}
	return nil
}

// runGroup runs argv in its own process group with env, killing the whole
// group at the deadline.
func runGroup(ctx context.Context, deadline time.Duration, dir string, env, argv []string, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("killed after %s", deadline)
	}
	return err
}
