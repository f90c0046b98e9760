package ipc

import (
	"bufio"
	"context"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shortDir is a temp dir with a path short enough for a socket.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ipc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func serve(t *testing.T, l *Listener, h http.Handler) {
	t.Helper()
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

func TestListen(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		path := filepath.Join(shortDir(t), "needle.sock")
		l, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Fatalf("socket %v, %v; want a socket of mode 0600", fi.Mode(), err)
		}
		entries, _ := os.ReadDir(filepath.Dir(path))
		if len(entries) != 1 {
			t.Errorf("%d entries beside the socket, want none (temporary directory left?)", len(entries)-1)
		}
		serve(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+r.URL.Path) }))
		resp, err := Client(path).Get(BaseURL + "/api/v1/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello /api/v1/x" {
			t.Fatalf("body %q", body)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Fatalf("socket left after Close: %v", err)
		}
	})
	t.Run("StaleSocket", func(t *testing.T) {
		path := filepath.Join(shortDir(t), "needle.sock")
		// A crashed runtime's socket: bound, never unlinked, nobody accepting.
		ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ul.SetUnlinkOnClose(false)
		ul.Close()
		if _, err := Dial(context.Background(), path); err == nil {
			t.Fatal("the stale socket accepts")
		}
		l, err := Listen(path)
		if err != nil {
			t.Fatalf("Listen over a stale socket: %v", err)
		}
		defer l.Close()
		c, err := Dial(context.Background(), path)
		if err != nil {
			t.Fatalf("dial the new socket: %v", err)
		}
		c.Close()
	})
	t.Run("ErrNotSocket", func(t *testing.T) {
		path := filepath.Join(shortDir(t), "needle.sock")
		if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
		if l, err := Listen(path); err == nil {
			l.Close()
			t.Fatal("Listen replaced a regular file")
		}
		if data, _ := os.ReadFile(path); string(data) != "data" {
			t.Fatal("the regular file was changed")
		}
	})
	t.Run("ErrLongPath", func(t *testing.T) {
		path := filepath.Join(shortDir(t), strings.Repeat("d", MaxPath), "needle.sock")
		_, err := Listen(path)
		if err == nil || !strings.Contains(err.Error(), "exceeds") {
			t.Fatalf("Listen(%d-byte path) = %v", len(path), err)
		}
	})
}

func TestListener_Accept(t *testing.T) {
	// A listener that admits only another uid closes this user's
	// connections: the SO_PEERCRED check, without needing a second user.
	path := filepath.Join(shortDir(t), "needle.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.uid = os.Getuid() + 1
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read on a refused connection: %d, %v; want EOF (closed by the listener)", n, err)
	}
	l.Close()
	if c, ok := <-accepted; ok {
		c.Close()
		t.Fatal("Accept returned a connection from another uid")
	}
}

func TestUpgrade(t *testing.T) {
	path := filepath.Join(shortDir(t), "needle.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Upgrade(w, r, "needle-lines")
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			io.WriteString(c, "echo "+line)
		}
	}))
	t.Run("OK", func(t *testing.T) {
		c, err := DialUpgrade(context.Background(), path, "/ipc/v1/mcp", "needle-lines")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for _, msg := range []string{`{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":2}`} {
			io.WriteString(c, msg+"\n")
			got, err := br.ReadString('\n')
			if err != nil || got != "echo "+msg+"\n" {
				t.Fatalf("got %q, %v", got, err)
			}
		}
	})
	t.Run("ErrWrongProtocol", func(t *testing.T) {
		_, err := DialUpgrade(context.Background(), path, "/ipc/v1/mcp", "other")
		if err == nil || !strings.Contains(err.Error(), "426") {
			t.Fatalf("DialUpgrade(other) = %v, want 426", err)
		}
		resp, err := Client(path).Get(BaseURL + "/ipc/v1/mcp")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUpgradeRequired {
			t.Fatalf("plain GET: %s, want 426", resp.Status)
		}
	})
}
