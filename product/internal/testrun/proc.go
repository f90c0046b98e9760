package testrun

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/needle-dev/needle/product/internal/ndjson"
)

// proc is one subprocess run: its own process group, killed as a whole when
// ctx ends, stdout streamed to a consumer, stderr kept up to a bound.
type proc struct {
	argv   []string
	dir    string
	env    []string
	stdin  io.Reader             // nil: no input
	stdout func(io.Reader) error // consumes stdout; nil discards it
	maxErr int                   // stderr bytes kept
	// sandbox, when set, is a token every process of a sandbox the run
	// starts has on its command line (reap): run returns only once they
	// are all dead.
	sandbox string
	// mergeErr sends stderr to the stdout consumer, as go test merges a
	// test binary's output; maxErr then keeps nothing.
	mergeErr bool
}

// procResult is how a proc ended.
type procResult struct {
	exitCode int  // -1 when killed by a signal or never started
	killed   bool // ctx ended first: the group was killed
	stderr   []byte
	errTrunc bool
	// stderrTail is the end of stderr, whatever was kept: where a
	// launcher says why it stopped.
	stderrTail []byte
	err        error // failure to start or to read, not a non-zero exit
}

// waitDelay bounds how long Wait waits for output pipes after the process
// exits or is killed: a grandchild that kept them open is not waited for.
const waitDelay = 2 * time.Second

// runner is p.run(ctx) to be run later (coldBuild's build).
func (p proc) runner(ctx context.Context) func() procResult {
	return func() procResult { return p.run(ctx) }
}

func (p proc) run(ctx context.Context) procResult {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	cmd.Stdin = p.stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = waitDelay
	stderr := ndjson.NewBufferTail(p.maxErr, tailMax)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return procResult{exitCode: -1, err: err}
	}
	if p.mergeErr {
		cmd.Stderr = cmd.Stdout
	}
	if err := cmd.Start(); err != nil {
		return procResult{exitCode: -1, err: err}
	}
	// The whole group goes when ctx ends, whatever the process is doing:
	// the sandbox's helper, the go command and the test binary share it.
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	var readErr error
	if p.stdout != nil {
		readErr = p.stdout(out)
	}
	// Drain whatever the consumer left, so the process never blocks on a
	// full pipe; EOF means every process holding the pipe is gone.
	_, _ = io.Copy(io.Discard, out)
	// Nothing of the group outlives the run. The leader is not reaped yet
	// (Wait comes after), so its pid, which names the group, cannot have
	// been reused.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	waitErr := cmd.Wait()
	var reapErr error
	if p.sandbox != "" {
		reapErr = reap(p.sandbox)
	}
	res := procResult{exitCode: -1, killed: ctx.Err() != nil, stderr: stderr.Bytes(), errTrunc: stderr.Truncated(), err: readErr,
		stderrTail: stderr.Tail()}
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
		res.exitCode = 0
	case errors.As(waitErr, &exit):
		res.exitCode = exit.ExitCode()
	case errors.Is(waitErr, exec.ErrWaitDelay):
		res.exitCode = cmd.ProcessState.ExitCode()
	default:
		if res.err == nil {
			res.err = waitErr
		}
	}
	if res.err == nil {
		res.err = reapErr
	}
	return res
}

// tailMax is how much of the end of a process's stderr is kept.
const tailMax = 4 << 10
