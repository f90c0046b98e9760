package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/needle-dev/needle/product/internal/atomicfile"
	"github.com/needle-dev/needle/product/internal/ndjson"
)

// Read parses a transcript. It is strict: the header must come first with the
// exact Format, every further line must be one JSON object with dir c2s or
// s2c and a msg that is a request, notification or response, no line may
// exceed MaxLine, and the input must end with a newline. Errors are *Error.
func Read(r io.Reader) (*Transcript, error) {
	// Write always ends a line with a newline, so a last line without one
	// means the file was cut short.
	lr := ndjson.NewReader(r, MaxLine)
	lr.RequireNewline = true
	t := &Transcript{}
	for n := 1; ; n++ {
		line, err := lr.Next()
		if err == io.EOF {
			break
		}
		switch {
		case errors.Is(err, ndjson.ErrTooLong):
			err = fmt.Errorf("line longer than %d bytes", MaxLine)
		case errors.Is(err, ndjson.ErrNoNewline):
			err = errors.New("missing final newline (truncated file?)")
		}
		if err != nil {
			return nil, &Error{Line: n, Err: err}
		}
		if n == 1 {
			err = parseHeader(line, &t.Header)
		} else {
			err = parseLine(line, t)
		}
		if err != nil {
			return nil, &Error{Line: n, Err: err}
		}
	}
	switch {
	case t.Header.Kind == "":
		return nil, &Error{Line: 1, Err: errors.New("empty transcript: no header")}
	case len(t.Lines) == 0:
		return nil, &Error{Line: 2, Err: errors.New("truncated transcript: no messages after the header")}
	}
	return t, nil
}

// ReadFile reads the transcript in the named file.
func ReadFile(name string) (*Transcript, error) { return readNamed(name, Read) }

// ReadHeader reads only the header, the first line, of the transcript in
// the named file, as strictly as Read does: a reader that picks one
// transcript of many parses the rest only for the one it picked. Errors
// about the content are *Error.
func ReadHeader(name string) (*Header, error) { return readNamed(name, readHeader) }

// readNamed reads the named file with read, naming the file in an error
// about its content.
func readNamed[T any](name string, read func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(name)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

func readHeader(r io.Reader) (*Header, error) {
	lr := ndjson.NewReader(r, MaxLine)
	lr.RequireNewline = true
	line, err := lr.Next()
	switch {
	case err == io.EOF:
		err = errors.New("empty transcript: no header")
	case errors.Is(err, ndjson.ErrTooLong):
		err = fmt.Errorf("line longer than %d bytes", MaxLine)
	case errors.Is(err, ndjson.ErrNoNewline):
		err = errors.New("missing final newline (truncated file?)")
	}
	if err != nil {
		return nil, &Error{Line: 1, Err: err}
	}
	var h Header
	if err := parseHeader(line, &h); err != nil {
		return nil, &Error{Line: 1, Err: err}
	}
	return &h, nil
}

func parseHeader(line []byte, h *Header) error {
	if err := json.Unmarshal(line, h); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	return checkHeader(*h)
}

func parseLine(line []byte, t *Transcript) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return errors.New("blank line")
	}
	var l Line
	if err := json.Unmarshal(line, &l); err != nil {
		return err
	}
	if l.Msg == nil {
		return errors.New("line has no msg")
	}
	if err := checkLine(l); err != nil {
		return err
	}
	t.Lines = append(t.Lines, l)
	return nil
}

// Write writes the header line, then one line per Line. Each msg is written
// byte for byte as stored, so a read-write cycle keeps the wire bytes; the
// only exception is a msg that spans several lines, which is compacted
// because the format is one message per line. Write validates what it writes
// with the rules of Read and reports a bad line as *Error.
func (t *Transcript) Write(w io.Writer) error {
	h := t.Header
	if err := checkHeader(h); err != nil {
		return &Error{Line: 1, Err: err}
	}
	// Empty lists, not null, keep written headers uniform with the frozen files.
	if h.Placeholders == nil {
		h.Placeholders = []string{}
	}
	if h.Match.IgnoreParamKeys == nil {
		h.Match.IgnoreParamKeys = []string{}
	}
	bw := bufio.NewWriter(w)
	lw := ndjson.NewWriter(bw)
	head, err := json.Marshal(h)
	if err != nil {
		return &Error{Line: 1, Err: err}
	}
	_ = lw.WriteLine(head) // a bufio.Writer reports its errors at Flush
	for i, l := range t.Lines {
		line, err := encodeLine(l)
		if err != nil {
			return &Error{Line: i + 2, Err: err}
		}
		_ = lw.WriteLine(line)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write transcript: %w", err)
	}
	return nil
}

// WriteFile writes t to the file name, making its directory: whole or not
// at all (atomicfile), so an interrupted recording leaves no half
// transcript behind.
func (t *Transcript) WriteFile(name string) error {
	var b bytes.Buffer
	if err := t.Write(&b); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(name, b.Bytes(), 0o644)
}

// encodeLine is the file line of l: {"dir":…,"msg":…} with the msg as
// stored.
func encodeLine(l Line) ([]byte, error) {
	if err := checkLine(l); err != nil {
		return nil, err
	}
	msg := []byte(l.Msg)
	if bytes.IndexByte(msg, '\n') >= 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, msg); err != nil {
			return nil, err
		}
		msg = buf.Bytes()
	}
	dir, err := json.Marshal(l.Dir)
	if err != nil {
		return nil, err
	}
	line := append([]byte(`{"dir":`), dir...)
	line = append(append(line, `,"msg":`...), bytes.TrimSpace(msg)...)
	return append(line, '}'), nil
}
