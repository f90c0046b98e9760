package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/needle-dev/needle/product/internal/httpguard"
	"github.com/needle-dev/needle/product/internal/ipc"
	"github.com/needle-dev/needle/product/internal/runlock"
	"github.com/needle-dev/needle/product/internal/sse"
	"github.com/needle-dev/needle/product/web"
)

// server composes the leaves the way `needle serve` will: the profile lock
// first, then the token, the loopback listener and its guard, the event
// broker, the IPC socket serving the same API, and the embedded UI — over
// the fake API instead of the engine.
type server struct {
	lock   *runlock.Lock
	guard  *httpguard.Guard
	broker *sse.Broker
	api    *fakeAPI
	http   *http.Server
	ipc    *http.Server
	ipcL   *ipc.Listener
	url    string
	token  string
	done   chan error
}

type options struct {
	dataDir string
	addr    string
	log     *log.Logger
	ring    int
}

func start(ctx context.Context, o options) (s *server, err error) {
	lock, err := runlock.Acquire(filepath.Join(o.dataDir, "serve.lock"), time.Now())
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Release()
		}
	}()
	if prev := lock.Previous(); prev != nil {
		o.log.Printf("recovered the profile lock of a runtime that is gone (%s)", prev)
	}
	token, err := httpguard.LoadOrCreateToken(filepath.Join(o.dataDir, "token"))
	if err != nil {
		return nil, err
	}
	l, err := httpguard.ListenLoopback(ctx, o.addr)
	if err != nil {
		return nil, err
	}
	addr := netip.MustParseAddrPort(l.Addr().String())
	broker := sse.New(sse.Options{Ring: o.ring})
	guard, err := httpguard.New(httpguard.Config{
		Token: token, Addr: addr, Public: web.IsAsset,
		Refused: func(r *http.Request, status int, reason string) {
			o.log.Printf("refused %s %s: %d %s", r.Method, r.URL.Path, status, reason)
		},
	})
	if err != nil {
		l.Close()
		return nil, err
	}
	api := newFakeAPI(broker, time.Now)
	apiMux := http.NewServeMux()
	api.routes(apiMux)
	mux := http.NewServeMux()
	mux.Handle("/api/", apiMux)
	mux.HandleFunc("POST /api/v1/logout", func(w http.ResponseWriter, r *http.Request) {
		guard.Logout(w, r)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("/", web.Handler())
	sock, err := ipc.Listen(filepath.Join(o.dataDir, "needle.sock"))
	if err != nil {
		l.Close()
		return nil, err
	}
	s = &server{
		lock: lock, guard: guard, broker: broker, api: api, token: token, ipcL: sock,
		url:  "http://" + addr.String(),
		http: &http.Server{Handler: guard.Handler(mux), ReadHeaderTimeout: 10 * time.Second, ErrorLog: o.log},
		ipc:  &http.Server{Handler: apiMux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: o.log},
		done: make(chan error, 2),
	}
	s.http.RegisterOnShutdown(broker.Close)
	s.ipc.RegisterOnShutdown(broker.Close)
	go func() { s.done <- s.http.Serve(l) }()
	go func() { s.done <- s.ipc.Serve(sock) }()
	if err := lock.Publish(s.url, "unix:"+sock.Path()); err != nil {
		s.shutdown(context.Background())
		return nil, err
	}
	return s, nil
}

// shutdown drains both servers, ends the streams and releases the lock.
func (s *server) shutdown(ctx context.Context) error {
	s.broker.Close()
	err := errors.Join(s.http.Shutdown(ctx), s.ipc.Shutdown(ctx))
	for range 2 {
		if e := <-s.done; e != nil && !errors.Is(e, http.ErrServerClosed) && !errors.Is(e, net.ErrClosed) {
			err = errors.Join(err, e)
		}
	}
	s.ipcL.Close()
	if rerr := s.lock.Release(); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
