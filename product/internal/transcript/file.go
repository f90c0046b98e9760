package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// errNoNewline marks a final line without its newline: Write always ends a
// line with one, so its absence means the file was cut short.
var errNoNewline = errors.New("missing final newline (truncated file?)")

// Read parses a transcript. It is strict: the header must come first with the
// exact Format, every further line must be one JSON object with dir c2s or
// s2c and a msg that is a request, notification or response, no line may
// exceed MaxLine, and the input must end with a newline. Errors are *Error.
func Read(r io.Reader) (*Transcript, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	t := &Transcript{}
	for n := 1; ; n++ {
		line, err := readLine(br, MaxLine)
		if err == io.EOF {
			break
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
func ReadFile(name string) (*Transcript, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// readLine returns the next line without its newline. It returns io.EOF only
// at a clean end of input and errNoNewline for a final unterminated line.
// bufio.Scanner is avoided on purpose: its token limit fails in ways that
// are hard to report, and lines here are legitimately large.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > limit+1 { // +1: the newline itself
			return nil, fmt.Errorf("line longer than %d bytes", limit)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0:
			return nil, errNoNewline
		default:
			return nil, err
		}
	}
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
	head, err := json.Marshal(h)
	if err != nil {
		return &Error{Line: 1, Err: err}
	}
	bw.Write(head)
	bw.WriteByte('\n')
	for i, l := range t.Lines {
		if err := writeLine(bw, l); err != nil {
			return &Error{Line: i + 2, Err: err}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write transcript: %w", err)
	}
	return nil
}

func writeLine(bw *bufio.Writer, l Line) error {
	if err := checkLine(l); err != nil {
		return err
	}
	msg := []byte(l.Msg)
	if bytes.IndexByte(msg, '\n') >= 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, msg); err != nil {
			return err
		}
		msg = buf.Bytes()
	}
	dir, err := json.Marshal(l.Dir)
	if err != nil {
		return err
	}
	bw.WriteString(`{"dir":`)
	bw.Write(dir)
	bw.WriteString(`,"msg":`)
	bw.Write(bytes.TrimSpace(msg))
	bw.WriteString("}\n")
	return nil
}
