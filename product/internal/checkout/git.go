package checkout

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

const (
	// maxStderr bounds the stderr kept for an error; git's messages are
	// short and anything longer is noise.
	maxStderr = 4 << 10
	// maxStdout bounds what a command here may print; the largest is a
	// worktree listing, a few lines per worktree.
	maxStdout = 16 << 20
	// gitWaitDelay is how long Wait waits for git's output pipes to close
	// after the process exits or is killed, in case a grandchild holds them.
	gitWaitDelay = 5 * time.Second
)

// runGit runs git with args in dir and returns its stdout; a failure is a
// *snapshot.GitError. Hooks are disabled because `worktree add` would run
// the repository's post-checkout hook, a program the sandbox does not
// contain; fsmonitor is disabled for the same reason.
func runGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	full := append([]string{"-c", "core.hooksPath=" + os.DevNull, "-c", "core.fsmonitor=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = gitEnv(os.Environ())
	cmd.WaitDelay = gitWaitDelay
	setProcessGroup(cmd)
	stdout := &cappedBuffer{max: maxStdout}
	stderr := &cappedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	err := cmd.Run()
	if err == nil && stdout.truncated {
		err = fmt.Errorf("output exceeds %d bytes", maxStdout)
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return nil, &snapshot.GitError{Args: args, ExitCode: cmd.ProcessState.ExitCode(),
			Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return stdout.Bytes(), nil
}

// gitEnv returns env without any GIT_* variable and with a fixed locale.
// Needle may run under a git hook, which sets GIT_DIR, GIT_INDEX_FILE and
// GIT_WORK_TREE for its own repository; inherited, they would aim `worktree
// add` at that repository. GIT_LFS_SKIP_SMUDGE=1 leaves LFS pointers in the
// checkout instead of fetching: the content overlay copies the real bytes
// from the work tree anyway.
func gitEnv(env []string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "LC_ALL=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_TERMINAL_PROMPT=0", "GIT_LFS_SKIP_SMUDGE=1", "LC_ALL=C")
}

// splitNUL splits -z output into its records.
func splitNUL(out []byte) []string {
	out = bytes.TrimSuffix(out, []byte{0})
	if len(out) == 0 {
		return nil
	}
	return strings.Split(string(out), "\x00")
}

// cappedBuffer keeps the first max bytes written and drops the rest while
// still reporting success, so a chatty git is never blocked or killed by a
// broken pipe.
type cappedBuffer struct {
	bytes.Buffer
	max       int
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.Len()
	if len(p) > room {
		b.truncated = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
