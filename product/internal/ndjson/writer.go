package ndjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// ErrNewline refuses a line that holds a newline: it would be two lines.
var ErrNewline = errors.New("ndjson: a line holds a newline")

// Writer writes whole lines and is safe for concurrent use: each line is
// one Write of the line and its newline, so lines never interleave, and
// after the first failed write nothing more is written (a torn line must
// not be followed by another); that error is returned again.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteLine writes line and a newline.
func (w *Writer) WriteLine(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return ErrNewline
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	buf := make([]byte, 0, len(line)+1)
	if _, err := w.w.Write(append(append(buf, line...), '\n')); err != nil {
		w.err = err
	}
	return w.err
}

// Encode returns v as compact JSON for one line: no newline, and HTML
// characters not escaped, because the peer is a program, not a browser.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
