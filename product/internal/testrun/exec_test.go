package testrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExec runs commands that are not Go tests in the sandbox: stdin in,
// stdout out, the exit status kept apart from a failure to run; writes
// outside the box refused, the box writable, nothing left running past
// the deadline, output past its bound refused, and a bad spec refused
// before anything runs.
func TestExec(t *testing.T) {
	r := freshRunner(t)
	ctx := context.Background()
	dir := t.TempDir()
	sh := func(script string, stdin string) *ExecResult {
		t.Helper()
		return r.Exec(ctx, ExecSpec{Dir: dir, Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
			Stdin: []byte(stdin), Deadline: deadline, MaxOutput: 64})
	}

	if res := sh(`read x; echo "got $x"; echo oops >&2`, "in\n"); res.Status != Passed || string(res.Stdout) != "got in\n" || !strings.Contains(string(res.Stderr), "oops") {
		t.Errorf("echo: %+v %q %q", res, res.Stdout, res.Stderr)
	}
	if res := sh(`echo partial; exit 3`, ""); res.Status != Failed || res.ExitCode != 3 || string(res.Stdout) != "partial\n" {
		t.Errorf("exit 3: %+v", res)
	}
	if res := sh(`echo x > `+filepath.Join(dir, "planted"), ""); res.Status != Failed {
		t.Errorf("a write into the directory: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "planted")); err == nil {
		t.Error("the command wrote outside its box")
	}
	if res := sh(`echo x > "$TMPDIR/f" && echo y > "$HOME/g" && cat "$TMPDIR/f" "$HOME/g"`, ""); res.Status != Passed || string(res.Stdout) != "x\ny\n" {
		t.Errorf("the box is not writable: %+v %q", res, res.Stderr)
	}
	if res := sh(`head -c 100 /dev/zero`, ""); res.Status != Errored || !strings.Contains(res.Reason, "more than 64 bytes") {
		t.Errorf("output past the bound: %+v", res)
	}
	start := time.Now()
	res := r.Exec(ctx, ExecSpec{Dir: dir, Argv: []string{"/bin/sleep", "600"}, Deadline: 2 * time.Second})
	if res.Status != TimedOut {
		t.Errorf("sleep past the deadline: %+v", res)
	}
	if time.Since(start) > time.Minute {
		t.Errorf("the run outlived its deadline by far: %s", time.Since(start))
	}
	for name, spec := range map[string]ExecSpec{
		"relative dir":     {Dir: "rel", Argv: []string{"/bin/true"}, Deadline: deadline},
		"relative command": {Dir: dir, Argv: []string{"true"}, Deadline: deadline},
		"no deadline":      {Dir: dir, Argv: []string{"/bin/true"}},
		"HOME":             {Dir: dir, Argv: []string{"/bin/true"}, Env: []string{"HOME=/root"}, Deadline: deadline},
		"no name":          {Dir: dir, Argv: []string{"/bin/true"}, Env: []string{"=x"}, Deadline: deadline},
	} {
		if res := r.Exec(ctx, spec); res.Status != Invalid {
			t.Errorf("%s: %+v", name, res)
		}
	}
}
