package ndjson

import (
	"bytes"
	"io"
	"sync"
)

// Capped passes on the first max bytes written to it and swallows the rest
// while still reporting success, so a chatty process never blocks on a full
// pipe or grows memory without bound. When the cap is reached, note (if
// any) is written after the kept bytes. Errors of the destination are
// dropped: a failing sink must not stall the process writing. It is safe
// for concurrent use.
type Capped struct {
	mu      sync.Mutex
	w       io.Writer
	left    int
	note    string
	dropped bool
}

// NewCapped returns a writer passing on at most max bytes to w.
func NewCapped(w io.Writer, max int, note string) *Capped {
	return &Capped{w: w, left: max, note: note}
}

func (c *Capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left <= 0 {
		c.dropped = c.dropped || len(p) > 0
		return len(p), nil
	}
	q := p[:min(len(p), c.left)]
	c.left -= len(q)
	c.dropped = c.dropped || len(q) < len(p)
	_, _ = c.w.Write(q)
	if c.left == 0 && c.note != "" {
		_, _ = io.WriteString(c.w, c.note)
	}
	return len(p), nil
}

// Truncated reports whether bytes were dropped.
func (c *Capped) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// Buffer keeps the first max bytes written to it (a Capped into memory)
// and, when asked, the last bytes too: the end of a stream often says why
// it stopped.
type Buffer struct {
	c       Capped
	buf     bytes.Buffer
	tail    []byte
	tailMax int
}

// NewBuffer returns a buffer keeping at most max bytes.
func NewBuffer(max int) *Buffer {
	b := &Buffer{}
	b.c.w, b.c.left = &b.buf, max
	return b
}

// NewBufferTail returns a buffer keeping at most max bytes from the start
// and the last tail bytes (Tail).
func NewBufferTail(max, tail int) *Buffer {
	b := NewBuffer(max)
	b.tailMax = tail
	return b
}

func (b *Buffer) Write(p []byte) (int, error) {
	if b.tailMax > 0 {
		b.c.mu.Lock()
		b.tail = append(b.tail, p...)
		if len(b.tail) > b.tailMax {
			b.tail = append(b.tail[:0], b.tail[len(b.tail)-b.tailMax:]...)
		}
		b.c.mu.Unlock()
	}
	return b.c.Write(p)
}

// Tail returns a copy of the last bytes written (NewBufferTail's tail).
func (b *Buffer) Tail() []byte {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	return bytes.Clone(b.tail)
}

// Truncated reports whether bytes were dropped.
func (b *Buffer) Truncated() bool { return b.c.Truncated() }

// Bytes returns the kept bytes; like bytes.Buffer.Bytes they are valid
// until the next Write.
func (b *Buffer) Bytes() []byte {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	return b.buf.Bytes()
}

// String returns the kept bytes.
func (b *Buffer) String() string {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	return b.buf.String()
}
