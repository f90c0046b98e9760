package httpguard

import (
	"net"
	"sync"
	"time"
)

// overloaded is what a connection past the limit reads before it is
// closed: a complete HTTP/1.1 answer, so a client learns why at once.
const overloaded = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Retry-After: 1\r\nConnection: close\r\nContent-Length: 42\r\n\r\ntoo many connections: the server's limit\r\n"

// refuseTimeout bounds the write of the refusal to a connection past the
// limit.
const refuseTimeout = time.Second

// LimitListener returns a listener that keeps at most max of l's
// connections open at once. A connection accepted past the limit is
// answered 503 (Retry-After: 1) and closed at once, from a goroutine of
// its own with a write deadline, so neither a flood of connections nor a
// client that does not read holds the accept loop or grows the server.
// A connection's slot frees when it is closed.
func LimitListener(l net.Listener, max int) net.Listener {
	return &limitListener{Listener: l, slots: make(chan struct{}, max)}
}

type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
		default:
			go refuseConn(c)
		}
	}
}

func refuseConn(c net.Conn) {
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(refuseTimeout))
	_, _ = c.Write([]byte(overloaded))
}

// limitConn frees its slot when it is closed (once, however often Close
// is called).
type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
