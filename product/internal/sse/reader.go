package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxLine bounds one line a Reader accepts.
const MaxLine = MaxData + 1024

// ErrLineTooLong is returned by Reader.Next for a line over MaxLine.
var ErrLineTooLong = errors.New("sse: line too long")

// Reader parses an event stream as the HTML standard's EventSource does:
// lines end in LF, CR or CRLF; "field: value" with one optional space
// after the colon; comments start with ':'; data lines join with LF; a
// blank line dispatches an event that has data. An id field carries over to
// later events (Event.ID is the last event id), and an id holding NUL is
// ignored.
type Reader struct {
	br     *bufio.Reader
	lastID string
	// Retry is the last retry field, in milliseconds (0 if none).
	Retry int
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReaderSize(r, 4096)} }

// Next returns the next dispatched event; io.EOF at the end of the stream
// (an event not yet dispatched by a blank line is discarded, as the
// standard says).
func (r *Reader) Next() (Event, error) {
	var typ string
	var data []byte
	hasData := false
	for {
		line, err := r.line()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			if !hasData {
				typ = ""
				continue
			}
			return Event{ID: r.lastID, Type: typ, Data: data}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			typ = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.lastID = string(value)
			}
		case "retry":
			n := 0
			ok := len(value) > 0
			for _, c := range value {
				if c < '0' || c > '9' || n > 1<<30 {
					ok = false
					break
				}
				n = n*10 + int(c-'0')
			}
			if ok {
				r.Retry = n
			}
		}
	}
}

// line reads one line without its ending, bounded by MaxLine.
func (r *Reader) line() ([]byte, error) {
	var line []byte
	for {
		c, err := r.br.ReadByte()
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		switch c {
		case '\n':
			return line, nil
		case '\r':
			if next, err := r.br.Peek(1); err == nil && next[0] == '\n' {
				r.br.ReadByte()
			}
			return line, nil
		}
		if len(line) >= MaxLine {
			return nil, ErrLineTooLong
		}
		line = append(line, c)
	}
}
