package product

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/needle-dev/needle/product/internal/atomicfile"
	"github.com/needle-dev/needle/product/internal/httpguard"
	"github.com/needle-dev/needle/product/internal/ipc"
	"github.com/needle-dev/needle/product/internal/runlock"
	"github.com/needle-dev/needle/product/internal/sse"
	"github.com/needle-dev/needle/product/web"
)

// The files of a data directory the resident runtime owns beside needle.db.
const (
	lockFileName   = "serve.lock"  // the profile lock and its holder record
	tokenFileName  = "token"       // the API bearer token, 0600
	socketFileName = "needle.sock" // the IPC endpoint, 0600
	addrFileName   = "serve.addr"  // the HTTP address chosen at the first start
)

// loginHelp is what the page of a refused login says to do.
const loginHelp = "For a new login link, run 'needle ui --open --data-dir DIR' on this machine, " +
	"where DIR is the data directory of this 'needle serve'. A link works once, for ten minutes."

// runtimeConfig configures the resident runtime (needle serve).
type runtimeConfig struct {
	DataDir string
	// Addr is the loopback address of the HTTP server; anything that is
	// not loopback is refused. Empty: the address remembered in the data
	// directory (addrFileName), chosen on 127.0.0.1 by the first start, so
	// that the UI's URL outlives a restart (listenHTTP).
	Addr string
	// Log receives refusals and failures (default: discarded).
	Log io.Writer
	// Ring is how many events the stream keeps for Last-Event-ID resume
	// (default sse.DefaultRing).
	Ring int
	// Poll is how often the runtime looks for rows other processes
	// committed (default 2s); its own commits are published at once.
	Poll time.Duration
	// MaxConns bounds the HTTP server's open connections (default
	// defaultMaxConns); MaxIPCConns the IPC socket's, each streaming
	// command (an MCP session) holding one (default defaultMaxIPCConns).
	// A connection past the bound is answered 503 and closed.
	MaxConns, MaxIPCConns int
	// MaxStreams bounds the live event streams (default
	// sse.DefaultMaxSubscribers); one more is answered 503.
	MaxStreams int
}

// The runtime's bounds on what clients hold open (runtimeConfig).
const (
	defaultMaxConns    = 64
	defaultMaxIPCConns = 256
	// headerTimeout bounds reading a request's headers: a connection that
	// sends nothing is closed after it.
	headerTimeout = 10 * time.Second
	// idleTimeout bounds an authenticated connection's wait for its next
	// request; an unauthenticated one is closed after each answer
	// (httpguard).
	idleTimeout = 2 * time.Minute
)

// Runtime is the resident runtime of one data directory: it holds the
// profile lock, owns the only store (one SQLite pool, with its caches),
// serves the API and the UI on loopback HTTP and the same API plus the
// commands of local clients on the IPC socket, and streams what happens
// as server-sent events.
type Runtime struct {
	cfg     runtimeConfig
	dataDir string // absolute
	log     *log.Logger
	started time.Time

	lock   *runlock.Lock
	store  *store
	broker *sse.Broker
	guard  *httpguard.Guard
	token  string
	url    string
	tail   *eventTail

	httpSrv, ipcSrv *http.Server
	ipcL            *ipc.Listener
	served          chan error

	execs    execTracker
	commands atomic.Int64 // commands run for IPC clients
	roots    engines      // engines of the repositories, for the lifecycle routes
}

// startRuntime takes the profile lock of cfg.DataDir, opens its store and
// starts serving. A second runtime on the same data directory fails with
// an error that names the first (errors.Is runlock.ErrHeld).
// Not split: it is one linear start-up whose cleanup stack undoes, in
// reverse, exactly what was set up so far until the servers run; helpers
// would each have to take and extend that stack and the half-built rt.
func startRuntime(ctx context.Context, cfg runtimeConfig) (*Runtime, error) {
	remembered := cfg.Addr == ""
	if remembered {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = defaultMaxConns
	}
	if cfg.MaxIPCConns <= 0 {
		cfg.MaxIPCConns = defaultMaxIPCConns
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, &Error{Op: "serve", Kind: kindIO, Err: err}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &Error{Op: "serve", Kind: kindIO, Err: err}
	}
	// Refuse a non-loopback address before anything is locked or created.
	addr, err := httpguard.LoopbackAddr(ctx, cfg.Addr)
	if err != nil {
		return nil, invalidf("serve", "addr", "%v", err)
	}
	rt := &Runtime{cfg: cfg, dataDir: dir, log: log.New(cfg.Log, "needle serve: ", log.LstdFlags), started: time.Now().UTC(),
		served: make(chan error, 2)}
	// Until the servers run, a failure undoes what was set up, in reverse.
	var cleanup []func()
	started := false
	defer func() {
		if !started {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	if rt.lock, err = runlock.Acquire(filepath.Join(dir, lockFileName), rt.started); err != nil {
		if errors.Is(err, runlock.ErrHeld) {
			return nil, &Error{Op: "serve.start", Kind: kindConflict, Err: err}
		}
		return nil, &Error{Op: "serve", Kind: kindIO, Err: err}
	}
	cleanup = append(cleanup, func() { rt.lock.Release() })
	if prev := rt.lock.Previous(); prev != nil {
		rt.log.Printf("took over the profile lock of a runtime that is gone (%s)", prev)
	}
	if rt.store, err = OpenStore(ctx, dir); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { rt.store.Close() })
	if err := rt.store.putDefinitionOnce(ctx); err != nil {
		return nil, err
	}
	if rt.token, err = httpguard.LoadOrCreateToken(filepath.Join(dir, tokenFileName)); err != nil {
		return nil, &Error{Op: "serve", Kind: kindIO, Err: err}
	}
	httpL, err := rt.listenHTTP(ctx, addr.String(), remembered)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { httpL.Close() })
	bound := netip.MustParseAddrPort(httpL.Addr().String())
	rt.url = "http://" + bound.String()
	rt.broker = sse.New(sse.Options{Ring: cfg.Ring, MaxSubscribers: cfg.MaxStreams})
	rt.guard, err = httpguard.New(httpguard.Config{Token: rt.token, Addr: bound, Public: web.IsAsset, LoginHelp: loginHelp,
		Refused: func(r *http.Request, status int, reason string) {
			rt.log.Printf("refused %s %s: %d %s", r.Method, r.URL.Path, status, reason)
		}})
	if err != nil {
		return nil, &Error{Op: "serve", Kind: kindOther, Err: err}
	}
	if rt.ipcL, err = ipc.Listen(filepath.Join(dir, socketFileName)); err != nil {
		return nil, &Error{Op: "serve", Kind: kindIO, Err: err}
	}
	cleanup = append(cleanup, func() { rt.ipcL.Close() })
	rt.tail, err = startEventTail(ctx, rt)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, rt.tail.stop)

	api := rt.apiHandler()
	web := rt.webHandler(api)
	ipcMux := http.NewServeMux()
	ipcMux.Handle("/api/", api)
	ipcMux.HandleFunc("POST /ipc/v1/exec", rt.serveExec)
	ipcMux.HandleFunc("POST /ipc/v1/login", rt.serveLogin)
	errLog := log.New(cfg.Log, "needle serve: http: ", log.LstdFlags)
	rt.httpSrv = &http.Server{Handler: rt.guard.Handler(web), ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout, ErrorLog: errLog}
	rt.ipcSrv = &http.Server{Handler: ipcMux, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout, ErrorLog: errLog}
	// Streams end when the servers shut down, so that Shutdown can drain.
	rt.httpSrv.RegisterOnShutdown(rt.broker.Close)
	started = true // from here on, Shutdown undoes it all
	go func() { rt.served <- rt.httpSrv.Serve(httpguard.LimitListener(httpL, cfg.MaxConns)) }()
	go func() { rt.served <- rt.ipcSrv.Serve(httpguard.LimitListener(rt.ipcL, cfg.MaxIPCConns)) }()
	if err := rt.lock.Publish(rt.url, "unix:"+rt.ipcL.Path()); err != nil {
		rt.Shutdown(context.Background())
		return nil, &Error{Op: "serve", Kind: kindIO, Err: err}
	}
	return rt, nil
}

// listenHTTP listens on addr or, when remembered, on the address kept in
// the data directory: the first start listens on 127.0.0.1:0 and keeps
// the port it got. When the remembered address is taken, this start
// listens on a free port and says so; the remembered one stays for the
// next start. Called under the profile lock.
func (rt *Runtime) listenHTTP(ctx context.Context, addr string, remembered bool) (net.Listener, error) {
	ioErr := func(err error) error { return &Error{Op: "serve", Kind: kindIO, Err: err} }
	if !remembered {
		l, err := httpguard.ListenLoopback(ctx, addr)
		if err != nil {
			return nil, ioErr(err)
		}
		return l, nil
	}
	path := filepath.Join(rt.dataDir, addrFileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		l, err := httpguard.ListenLoopback(ctx, addr)
		if err != nil {
			return nil, ioErr(err)
		}
		if err := atomicfile.Write(path, []byte(l.Addr().String()+"\n"), 0o600); err != nil {
			l.Close()
			return nil, ioErr(err)
		}
		return l, nil
	}
	if err != nil {
		return nil, ioErr(err)
	}
	kept, perr := netip.ParseAddrPort(strings.TrimSpace(string(data)))
	if perr != nil || !kept.Addr().IsLoopback() || kept.Port() == 0 {
		return nil, invalidf("serve", addrFileName, "%s holds %q, not a loopback address with a port; remove it to choose a new one, or pass --addr", path, clip(string(data), 80))
	}
	l, err := httpguard.ListenLoopback(ctx, kept.String())
	if err == nil {
		return l, nil
	}
	l, err2 := httpguard.ListenLoopback(ctx, addr)
	if err2 != nil {
		return nil, ioErr(errors.Join(err, err2))
	}
	rt.log.Printf("the remembered address %s (%s) is taken (%v): listening on %s instead, for this start only", kept, path, err, l.Addr())
	return l, nil
}

// URL returns the HTTP server's base URL, "http://127.0.0.1:PORT".
func (rt *Runtime) URL() string { return rt.url }

// LoginURL mints a one-time login URL for a browser (valid ten minutes).
func (rt *Runtime) LoginURL() string { return rt.guard.LoginURL() }

// SocketPath returns the IPC socket's path.
func (rt *Runtime) SocketPath() string { return rt.ipcL.Path() }

// DataDir returns the absolute data directory the runtime serves.
func (rt *Runtime) DataDir() string { return rt.dataDir }

// Shutdown stops the runtime: it stops accepting, ends the event streams,
// lets running requests and commands finish (an MCP session's input is
// closed, so it answers what it accepted and ends), then closes the store
// and releases the profile lock. When ctx ends first, what still runs is
// cancelled.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	rt.execs.closeInputs()
	rt.broker.Close()
	err := errors.Join(rt.httpSrv.Shutdown(ctx), rt.ipcSrv.Shutdown(ctx))
	for range 2 {
		if e := <-rt.served; e != nil && !errors.Is(e, http.ErrServerClosed) && !errors.Is(e, net.ErrClosed) {
			err = errors.Join(err, e)
		}
	}
	if !rt.execs.wait(ctx) {
		rt.execs.cancelAll()
		rt.execs.wait(context.Background())
		err = errors.Join(err, fmt.Errorf("commands still running at the shutdown deadline were cancelled"))
	}
	rt.tail.stop()
	rt.ipcL.Close() // already closed by Shutdown; removes the socket if not
	err = errors.Join(err, rt.store.Close(), rt.lock.Release())
	if err != nil {
		return &Error{Op: "serve.shutdown", Kind: kindOther, Err: err}
	}
	return nil
}

// serves checks that dataDir is the runtime's data directory: a command
// that reached the runtime through another path is refused.
func (rt *Runtime) serves(dataDir string) error {
	a, errA := os.Stat(dataDir)
	b, errB := os.Stat(rt.dataDir)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		return invalidf("serve", "data-dir", "the resident runtime serves %s, not %s", rt.dataDir, dataDir)
	}
	return nil
}

// engine opens an engine over the runtime's store.
func (rt *Runtime) engine(ctx context.Context, cfg Config) (*Engine, error) {
	return openEngine(ctx, cfg, rt.store)
}

// execTracker follows the commands the runtime runs for IPC clients, for
// Shutdown.
type execTracker struct {
	mu       sync.Mutex
	wg       sync.WaitGroup
	sessions map[*execSession]struct{}
	closing  bool // Shutdown began: no new commands
}

// add registers s; false once Shutdown began.
func (t *execTracker) add(s *execSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return false
	}
	if t.sessions == nil {
		t.sessions = map[*execSession]struct{}{}
	}
	t.sessions[s] = struct{}{}
	t.wg.Add(1)
	return true
}

func (t *execTracker) ended(s *execSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.sessions, s)
	t.wg.Done()
}

// closeInputs ends the input of every streaming command (MCP sessions):
// like a client closing stdin, they answer what they accepted and end.
func (t *execTracker) closeInputs() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closing = true
	for s := range t.sessions {
		if s.stream {
			s.endInput()
		}
	}
}

func (t *execTracker) cancelAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range t.sessions {
		s.cancel()
	}
}

// wait waits for every command to end; false when ctx ended first.
func (t *execTracker) wait(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
