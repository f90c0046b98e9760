package product

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRuntime_InputFromTheClient runs needle evidence propose as a child
// process through a resident runtime with its proposal in a regular file,
// a FIFO and /dev/fd/3 (a pipe the child inherits, as a shell's <(…)
// gives it): the runtime cannot open the client's descriptor, so the
// client reads every input file and sends its bytes; each answer is the
// regular file's. An input over the bound is a typed invalid-input error
// (exit 2) through the same path.
func TestRuntime_InputFromTheClient(t *testing.T) {
	repo := MustFixtureRepo(t, "grepx", false)
	data := shortDir(t)
	rt := mustRuntime(t, data)
	in := t.TempDir()
	regular := filepath.Join(in, "loc.json")
	MustWriteFile(t, regular, locCRLF)
	propose := func(name string) *exec.Cmd {
		return needleCommand(t, "evidence", "propose", "--repository", repo, "--data-dir", data, name)
	}
	run := func(cmd *exec.Cmd, after func()) (stdout, stderr string, code int) {
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		after()
		err := cmd.Wait()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	want, stderr, code := run(propose(regular), func() {})
	if code != 0 || !strings.Contains(want, `"status"`) {
		t.Fatalf("propose from a regular file: exit %d\n%s%s", code, want, stderr)
	}

	fifo := filepath.Join(in, "loc.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	written := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = io.WriteString(w, locCRLF)
			w.Close()
		}
		written <- err
	}()
	got, stderr, code := run(propose(fifo), func() {})
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if code != 0 || got != want {
		t.Errorf("propose from a FIFO: exit %d\n%s%s\nwant\n%s", code, got, stderr, want)
	}

	fromFD := func(body string) (string, string, int) {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := propose("/dev/fd/3")
		cmd.ExtraFiles = []*os.File{pr}
		return run(cmd, func() {
			pr.Close()
			go func() { io.WriteString(pw, body); pw.Close() }()
		})
	}
	got, stderr, code = fromFD(locCRLF)
	if code != 0 || got != want {
		t.Errorf("propose from /dev/fd/3: exit %d\n%s%s\nwant\n%s", code, got, stderr, want)
	}
	_, stderr, code = fromFD(strings.Repeat(" ", maxProposalBytes+1))
	if code != 2 || !strings.Contains(stderr, "input is larger than 65536 bytes") {
		t.Errorf("an input over the bound from /dev/fd/3: exit %d, stderr:\n%s", code, stderr)
	}
	if n := rt.commands.Load(); n != 4 {
		t.Errorf("the runtime ran %d commands, want all 4", n)
	}
}
