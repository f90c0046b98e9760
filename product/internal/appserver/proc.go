package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ProcSpec says how to run the server and how the client treats it.
type ProcSpec struct {
	Command   []string // argv, e.g. {"/x/codex", "app-server"}; run in its own process group
	Dir       string   // working directory of the process
	Env       []string // the complete environment (callers scrub it); CODEX_HOME is appended
	CodexHome string   // per-worker CODEX_HOME directory, created by the caller with its config.toml

	// Stderr receives the server's stderr (its logs) and this client's own
	// diagnostics, capped at 1 MiB in total; nil discards them.
	Stderr io.Writer

	// Tee, if set, is called with "c2s" or "s2c" and the exact raw line
	// (without the newline) for every line written or read, one call at a
	// time. A c2s line is teed just before it is written, so a response is
	// never recorded ahead of its request.
	Tee func(dir string, line []byte)

	MaxLine int // longest accepted line in bytes; default 16 MiB

	// OnRequest answers server->client requests (approvals and the like).
	// nil answers every request with a -32601 error.
	OnRequest RequestHandler

	// OnNotification, if set, sees every notification after the client has
	// applied it to its turn records. It runs on the reader goroutine and
	// must not block.
	OnNotification func(method string, params json.RawMessage)

	OptOut []string // capabilities.optOutNotificationMethods

	// ExperimentalAPI opts into the server's experimental methods and
	// fields (capabilities.experimentalApi), such as additionalContext on
	// turn/start and turn/steer; without it the server refuses them.
	ExperimentalAPI bool

	// Grace is how long Close waits for the server to exit after closing its
	// stdin before killing the process group; default 2s.
	Grace time.Duration
}

// RequestHandler answers one server request. It runs on its own goroutine;
// ctx ends when the server reports the request resolved (for example the
// turn was interrupted) or the connection ends. A nil result is sent as {}.
type RequestHandler func(ctx context.Context, method string, params json.RawMessage) (result any, rpcErr *RPCError)

const (
	defaultMaxLine = 16 << 20
	defaultGrace   = 2 * time.Second
	stderrCap      = 1 << 20
	stderrNote     = "\n[appserver: stderr truncated]\n" // ends a stderr cut at stderrCap

	// waitDelay bounds how long the pipes may outlive the process (a
	// grandchild holding them) before they are closed under it.
	waitDelay = time.Second
)

// process is the running server and our ends of its stdio pipes.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // write end
	stdout *os.File // read end
	exited chan struct{}
	err    error // exit status, set before exited is closed
}

// startProcess spawns the server. Stdin and stdout are plain pipes rather
// than exec's StdinPipe/StdoutPipe so that Wait never closes our read end
// under the reader while unread lines remain in the pipe.
func startProcess(spec ProcSpec, stderr io.Writer) (*process, error) {
	if len(spec.Command) == 0 {
		return nil, errors.New("appserver: empty command")
	}
	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = processEnv(spec)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("appserver: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("appserver: stdout pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close() // the child holds its own copies now
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("appserver: start %s: %w", spec.Command[0], err)
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	go p.wait()
	return p, nil
}

// processEnv is exactly spec.Env plus CODEX_HOME. It is never nil, because a
// nil Cmd.Env would inherit this process's whole environment.
func processEnv(spec ProcSpec) []string {
	env := make([]string, 0, len(spec.Env)+1)
	env = append(env, spec.Env...)
	if spec.CodexHome != "" {
		env = append(env, "CODEX_HOME="+spec.CodexHome)
	}
	return env
}

func (p *process) wait() {
	p.err = p.cmd.Wait()
	// Whatever the server left behind in its group (sandboxed commands,
	// helpers) would keep running and hold our pipes. A group id is not
	// reused while any member lives, and the instant between reaping and
	// this kill is too short for the pid to wrap around to a new group.
	p.signalGroup()
	close(p.exited)
}

// kill SIGKILLs the process group unless the process is already reaped.
func (p *process) kill() error {
	select {
	case <-p.exited:
		return nil
	default:
		return p.signalGroup()
	}
}

func (p *process) signalGroup() error {
	err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("appserver: kill process group: %w", err)
	}
	return nil
}
