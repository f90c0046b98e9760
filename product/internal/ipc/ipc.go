package ipc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// MaxPath is the longest socket path (sun_path less its NUL).
const MaxPath = 107

// Listener accepts connections on the socket from this user only.
type Listener struct {
	*net.UnixListener
	path string
	uid  int // the only peer uid accepted; -1 accepts any

	once sync.Once
}

// Listen creates the socket at path (see the package doc) and listens on
// it. The caller holds the profile lock of path's directory.
func Listen(path string) (*Listener, error) {
	if len(path) > MaxPath {
		return nil, fmt.Errorf("ipc socket %s: path of %d bytes exceeds the %d a unix socket allows; use a shorter data directory", path, len(path), MaxPath)
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".ipc-*") // 0700
	if err != nil {
		return nil, fmt.Errorf("ipc socket: %w", err)
	}
	defer os.RemoveAll(tmp)
	bind := filepath.Join(tmp, "s")
	if len(bind) > MaxPath {
		return nil, fmt.Errorf("ipc socket %s: its temporary name %s exceeds %d bytes; use a shorter data directory", path, bind, MaxPath)
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: bind, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("ipc socket: %w", err)
	}
	ul.SetUnlinkOnClose(false) // the bound name moves; Close removes path
	err = os.Chmod(bind, 0o600)
	if err == nil {
		err = os.Rename(bind, path)
	}
	if err != nil {
		ul.Close()
		return nil, fmt.Errorf("ipc socket %s: %w", path, err)
	}
	return &Listener{UnixListener: ul, path: path, uid: os.Getuid()}, nil
}

// removeStale removes a socket left at path; anything else there is an
// error.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ipc socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("ipc socket %s: a %v is in the way; not removing it", path, fi.Mode().Type())
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("ipc socket %s: remove stale socket: %w", path, err)
	}
	return nil
}

// Path returns the socket's path.
func (l *Listener) Path() string { return l.path }

// Accept returns the next connection from this user, closing others.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.UnixListener.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if l.uid < 0 || peerAllowed(c, l.uid) {
			return c, nil
		}
		c.Close()
	}
}

// Close stops listening and removes the socket.
func (l *Listener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() {
		if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = rerr
		}
	})
	return err
}

// Dial connects to the socket at path.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}

// Client returns an HTTP client whose every request goes to the socket at
// path; request URLs name the host "needle" (it is not looked up).
func Client(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return Dial(ctx, path) },
	}}
}

// BaseURL is the URL prefix of requests through Client.
const BaseURL = "http://needle"

// Upgrade switches the connection of r to the stream protocol proto (the
// Upgrade header's value) and returns it; the caller owns the connection.
// A request that does not ask for proto gets 426 and an error.
func Upgrade(w http.ResponseWriter, r *http.Request, proto string) (net.Conn, error) {
	if !headerHas(r.Header, "Connection", "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), proto) {
		w.Header().Set("Upgrade", proto)
		w.Header().Set("Connection", "Upgrade")
		http.Error(w, "upgrade to "+proto+" required", http.StatusUpgradeRequired)
		return nil, fmt.Errorf("ipc upgrade: the request does not ask for %s", proto)
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("ipc upgrade: %w", err)
	}
	_, err = fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", proto)
	if err == nil {
		err = brw.Flush()
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("ipc upgrade: %w", err)
	}
	return &bufferedConn{Conn: c, r: brw.Reader}, nil
}

// DialUpgrade connects to the socket at path, requests target with an
// upgrade to proto and returns the switched connection.
func DialUpgrade(ctx context.Context, path, target, proto string) (net.Conn, error) {
	c, err := Dial(ctx, path)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, BaseURL+target, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", proto)
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("ipc upgrade: %w", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("ipc upgrade: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
		c.Close()
		return nil, fmt.Errorf("ipc upgrade to %s: %s", proto, resp.Status)
	}
	return &bufferedConn{Conn: c, r: br}, nil
}

// bufferedConn reads through the reader that may already hold the first
// bytes of the stream.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// headerHas reports whether a comma-separated header holds token.
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}
