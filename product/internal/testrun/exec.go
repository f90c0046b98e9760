package testrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ExecSpec is a command that is not a Go test, run in the same sandbox and
// under the same limits as a test: another language's front end reading
// a file, for one. The command is untrusted (an interpreter may come from
// the repository), so it runs like a test binary: no network, nothing
// writable but its own box, a deadline, a process, memory and file-size
// limit, and nothing of it left running.
type ExecSpec struct {
	// Dir is the directory the command runs in, an absolute path; it is
	// read-only to the command.
	Dir string
	// Argv is the command; Argv[0] is an absolute path.
	Argv []string
	// Env is the command's environment. The Runner adds HOME and TMPDIR
	// (both in the run's box, the one place it may write) and the
	// sandbox's own variables; nothing of Needle's environment is passed.
	Env []string
	// Stdin is the command's standard input.
	Stdin []byte
	// Deadline bounds the command. Past it the process group is killed and
	// the run is TimedOut.
	Deadline time.Duration
	// MaxOutput bounds the standard output kept (default 1 MiB); a command
	// that writes more is Errored.
	MaxOutput int
}

func (s ExecSpec) validate() error {
	switch {
	case s.Dir == "" || !filepath.IsAbs(s.Dir) || filepath.Clean(s.Dir) != s.Dir:
		return fmt.Errorf("exec: directory %q is not a clean absolute path", s.Dir)
	case len(s.Argv) == 0 || !filepath.IsAbs(s.Argv[0]):
		return fmt.Errorf("exec: command %q is not an absolute path", strings.Join(s.Argv, " "))
	case s.Deadline <= 0:
		return errors.New("exec: no deadline")
	}
	for _, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || k == "HOME" || k == "TMPDIR" {
			return fmt.Errorf("exec: environment entry %q (HOME and TMPDIR are the Runner's)", kv)
		}
	}
	return nil
}

// ExecResult is how an Exec ended. Status is Passed for an exit status of
// 0, Failed for another, and otherwise says why the command did not run
// or did not finish (Invalid, Unavailable, TimedOut, LimitExceeded,
// Errored), with Reason.
type ExecResult struct {
	Status   Status
	Reason   string
	ExitCode int
	Stdout   []byte
	// Stderr is the end of the command's standard error.
	Stderr   []byte
	Duration time.Duration
}

// Exec runs spec's command in the sandbox. Like Run, it never returns an
// error: every failure is a Status with a Reason.
func (r *Runner) Exec(ctx context.Context, spec ExecSpec) *ExecResult {
	start := time.Now()
	res := &ExecResult{ExitCode: -1}
	defer func() { res.Duration = time.Since(start) }()
	b, ok := r.begin(ctx, spec.validate(), spec.Deadline)
	res.Status, res.Reason = b.status, b.reason
	if !ok {
		return res
	}
	defer b.end()
	ctx = b.ctx
	if !r.acquire(ctx) {
		res.Status, res.Reason = TimedOut, ended(ctx, spec.Deadline)+" waiting for a free slot"
		return res
	}
	defer r.releaseSlot()
	launch, err := r.launcher(ctx)
	if err != nil {
		res.Status, res.Reason = Unavailable, err.Error()
		return res
	}
	box := filepath.Join(b.scratch, "box")
	lim := r.Limits.limits(spec.Deadline)
	argv, err := r.Sandbox.wrap(spec.Dir, []string{box}, append(append([]string{launch}, lim.args()...), spec.Argv...))
	if err != nil {
		res.Status, res.Reason = Errored, err.Error()
		return res
	}
	env := append(slices.Clone(spec.Env), "HOME="+box, "TMPDIR="+filepath.Join(box, "tmp"))
	maxOut := spec.MaxOutput
	if maxOut <= 0 {
		maxOut = 1 << 20
	}
	var out bytes.Buffer
	over := false
	pr := proc{argv: argv, dir: spec.Dir, env: append(env, r.Sandbox.env()...), stdin: bytes.NewReader(spec.Stdin),
		maxErr: 64 << 10, sandbox: box,
		stdout: func(rd io.Reader) error {
			n, err := io.Copy(&out, io.LimitReader(rd, int64(maxOut)+1))
			over = n > int64(maxOut)
			return err
		}}.run(ctx)
	res.ExitCode, res.Stderr = pr.exitCode, pr.stderrTail
	res.Status, res.Reason = execOutcome(pr, over, lim, spec.Deadline, maxOut)
	if res.Status == TimedOut {
		res.Reason = ended(ctx, spec.Deadline)
	}
	if res.Status == Passed || res.Status == Failed {
		res.Stdout = out.Bytes()
	}
	return res
}

// execOutcome is the Status and Reason of a command that ended as pr
// (over: it wrote more than maxOut bytes).
func execOutcome(pr procResult, over bool, lim Limits, deadline time.Duration, maxOut int) (Status, string) {
	why := limitIn(pr.stderrTail, false, lim)
	switch {
	case pr.killed:
		return TimedOut, fmt.Sprintf("deadline %s passed", deadline)
	case why != "" && pr.exitCode != 0:
		return LimitExceeded, "the sandbox " + why
	case over:
		return Errored, fmt.Sprintf("the command wrote more than %d bytes", maxOut)
	case pr.err != nil:
		return Errored, pr.err.Error()
	case pr.exitCode != 0:
		return Failed, fmt.Sprintf("the command exited %d", pr.exitCode)
	}
	return Passed, ""
}

// ended says why ctx, a run's context under its deadline, ended.
func ended(ctx context.Context, deadline time.Duration) string {
	if errors.Is(ctx.Err(), context.Canceled) {
		return "cancelled"
	}
	return fmt.Sprintf("deadline %s passed", deadline)
}
