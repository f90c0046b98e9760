package testscripts

// needlebench demo end to end, as make demo runs it: the real needle and
// needlebench commands, the replay App Server, the pinned codex's sandbox,
// a real needle serve on loopback.

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/needle-dev/needle/product/testenv"
)

// demoSteps are what each step of the demo must print: the worker's
// certified answer, the hit, the answer following the moved lines, the
// stale answer refused, the lifecycle awaiting approval with its test passed and its patch verified.
var demoSteps = []string{
	`status worker, resolution miss, worker spawned: true\n   implementation_location: search\.go:15-17 \[artifact b3:[0-9a-f]{64}\]`,
	`status hit, resolution exact_hit, worker spawned: false\n   implementation_location: search\.go:15-17 `,
	`status hit, resolution exact_hit, worker spawned: false\n   implementation_location: search\.go:18-20 `,
	`status bypass, resolution stale, worker spawned: false\n   → stale`,
	`apply/awaiting_approval`,
	`test TestSplitCRLF: passed`,
	`verification b3:[0-9a-f]{64}: verified`,
	`next: needle change approve --repository repo --data-dir data lcy_[0-9a-f]{24}\n`,
}

// demoCommand is needlebench demo over this repository with a temporary
// directory of its own (to see what it leaves) and the shared test cache.
func demoCommand(t *testing.T, tmp string, flags ...string) *exec.Cmd {
	args := append([]string{"demo", "--root", testenv.ModuleRoot(t), "--codex", testenv.Codex(t),
		"--tests-cache", testenv.Cache(t, "testrun-lifecycle")}, flags...)
	cmd := exec.Command("needlebench", args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	return cmd
}

func checkDemoSteps(t *testing.T, out string) {
	t.Helper()
	for _, re := range demoSteps {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("the demo's output lacks %s:\n%s", re, out)
		}
	}
}

// TestDemo_Wait: with --wait the demo keeps needle serve running; its
// login URL logs a browser in on loopback and the API shows the demo's
// lifecycle awaiting approval; SIGINT stops it, and it removes its
// directory.
func TestDemo_Wait(t *testing.T) {
	tmp := t.TempDir()
	cmd := demoCommand(t, tmp, "--wait")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var out strings.Builder
	lines := bufio.NewScanner(pipe)
	for !strings.Contains(out.String(), "Press Ctrl-C to stop.") {
		if !lines.Scan() {
			cmd.Wait()
			t.Fatalf("the demo ended before it served:\n%s\nstderr:\n%s", out.String(), stderr.String())
		}
		out.WriteString(lines.Text() + "\n")
	}
	checkDemoSteps(t, out.String())
	login := regexp.MustCompile(`log in: (http://127\.0\.0\.1:\d+/login\?code=[0-9a-f]+)\n`).FindStringSubmatch(out.String())
	lcy := regexp.MustCompile(`lcy_[0-9a-f]{24}`).FindString(out.String())
	if login == nil || lcy == "" {
		t.Fatalf("no loopback login URL or lifecycle id in:\n%s", out.String())
	}
	shootDemo(t, login[1], lcy)
	checkDemoUI(t, freshLogin(t, out.String()), lcy)

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(pipe)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the demo after SIGINT: %v\n%s\nstderr:\n%s", err, rest, stderr.String())
	}
	if !strings.Contains(string(rest), "needle serve stopped.") || !strings.Contains(string(rest), "removed ") {
		t.Errorf("after SIGINT the demo printed:\n%s", rest)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the demo left %v in its temporary directory", left)
	}
}

// freshLogin is a new one-time login URL of the demo's runtime (the
// printed one is used): needle ui on the demo's data directory.
func freshLogin(t *testing.T, out string) string {
	t.Helper()
	dir := regexp.MustCompile(`Throwaway directory (\S+):`).FindStringSubmatch(out)
	if dir == nil {
		t.Fatalf("the demo names no throwaway directory:\n%s", out)
	}
	url, err := exec.Command("needle", "ui", "--data-dir", filepath.Join(dir[1], "data")).Output()
	if err != nil {
		t.Fatalf("needle ui on the demo's data directory: %v", err)
	}
	login := regexp.MustCompile(`http://127\.0\.0\.1:\d+/login\?code=[0-9a-f]+`).FindString(string(url))
	if login == "" {
		t.Fatalf("needle ui printed no login URL: %s", url)
	}
	return login
}

// checkDemoUI logs in through the login URL as a browser does and reads
// the lifecycles from the API with the session cookie.
func checkDemoUI(t *testing.T, login, lcy string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	resp, err := client.Get(login)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "<html") {
		t.Fatalf("GET %s: %s\n%s", login, resp.Status, page)
	}
	resp, err = client.Get(strings.Split(login, "/login")[0] + "/api/v1/lifecycles")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), lcy) || !strings.Contains(string(body), "awaiting_approval") {
		t.Errorf("GET /api/v1/lifecycles with the session: %s\n%s\nwant %s awaiting approval", resp.Status, body, lcy)
	}
}

// TestDemo_Keep: without a terminal and without --wait the demo logs in
// itself and stops the runtime; --keep leaves the repository and data
// directory, where the lifecycle awaits approval and repo/ is unchanged.
func TestDemo_Keep(t *testing.T) {
	tmp := t.TempDir()
	out, err := demoCommand(t, tmp, "--keep").Output()
	if err != nil {
		t.Fatalf("needlebench demo --keep: %v\n%s", err, out)
	}
	checkDemoSteps(t, string(out))
	for _, want := range []string{"the demo logged in with that URL (200 OK, session cookie set)", "needle serve stopped.", "kept "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "needle-demo-*"))
	if len(dirs) != 1 {
		t.Fatalf("--keep kept %v, want one needle-demo-* directory", dirs)
	}
	repo, data := filepath.Join(dirs[0], "repo"), filepath.Join(dirs[0], "data")
	list, err := exec.Command("needle", "change", "list", "--repository", repo, "--data-dir", data).CombinedOutput()
	if err != nil || !strings.Contains(string(list), "apply/awaiting_approval") {
		t.Errorf("needle change list in the kept directory: %v\n%s", err, list)
	}
	if st := git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the demo changed repo/ before any approval:\n%s", st)
	}
}

// TestDemo_BadInput: wrong flags are a usage error (exit 2) that says
// what is wrong, and the demo creates nothing.
func TestDemo_BadInput(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--root", "/nonexistent"}, "--root /nonexistent is not a Needle repository"},
		{[]string{"--codex", "/nonexistent/codex"}, "the lifecycle's test run needs the pinned codex for its sandbox"},
		{[]string{"--needle", "/nonexistent/needle"}, "cannot find the needle command"},
		{[]string{"--no-serve", "--wait"}, "--wait waits on needle serve, which --no-serve skips"},
		{[]string{"extra"}, "needlebench demo: takes no arguments"},
	} {
		tmp := t.TempDir()
		// Later flags win: each case overrides demoCommand's own.
		cmd := demoCommand(t, tmp, tc.flags...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("demo %v: %v, stderr:\n%s\nwant exit 2 saying %q", tc.flags, err, stderr.String(), tc.want)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("demo %v left %v", tc.flags, left)
		}
	}
}
