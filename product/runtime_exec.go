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
//
// The client reads the command's input files too: the runtime asks for
// each (frameWantFile, with the command's bound) and the client sends its
// bytes. A path names what the client's process sees, which the runtime
// may not: /dev/fd/63 of a shell's <(…) is the client's descriptor, and
// /dev/stdin, a FIFO or a terminal are the client's to read.

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
	frameWantFile = 'f' // runtime → client: the command reads a file (a fileWant); send it
	frameFile     = 'd' // client → runtime: bytes of the file asked for
	frameFileEnd  = 'z' // client → runtime: the file ended; the payload is why it could not be read, or empty
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
	// Columns is that terminal's width when the command started (0:
	// unknown): a live progress line fits in it.
	Columns int `json:"columns,omitempty"`
	// Defaults are the flags the client filled in from their defaults
	// (main_defaults.go): the commands the runtime prints leave them out.
	Defaults map[string]string `json:"defaults,omitempty"`
}

// fileWant is what the runtime asks of the client: the file name names (as
// the user wrote it), at most Limit+1 bytes of it.
type fileWant struct {
	Name  string `json:"name"`
	Limit int    `json:"limit"`
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
	if s.Columns < 0 {
		return execSpec{}, fmt.Errorf("columns %d is negative", s.Columns)
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
		Definition: DefinitionID(), Schema: schemaHead(), Terminal: isTerminal(c.stderr),
		Columns: terminalColumns(c.stderr), Defaults: c.defaults}
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
		case frameWantFile:
			var want fileWant
			if err := decodeStrict(p, &want); err != nil || want.Limit < 0 {
				fmt.Fprintf(c.stderr, "needle %s: the resident runtime asked for a file wrongly: %q\n", cmd.path, p)
				return 1
			}
			go c.sendFile(want, f)
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

// sendFile sends the client's file want names, at most its limit and one
// byte (the runtime refuses the larger), then its end: empty, or the error
// reading it, as readInput would tell it.
func (c *cli) sendFile(want fileWant, f *ipc.Framer) {
	fail := func(err error) {
		var pe *os.PathError
		if errors.As(err, &pe) {
			pe.Path = want.Name // as the user wrote it
		}
		f.Send(frameFileEnd, []byte(err.Error()))
	}
	file, err := os.Open(c.absPath(want.Name))
	if err != nil {
		fail(err)
		return
	}
	defer file.Close()
	if _, err := io.Copy(f.Writer(frameFile), io.LimitReader(file, int64(want.Limit)+1)); err != nil {
		fail(err)
		return
	}
	f.Send(frameFileEnd, nil)
}

// clientFiles reads a command's input files from its client (see the top
// of this file), one at a time.
type clientFiles struct {
	mu     sync.Mutex
	f      *ipc.Framer
	frames chan clientFrame // the client's file frames; closed when the connection ends
	ctx    context.Context
}

// clientFrame is one frame from the client.
type clientFrame struct {
	ch byte
	p  []byte
}

// read asks the client for the file name and reads it, refusing more than
// limit bytes; the errors are readInput's.
func (cf *clientFiles) read(name string, limit int) ([]byte, error) {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if err := cf.f.Send(frameWantFile, []byte(mustJSON(fileWant{Name: name, Limit: limit}))); err != nil {
		return nil, &Error{Op: "read input", Kind: kindIO, Err: err}
	}
	var data []byte
	for {
		var fr clientFrame
		var ok bool
		select {
		case <-cf.ctx.Done():
			return nil, &Error{Op: "read input", Kind: kindIO, Err: cf.ctx.Err()}
		case fr, ok = <-cf.frames:
		}
		switch {
		case !ok:
			return nil, &Error{Op: "read input", Kind: kindIO, Err: fmt.Errorf("%s: the client went away", name)}
		case fr.ch == frameFile:
			if len(data) <= limit {
				data = append(data, fr.p...)
			}
		case len(fr.p) > 0:
			return nil, &Error{Op: "read input", Kind: kindIO, Err: errors.New(string(fr.p))}
		case len(data) > limit:
			return nil, invalidf("read input", "$", "input is larger than %d bytes", limit)
		default:
			return data, nil
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
	files := &clientFiles{f: f, frames: make(chan clientFrame, 4), ctx: ctx}
	go readClientFrames(ctx, conn, pw, files.frames, cancel)
	c := &cli{ctx: ctx, stdin: &askingReader{r: pr, ask: func() { f.Send(frameWant, nil) }},
		stdout: f.Writer(frameStdout), stderr: f.Writer(frameStderr), dir: spec.Dir, pathEnv: spec.Path, rt: rt,
		terminal: spec.Terminal, columns: spec.Columns, defaults: spec.Defaults, files: files}
	code := c.dispatch(spec.Args)
	f.Send(frameExit, []byte(strconv.Itoa(code)))
}

// readClientFrames feeds the client's stdin frames to stdin until it ends
// and its file frames to files, and cancels the command when the client
// interrupts it or goes away.
func readClientFrames(ctx context.Context, conn net.Conn, stdin *io.PipeWriter, files chan<- clientFrame, cancel context.CancelFunc) {
	defer close(files)
	for {
		ch, p, err := ipc.ReadFrame(conn)
		if err != nil {
			cancel()
			stdin.CloseWithError(io.ErrUnexpectedEOF)
			return
		}
		switch ch {
		case frameFile, frameFileEnd:
			select {
			case files <- clientFrame{ch, p}:
			case <-ctx.Done():
			}
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
