package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/ndjson"
)

const (
	// maxStderr bounds the stderr kept for a GitError; git's messages are
	// short and anything longer is noise.
	maxStderr = 4 << 10
	// maxStdout bounds what a listing may produce (≈ millions of paths);
	// past it the output is refused rather than silently cut.
	maxStdout = 512 << 20
	// gitWaitDelay is how long Wait waits for git's output pipes to close
	// after the process exits or is killed, in case a grandchild holds them.
	gitWaitDelay = 5 * time.Second
)

// GitError is a failed git invocation. Error is the whole record (command
// line, exit, git's error output), for logs; Reason is what git said, for a
// person.
type GitError struct {
	Dir      string   // the directory git ran in
	Args     []string // arguments after "git"
	ExitCode int      // -1 when git did not exit normally (not found, killed)
	Stderr   string   // at most maxStderr bytes of git's stderr
	Err      error
}

func (e *GitError) Error() string {
	msg := fmt.Sprintf("git %s: %v", strings.Join(e.Args, " "), e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// Reason is git's own explanation of the failure: the first line of its
// error output without the "fatal: " or "error: " git puts before it, or,
// when git said nothing (it could not run, it was killed), why it failed.
func (e *GitError) Reason() string {
	for _, line := range strings.Split(e.Stderr, "\n") {
		line = strings.TrimSpace(line)
		for _, p := range []string{"fatal: ", "error: "} {
			line = strings.TrimPrefix(line, p)
		}
		if line != "" {
			return line
		}
	}
	return e.Err.Error()
}

func (e *GitError) Unwrap() error { return e.Err }

// RunGit runs git with args in dir and returns its stdout; a failure is a
// *GitError. It is the one git runner of the product's leaves (checkouts use
// it too). Config that would make git run programs from the repository (an
// fsmonitor, hooks such as post-checkout on `worktree add`) is disabled, and
// path quoting is off because callers parse -z output. The process runs in
// its own group, killed whole on cancellation, with capped output.
func RunGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return runGit(ctx, dir, args...)
}

// SplitNUL splits git's -z output into its records.
func SplitNUL(out []byte) []string { return splitNUL(out) }

func runGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := gitCommand(ctx, dir, args...)
	stdout := ndjson.NewBuffer(maxStdout)
	stderr := ndjson.NewBuffer(maxStderr)
	cmd.Stdout, cmd.Stderr = stdout, stderr

	err := cmd.Run()
	if err == nil && stdout.Truncated() {
		err = fmt.Errorf("output exceeds %d bytes", maxStdout)
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return nil, &GitError{Dir: dir, Args: args, ExitCode: cmd.ProcessState.ExitCode(), Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return stdout.Bytes(), nil
}

// gitEnv returns env without any GIT_* variable and with a fixed locale.
// A git hook — the likeliest caller of needle — runs with GIT_DIR,
// GIT_INDEX_FILE and GIT_WORK_TREE set for its own repository; inherited,
// they would point every command here at that repository instead of root.
// GIT_OPTIONAL_LOCKS=0 keeps `git status` from rewriting the index under
// the user's feet; LC_ALL=C keeps the messages isNotRepo matches stable;
// GIT_LFS_SKIP_SMUDGE=1 leaves LFS pointers in a checkout instead of
// fetching (the content overlay copies the real bytes from the work tree).
func gitEnv(env []string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "LC_ALL=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_LFS_SKIP_SMUDGE=1", "LC_ALL=C")
}

// isNotRepo reports whether err means "dir is not in a git work tree" (or git
// is not installed), as opposed to a git failure worth reporting.
func isNotRepo(err error) bool {
	if errors.Is(err, exec.ErrNotFound) {
		return true
	}
	var ge *GitError
	if !errors.As(err, &ge) {
		return false
	}
	return strings.Contains(ge.Stderr, "not a git repository") ||
		strings.Contains(ge.Stderr, "must be run in a work tree")
}

// splitNUL splits -z output into its records.
func splitNUL(out []byte) []string {
	out = bytes.TrimSuffix(out, []byte{0})
	if len(out) == 0 {
		return nil
	}
	return strings.Split(string(out), "\x00")
}
