package product

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/ipc"
	"github.com/needle-dev/needle/product/internal/sse"
	"github.com/needle-dev/needle/product/web"
)

// serveProc is a `needle serve` process (this test binary as needle).
type serveProc struct {
	cmd    *exec.Cmd
	url    string
	login  string
	sock   string
	stderr *syncBuffer
	exited chan error
}

// syncBuffer is a bytes buffer safe for a process's writes and a test's
// reads.
type syncBuffer struct {
	mu      sync.Mutex
	b       strings.Builder
	written chan struct{} // signalled after each write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{}, 1)
	}
	select {
	case s.written <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

// waitCount waits until the buffer holds sub n times; false after d.
func (s *syncBuffer) waitCount(sub string, n int, d time.Duration) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		if s.written == nil {
			s.written = make(chan struct{}, 1)
		}
		got, written := strings.Count(s.b.String(), sub), s.written
		s.mu.Unlock()
		if got >= n {
			return got == n
		}
		select {
		case <-written:
		case <-deadline:
			return false
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe starts `needle serve` on dataDir and waits until it printed
// where it listens (it prints once both servers listen). The process is
// killed at cleanup if still running.
func startServe(tb testing.TB, dataDir string) *serveProc {
	tb.Helper()
	p := &serveProc{cmd: needleCommand(tb, "serve", "--data-dir", dataDir), stderr: &syncBuffer{}, exited: make(chan error, 1)}
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	tb.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
		p.exited <- nil // a later Cleanup or wait still reads
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "needle serve: "):
			p.url = strings.TrimPrefix(line, "needle serve: ")
		case strings.HasPrefix(line, "log in: "):
			p.login = strings.TrimPrefix(line, "log in: ")
		case strings.HasPrefix(line, "ipc: "):
			p.sock = strings.TrimPrefix(line, "ipc: ")
			go io.Copy(io.Discard, out)
			return p
		}
	}
	tb.Fatalf("needle serve ended before it listened: %v\n%s", lines.Err(), p.stderr.String())
	return nil
}

// signal sends sig and returns the exit status.
func (p *serveProc) stop(tb testing.TB, sig syscall.Signal) int {
	tb.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		tb.Fatal(err)
	}
	err := <-p.exited
	p.exited <- err
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		tb.Fatal(err)
	}
	return 0
}

// TestServe_SecondRefuses: a second `needle serve` on a data directory
// refuses with the exit status of a conflict and a message naming the
// running one.
func TestServe_SecondRefuses(t *testing.T) {
	dir := shortDir(t)
	first := startServe(t, dir)
	second := needleCommand(t, "serve", "--data-dir", dir)
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	if want := kindConflict.info().exit; !errors.As(err, &exit) || exit.ExitCode() != want {
		t.Fatalf("the second needle serve: %v, want exit %d (a conflict)\n%s", err, want, out)
	}
	for _, want := range []string{"held by another runtime", "pid " + strconv.Itoa(first.cmd.Process.Pid), first.url, "unix:" + first.sock} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	// What only this user may reach: the socket and the token, 0600.
	for _, p := range []string{first.sock, filepath.Join(dir, tokenFileName)} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(p), fi.Mode())
		}
	}
	if code := first.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("the first runtime exited %d after SIGTERM", code)
	}
}

// TestServe_CrashRecovery kills a runtime with SIGKILL: it leaves its
// socket and lock record behind. Clients then work on their own (the
// stale socket refuses connections), and the next runtime takes the lock
// over, replaces the socket and serves them again.
func TestServe_CrashRecovery(t *testing.T) {
	dir := shortDir(t)
	repo := MustFixtureRepo(t, "grepx", false)
	propose := func() {
		t.Helper()
		cmd := needleCommand(t, "evidence", "propose", "--repository", repo, "--data-dir", dir, "-")
		cmd.Stdin = strings.NewReader(locNewSearcher)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"certified"`) {
			t.Fatalf("propose: %v\n%s", err, out)
		}
	}
	first := startServe(t, dir)
	propose()
	if code := first.stop(t, syscall.SIGKILL); code != -1 {
		t.Fatalf("SIGKILL: exit %d", code)
	}
	if fi, err := os.Lstat(first.sock); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("the crashed runtime left no socket (%v): the test does not test recovery", err)
	}
	var holder struct{ PID int }
	if err := json.Unmarshal(MustReadFile(t, filepath.Join(dir, lockFileName)), &holder); err != nil || holder.PID != first.cmd.Process.Pid {
		t.Fatalf("the crashed runtime's lock record: %+v %v", holder, err)
	}
	propose() // standalone: the stale socket refuses the connection
	second := startServe(t, dir)
	if !strings.Contains(second.stderr.String(), "took over the profile lock of a runtime that is gone (pid "+strconv.Itoa(first.cmd.Process.Pid)) {
		t.Errorf("the second runtime did not report the takeover:\n%s", second.stderr.String())
	}
	propose()
	var st web.Status
	mustGetJSON(t, ipc.Client(second.sock), ipc.BaseURL+"/api/v1/status", "", &st)
	if st.CommandsServed != 1 {
		t.Errorf("the new runtime served %d commands, want 1", st.CommandsServed)
	}
	if code := second.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM\n%s", code, second.stderr.String())
	}
}

// TestServe_Shutdown stops the runtime with SIGTERM and with SIGINT while
// an event stream and an MCP session are open: the stream ends, the MCP
// session's client sees its server end cleanly, the process exits 0 and
// leaves the socket removed and the lock free.
func TestServe_Shutdown(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := shortDir(t)
			repo := MustFixtureRepo(t, "grepx", false)
			p := startServe(t, dir)
			token := strings.TrimSpace(string(MustReadFile(t, filepath.Join(dir, tokenFileName))))
			req, _ := http.NewRequest(http.MethodGet, p.url+"/api/v1/events", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("events: %v %v", resp, err)
			}
			defer resp.Body.Close()
			streamEnded := make(chan error, 1)
			go func() {
				r := sse.NewReader(resp.Body)
				for {
					if _, err := r.Next(); err != nil {
						streamEnded <- err
						return
					}
				}
			}()
			// An MCP session through the runtime, initialized.
			mcpCmd := needleCommand(t, "mcp", "serve", "--data-dir", dir, "--repository", repo, "--main-model", "m",
				"--role-profile", "default", "--cache-only")
			stdin, _ := mcpCmd.StdinPipe()
			stdout, _ := mcpCmd.StdoutPipe()
			if err := mcpCmd.Start(); err != nil {
				t.Fatal(err)
			}
			io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
			lines := bufio.NewScanner(stdout)
			if !lines.Scan() || !strings.Contains(lines.Text(), `"protocolVersion":"2025-06-18"`) {
				t.Fatalf("initialize: %q", lines.Text())
			}
			if code := p.stop(t, sig); code != 0 {
				t.Fatalf("exit %d after %v\n%s", code, sig, p.stderr.String())
			}
			if err := <-streamEnded; err == nil {
				t.Error("the event stream did not end")
			}
			for lines.Scan() {
			}
			if err := mcpCmd.Wait(); err != nil {
				t.Errorf("the MCP client after the runtime stopped: %v", err)
			}
			if _, err := os.Lstat(p.sock); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the socket is still there: %v", err)
			}
			if data := MustReadFile(t, filepath.Join(dir, lockFileName)); len(data) != 0 {
				t.Errorf("the lock record was not emptied: %s", data)
			}
			startServe(t, dir).stop(t, syscall.SIGTERM) // the lock is free
		})
	}
}

// TestServe_StablePort: without --addr, needle serve listens where it
// listened the first time on the data directory, so a browser tab's URL
// outlives a restart; when that port is taken, a start listens on a free
// one, says so, and keeps the remembered one for the next start.
func TestServe_StablePort(t *testing.T) {
	dir := shortDir(t)
	first := startServe(t, dir)
	first.stop(t, syscall.SIGTERM)
	kept := strings.TrimSpace(string(MustReadFile(t, filepath.Join(dir, addrFileName))))
	if "http://"+kept != first.url {
		t.Fatalf("%s holds %q; the first start listened on %s", addrFileName, kept, first.url)
	}
	second := startServe(t, dir)
	if second.url != first.url {
		t.Fatalf("the restarted runtime listens on %s, the first on %s: a browser tab loses it", second.url, first.url)
	}
	second.stop(t, syscall.SIGTERM)
	squatter, err := net.Listen("tcp", kept)
	if err != nil {
		t.Fatal(err)
	}
	defer squatter.Close()
	third := startServe(t, dir)
	if third.url == first.url {
		t.Fatalf("the third start claims the taken address %s", third.url)
	}
	if !third.stderr.waitCount("the remembered address "+kept, 1, time.Minute) || !strings.Contains(third.stderr.String(), "is taken") {
		t.Errorf("the fallback is not told on stderr:\n%s", third.stderr.String())
	}
	third.stop(t, syscall.SIGTERM)
	if got := strings.TrimSpace(string(MustReadFile(t, filepath.Join(dir, addrFileName)))); got != kept {
		t.Errorf("the fallback replaced the remembered address %s with %s", kept, got)
	}
}

// TestUI_Open: needle ui --open hands a live login URL to $BROWSER (a
// script that records its argument), and says so when there is no
// browser to hand it to; a link used twice answers an HTML page that
// says what to run, not JSON.
func TestUI_Open(t *testing.T) {
	dir := shortDir(t)
	srv := startServe(t, dir)
	bin := t.TempDir()
	got := filepath.Join(bin, "opened")
	browser := filepath.Join(bin, "browser")
	MustWriteFile(t, browser, "#!/bin/sh\nprintf '%s\\n' \"$@\" > "+got+"\n")
	if err := os.Chmod(browser, 0o755); err != nil {
		t.Fatal(err)
	}
	ui := func(env ...string) (stdout, stderr string) {
		t.Helper()
		cmd := needleCommand(t, "ui", "--data-dir", dir, "--open")
		cmd.Env = append(os.Environ(), env...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("needle ui --open: %v\n%s", err, errb.String())
		}
		return out.String(), errb.String()
	}
	stdout, stderr := ui("BROWSER=" + browser)
	url := strings.TrimSpace(stdout)
	if opened := strings.TrimSpace(string(MustReadFile(t, got))); opened != url || !strings.HasPrefix(url, srv.url+"/login?code=") {
		t.Fatalf("$BROWSER was given %q; needle ui printed %q (%s)", opened, url, stderr)
	}
	if !strings.Contains(stderr, "opened the login URL with "+browser) {
		t.Errorf("needle ui --open does not say what opened the URL: %q", stderr)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, want := range []int{http.StatusSeeOther, http.StatusForbidden} {
		resp, err := noRedirect.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("use %d of the opened URL: %s, want %d", i+1, resp.Status, want)
		}
		if i == 1 && (resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(string(body), "needle ui --open")) {
			t.Errorf("a used login link answers %s:\n%s", resp.Header.Get("Content-Type"), body)
		}
	}
	// No $BROWSER and no xdg-open on PATH: the URL, and why nothing opened.
	stdout, stderr = ui("BROWSER=", "PATH="+t.TempDir())
	if !strings.HasPrefix(stdout, srv.url+"/login?code=") || !strings.Contains(stderr, "$BROWSER is not set and xdg-open is not on PATH") {
		t.Errorf("without a browser needle ui --open printed %q and said %q", stdout, stderr)
	}
}
