package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Framing multiplexes several byte streams over one upgraded connection:
// a frame is one channel byte, a 4-byte big-endian length and that many
// bytes of payload. The channels mean whatever the two ends agree on (a
// command's stdin, stdout, stderr and exit status); the leaf only frames.

// MaxFrame bounds one frame's payload; FrameWriter splits longer writes.
const MaxFrame = 64 << 10

// ErrFrameTooLarge is the error of a frame whose length exceeds MaxFrame.
var ErrFrameTooLarge = errors.New("ipc frame exceeds the size limit")

// WriteFrame writes one frame. p may be empty (a frame that only signals).
func WriteFrame(w io.Writer, ch byte, p []byte) error {
	if len(p) > MaxFrame {
		return ErrFrameTooLarge
	}
	var hdr [5]byte
	hdr[0] = ch
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := w.Write(append(hdr[:], p...)); err != nil {
		return fmt.Errorf("ipc frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame. A clean end of the stream before a frame
// starts is io.EOF; inside one it is io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader) (ch byte, p []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxFrame {
		return 0, nil, ErrFrameTooLarge
	}
	p = make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return hdr[0], p, nil
}

// Framer writes frames of several channels to one writer, one frame at a
// time.
type Framer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewFramer returns a Framer writing to w.
func NewFramer(w io.Writer) *Framer { return &Framer{w: w} }

// Send writes one frame on channel ch.
func (f *Framer) Send(ch byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return WriteFrame(f.w, ch, p)
}

// Writer returns an io.Writer whose every Write becomes frames of channel
// ch (split at MaxFrame).
func (f *Framer) Writer(ch byte) io.Writer { return channelWriter{f, ch} }

type channelWriter struct {
	f  *Framer
	ch byte
}

func (w channelWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), MaxFrame)]
		if err := w.f.Send(w.ch, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}
