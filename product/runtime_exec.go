package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/needle-dev/needle/product/internal/ipc"
)

// Commands run in the resident runtime.
//
// A command that works on a data directory (need resolve, evidence
// propose, mcp serve, profile, config, db check) first dials the IPC socket
// of its --data-dir. When a runtime answers, the command runs there, in
// the same code (cli.dispatch) over the runtime's store instead of a store
// of its own: the same results either way. When no runtime runs (no
// socket, or a stale one refusing connections) the command opens the store
// itself, as it always did. The command never probes the profile lock,
// which would race a runtime that is starting.
//
// The exchange is an HTTP Upgrade on the socket to execProto, then frames
// (product/internal/ipc): the client sends the execSpec — its arguments,
// working directory and PATH, against which the runtime resolves relative
// paths and commands — then stdin on demand (the runtime asks with
// frameWant when the command first reads it, so a command that never reads
// stdin never consumes it) and frameCancel when it is interrupted. The
// runtime sends stdout, stderr and at last the exit status. A connection
// that breaks cancels the command, like a client killed mid-run.

const execProto = "needle-exec/1"

// Frame channels of execProto.
const (
	frameSpec     = 's' // client → runtime: the execSpec, first
	frameStdin    = 'i' // client → runtime: bytes of stdin
	frameStdinEOF = 'e' // client → runtime: stdin ended
	frameCancel   = 'c' // client → runtime: interrupted; cancel the command
	frameStdout   = 'o' // runtime → client: bytes of stdout
	frameStderr   = 'r' // runtime → client: bytes of stderr
	frameWant     = 'w' // runtime → client: the command reads stdin; send it
	frameExit     = 'x' // runtime → client: the exit status, last
)

// execSpec is what a client asks the runtime to run.
type execSpec struct {
	Args []string `json:"args"`
	Dir  string   `json:"dir"`  // the client's working directory (absolute)
	Path string   `json:"path"` // the client's PATH
	// Definition and Schema identify the client's build: a runtime of
	// another build refuses rather than answer differently.
	Definition string `json:"definition"`
	Schema     int    `json:"schema"`
	// Terminal says the client's stderr is a terminal: a command that
	// shows progress there (needle change run) shows it through the
	// runtime too.
	Terminal bool `json:"terminal,omitempty"`
	// Defaults are the flags the client filled in from their defaults
	// (main_defaults.go): the commands the runtime prints leave them out.
	Defaults map[string]string `json:"defaults,omitempty"`
}

// decodeExecSpec decodes a spec strictly.
func decodeExecSpec(data []byte) (execSpec, error) {
	var s execSpec
	if err := decodeStrict(data, &s); err != nil {
		return execSpec{}, err
	}
	if len(s.Args) == 0 || len(s.Args) > 256 {
		return execSpec{}, errors.New("want 1 to 256 arguments")
	}
	if !filepath.IsAbs(s.Dir) {
		return execSpec{}, fmt.Errorf("dir %q is not absolute", s.Dir)
	}
	return s, nil
}

// residency says whether a command runs in the resident runtime.
type residency int

const (
	local          residency = iota // always in the calling process
	residentCall                    // in the runtime when one runs
	residentStream                  // in the runtime, reading stdin for its life (an MCP session)
)

// viaRuntime runs cmd in the resident runtime of its --data-dir, if one
// runs; ok is false when none does and the caller runs it here.
func (c *cli) viaRuntime(cmd cliCommand, args []string) (code int, ok bool) {
	dataDir := flagArg(args, "data-dir")
	if dataDir == "" {
		return 0, false
	}
	sock, err := filepath.Abs(filepath.Join(dataDir, socketFileName))
	if err != nil || len(sock) > ipc.MaxPath {
		return 0, false // no runtime can listen there
	}
	conn, err := ipc.DialUpgrade(c.ctx, sock, "/ipc/v1/exec", execProto)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED):
		return 0, false
	default:
		fmt.Fprintf(c.stderr, "needle %s: the resident runtime of %s: %v\n", cmd.path, dataDir, err)
		return 1, true
	}
	defer conn.Close()
	return c.execRemote(conn, cmd, args), true
}

// flagArg returns the value of --name (or -name, either as "--name=V" or
// "--name V") in args, or "".
func flagArg(args []string, name string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		f := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if f == a {
			continue
		}
		if f == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return ""
}

// execRemote runs cmd with args in the runtime on conn and relays its
// output; it returns the command's exit status.
func (c *cli) execRemote(conn net.Conn, cmd cliCommand, args []string) int {
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(c.stderr, "needle %s: %v\n", cmd.path, err)
		return 1
	}
	spec := execSpec{Args: append(strings.Fields(cmd.path), args...), Dir: dir, Path: os.Getenv("PATH"),
		Definition: DefinitionID(), Schema: schemaHead(), Terminal: isTerminal(c.stderr), Defaults: c.defaults}
	f := ipc.NewFramer(conn)
	if err := f.Send(frameSpec, []byte(mustJSON(spec))); err != nil {
		fmt.Fprintf(c.stderr, "needle %s: the resident runtime: %v\n", cmd.path, err)
		return 1
	}
	stop := context.AfterFunc(c.ctx, func() { f.Send(frameCancel, nil) })
	defer stop()
	var pump sync.Once
	for {
		ch, p, err := ipc.ReadFrame(conn)
		if err != nil {
			fmt.Fprintf(c.stderr, "needle %s: the resident runtime ended the command: %v\n", cmd.path, err)
			return 1
		}
		switch ch {
		case frameStdout:
			c.stdout.Write(p)
		case frameStderr:
			c.stderr.Write(p)
		case frameWant:
			pump.Do(func() { go sendStdin(c.stdin, f) })
		case frameExit:
			code, err := strconv.Atoi(string(p))
			if err != nil {
				fmt.Fprintf(c.stderr, "needle %s: the resident runtime sent exit status %q\n", cmd.path, p)
				return 1
			}
			return code
		default:
			fmt.Fprintf(c.stderr, "needle %s: the resident runtime sent an unknown frame %q\n", cmd.path, ch)
			return 1
		}
	}
}

// sendStdin forwards r as stdin frames, then its end.
func sendStdin(r io.Reader, f *ipc.Framer) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && f.Send(frameStdin, buf[:n]) != nil {
			return
		}
		if err != nil {
			f.Send(frameStdinEOF, nil)
			return
		}
	}
}

// execSession is one command the runtime runs for a client.
type execSession struct {
	cancel context.CancelFunc
	stream bool // the command reads stdin for its life (closeInputs ends it)
	stdin  *io.PipeWriter
}

// endInput ends the command's stdin, as if the client had closed it.
func (s *execSession) endInput() { s.stdin.Close() }

// serveExec runs one client's command (see the top of this file).
func (rt *Runtime) serveExec(w http.ResponseWriter, r *http.Request) {
	conn, err := ipc.Upgrade(w, r, execProto)
	if err != nil {
		return
	}
	defer conn.Close()
	f := ipc.NewFramer(conn)
	fail := func(code int, format string, args ...any) {
		f.Send(frameStderr, fmt.Appendf(nil, "needle: "+format+"\n", args...))
		f.Send(frameExit, []byte(strconv.Itoa(code)))
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	ch, p, err := ipc.ReadFrame(conn)
	if err != nil || ch != frameSpec {
		fail(2, "the resident runtime expected a command first")
		return
	}
	conn.SetReadDeadline(time.Time{})
	spec, err := decodeExecSpec(p)
	if err != nil {
		fail(2, "bad command for the resident runtime: %v", err)
		return
	}
	if spec.Definition != DefinitionID() || spec.Schema != schemaHead() {
		fail(1, "the resident runtime of %s runs another build of needle (definition %s, schema %d; this one has %s, %d): stop it or run the same build",
			rt.dataDir, DefinitionID(), schemaHead(), spec.Definition, spec.Schema)
		return
	}
	cmd, _, ok := lookupCommand(spec.Args)
	if !ok || cmd.resident == local {
		fail(2, "%q does not run in the resident runtime", strings.Join(spec.Args, " "))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	defer pr.Close() // unblocks stdin frames nobody will read
	s := &execSession{cancel: cancel, stream: cmd.resident == residentStream, stdin: pw}
	if !rt.execs.add(s) {
		fail(1, "the resident runtime of %s is shutting down", rt.dataDir)
		return
	}
	defer rt.execs.ended(s)
	rt.commands.Add(1)
	go readClientFrames(conn, pw, cancel)
	c := &cli{ctx: ctx, stdin: &askingReader{r: pr, ask: func() { f.Send(frameWant, nil) }},
		stdout: f.Writer(frameStdout), stderr: f.Writer(frameStderr), dir: spec.Dir, pathEnv: spec.Path, rt: rt,
		terminal: spec.Terminal, defaults: spec.Defaults}
	code := c.dispatch(spec.Args)
	f.Send(frameExit, []byte(strconv.Itoa(code)))
}

// readClientFrames feeds the client's stdin frames to stdin until it ends,
// and cancels the command when the client interrupts it or goes away.
func readClientFrames(conn net.Conn, stdin *io.PipeWriter, cancel context.CancelFunc) {
	for {
		ch, p, err := ipc.ReadFrame(conn)
		if err != nil {
			cancel()
			stdin.CloseWithError(io.ErrUnexpectedEOF)
			return
		}
		switch ch {
		case frameStdin:
			stdin.Write(p) // fails only once stdin was closed: the bytes are not wanted
		case frameStdinEOF:
			stdin.Close()
		case frameCancel:
			cancel()
		default:
			cancel()
			stdin.CloseWithError(fmt.Errorf("unknown frame %q", ch))
			return
		}
	}
}

// askingReader asks for its input on the first Read.
type askingReader struct {
	r    io.Reader
	ask  func()
	once sync.Once
}

func (a *askingReader) Read(p []byte) (int, error) {
	a.once.Do(a.ask)
	return a.r.Read(p)
}

// loginResponse is the IPC answer to POST /ipc/v1/login.
type loginResponse struct {
	URL string `json:"url"`
}

// serveLogin mints a one-time login URL for a local user (needle ui).
func (rt *Runtime) serveLogin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(loginResponse{URL: rt.LoginURL()})
}
