package ndjson

import (
	"bufio"
	"errors"
	"io"
)

// ErrTooLong reports a line longer than the reader's limit.
var ErrTooLong = errors.New("ndjson: line too long")

// ErrNoNewline reports a last line without its newline from a Reader that
// requires one (a file its writer always ends with one was cut short).
var ErrNoNewline = errors.New("ndjson: missing final newline")

// Reader reads newline-terminated lines of at most a fixed number of bytes.
type Reader struct {
	br     *bufio.Reader
	max    int
	failed bool // an over-long line ended a reader that does not skip them
	// SkipTooLong makes an over-long line recoverable: it is read to its
	// end and dropped before ErrTooLong is returned, so the next call
	// returns the line after it and a writer blocked on the long line is
	// never left waiting. Otherwise ErrTooLong comes as soon as the limit is
	// passed, the rest is never read, and every later call fails too.
	SkipTooLong bool
	// RequireNewline makes a last line without its newline ErrNoNewline
	// instead of a line.
	RequireNewline bool
}

// NewReader returns a reader of lines of at most max bytes, newline
// excluded.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its newline; the slice is the
// caller's. A last line without a newline is a line (unless
// RequireNewline); io.EOF comes only once everything has been returned. A
// line longer than the limit is ErrTooLong (see SkipTooLong); its bytes are
// never kept, so memory stays bounded.
func (r *Reader) Next() ([]byte, error) {
	if r.failed {
		return nil, ErrTooLong
	}
	var line []byte
	tooLong := false
	for {
		frag, err := r.br.ReadSlice('\n')
		body := frag
		if err == nil {
			body = frag[:len(frag)-1]
		}
		if !tooLong && len(line)+len(body) > r.max {
			tooLong, line = true, nil
			if !r.SkipTooLong {
				r.failed = true
				return nil, ErrTooLong
			}
		}
		if !tooLong {
			line = append(line, body...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case tooLong && (err == nil || errors.Is(err, io.EOF)):
			return nil, ErrTooLong // at EOF the next call reports it
		case err == nil:
			if line == nil {
				line = []byte{}
			}
			return line, nil
		case errors.Is(err, io.EOF) && len(line) > 0:
			if r.RequireNewline {
				return nil, ErrNoNewline
			}
			return line, nil
		default:
			return nil, err
		}
	}
}
