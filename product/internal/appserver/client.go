package appserver

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/needle-dev/needle/product/internal/ndjson"
)

// ClientInfo identifies the client in initialize. Name feeds the server's
// user agent, originator and compliance logs, so keep it stable.
type ClientInfo struct {
	Name, Title, Version string
}

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	UserAgent      string `json:"userAgent"`
	CodexHome      string `json:"codexHome"`
	PlatformFamily string `json:"platformFamily"`
	PlatformOs     string `json:"platformOs"`
}

// Client is one running app-server process and its connection. All methods
// are safe for concurrent use.
type Client struct {
	spec    ProcSpec
	proc    *process
	log     io.Writer // capped stderr sink shared with the server's stderr
	maxLine int
	grace   time.Duration

	life       context.Context // ends when the connection fails; parents handler contexts
	endLife    context.CancelFunc
	readerDone chan struct{}

	out   *ndjson.Writer // the server's stdin
	wmu   sync.Mutex     // one line at a time on stdin, teed in the order written
	teeMu sync.Mutex     // one Tee call at a time

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]*pendingCall
	incoming map[string]context.CancelFunc // server request id (raw JSON) -> handler cancel
	threads  map[string]*threadState
	turns    map[string]*Turn
	finished []string // ids of completed turns, oldest first, for pruning turns
	err      error    // set once the connection has failed

	init      InitializeResult
	closeOnce sync.Once
	closeErr  error
}

// Start spawns the server, sends initialize (our request id 0), waits for
// its result and sends initialized. ctx bounds only this start-up: if it
// ends first the process group is killed. The process then lives until
// Close, Kill or its own exit.
func Start(ctx context.Context, spec ProcSpec, info ClientInfo) (*Client, error) {
	var sink io.Writer = io.Discard
	var stderr io.Writer // nil sends the server's stderr to the null device
	if spec.Stderr != nil {
		capped := ndjson.NewCapped(spec.Stderr, stderrCap, stderrNote)
		sink, stderr = capped, capped
	}
	proc, err := startProcess(spec, stderr)
	if err != nil {
		return nil, err
	}
	c := newClient(spec, proc, sink)
	go c.readLoop()
	go c.unblockReader()
	if err := c.handshake(ctx, info); err != nil {
		_ = c.Kill()
		<-c.proc.exited
		return nil, fmt.Errorf("appserver: initialize: %w", err)
	}
	return c, nil
}

func newClient(spec ProcSpec, proc *process, sink io.Writer) *Client {
	c := &Client{
		spec:       spec,
		proc:       proc,
		out:        ndjson.NewWriter(proc.stdin),
		log:        sink,
		maxLine:    spec.MaxLine,
		grace:      spec.Grace,
		readerDone: make(chan struct{}),
		pending:    make(map[int64]*pendingCall),
		incoming:   make(map[string]context.CancelFunc),
		threads:    make(map[string]*threadState),
		turns:      make(map[string]*Turn),
	}
	if c.maxLine <= 0 {
		c.maxLine = defaultMaxLine
	}
	if c.grace <= 0 {
		c.grace = defaultGrace
	}
	c.life, c.endLife = context.WithCancel(context.Background())
	return c
}

type initializeParams struct {
	ClientInfo   clientInfoWire `json:"clientInfo"`
	Capabilities capabilities   `json:"capabilities"`
}

type clientInfoWire struct {
	Name    string  `json:"name"`
	Title   *string `json:"title"` // null when empty, as the schema allows
	Version string  `json:"version"`
}

type capabilities struct {
	ExperimentalAPI bool     `json:"experimentalApi"`
	OptOut          []string `json:"optOutNotificationMethods"`
}

func (c *Client) handshake(ctx context.Context, info ClientInfo) error {
	p := initializeParams{
		ClientInfo:   clientInfoWire{Name: info.Name, Version: info.Version},
		Capabilities: capabilities{ExperimentalAPI: c.spec.ExperimentalAPI, OptOut: append([]string{}, c.spec.OptOut...)},
	}
	if info.Title != "" {
		p.ClientInfo.Title = &info.Title
	}
	if err := c.Call(ctx, "initialize", p, &c.init); err != nil {
		return err
	}
	return c.Notify("initialized", nil)
}

// Init returns the server's initialize result.
func (c *Client) Init() InitializeResult { return c.init }

// Close stops the server gracefully: it closes stdin, on which the server
// exits, waits up to the grace period (or until ctx ends) and then kills the
// process group. It returns once the process has exited and the connection
// is torn down, with ctx's error if ctx ended first and nil otherwise; the
// exit status is ExitErr. Later calls return the first call's result.
func (c *Client) Close(ctx context.Context) error {
	c.closeOnce.Do(func() { c.closeErr = c.shutdown(ctx) })
	return c.closeErr
}

func (c *Client) shutdown(ctx context.Context) error {
	// Closing the file also unblocks a write stuck on a full pipe.
	_ = c.proc.stdin.Close()
	timer := time.NewTimer(c.grace)
	defer timer.Stop()
	var err error
	select {
	case <-c.proc.exited:
	case <-timer.C:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if kerr := c.proc.kill(); kerr != nil && err == nil {
		err = kerr
	}
	<-c.proc.exited
	<-c.readerDone
	return err
}

// Kill SIGKILLs the server's process group now. Pending work fails once the
// stream ends; Exited reports when the process is gone.
func (c *Client) Kill() error { return c.proc.kill() }

// Exited is closed when the server process has exited and been reaped.
func (c *Client) Exited() <-chan struct{} { return c.proc.exited }

// ExitErr is the process's exit status (nil for exit code 0, or while it is
// still running), as returned by exec.Cmd.Wait.
func (c *Client) ExitErr() error {
	select {
	case <-c.proc.exited:
		return c.proc.err
	default:
		return nil
	}
}

// unblockReader closes the read end of stdout if the stream outlives the
// process by more than waitDelay, which only a process that escaped the
// group can cause; otherwise the reader, and Close, would wait forever.
func (c *Client) unblockReader() {
	<-c.proc.exited
	timer := time.NewTimer(waitDelay)
	defer timer.Stop()
	select {
	case <-c.readerDone:
	case <-timer.C:
		_ = c.proc.stdout.Close()
	}
}

// logf writes a client diagnostic to the stderr sink.
func (c *Client) logf(format string, args ...any) {
	fmt.Fprintf(c.log, "appserver: "+format+"\n", args...)
}
