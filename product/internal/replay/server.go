package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/needle-dev/needle/product/internal/ndjson"
	"github.com/needle-dev/needle/product/internal/transcript"
)

// unexpectedRequest answers a client request that the transcript does not
// expect, so the client sees a failure instead of waiting for its timeout.
const unexpectedRequest = `{"code":-32600,"message":"replay: unexpected request"}`

// server is the replay of one client session.
type server struct {
	cands   []*candidate // still in the running, in Config order
	timeout time.Duration
	out     *ndjson.Writer
	apply   bool
}

func newServer(cfg Config, out io.Writer) (*server, error) {
	if len(cfg.Transcripts) == 0 {
		return nil, errors.New("replay: no transcripts")
	}
	s := &server{timeout: cfg.ReadTimeout, out: ndjson.NewWriter(out), apply: cfg.ApplyFileChanges}
	if s.timeout <= 0 {
		s.timeout = DefaultReadTimeout
	}
	for i, t := range cfg.Transcripts {
		if t == nil {
			return nil, fmt.Errorf("replay: transcript %d is nil", i)
		}
		s.cands = append(s.cands, newCandidate(t, cfg.Env))
	}
	return s, nil
}

func (s *server) run(ctx context.Context, in <-chan input) error {
	for {
		if err := s.emitReady(); err != nil {
			return err
		}
		line, err := s.read(ctx, in)
		switch {
		case errors.Is(err, io.EOF):
			return s.endOfInput()
		case err != nil:
			return err
		}
		if err := s.consume(line); err != nil {
			return err
		}
	}
}

// emitReady writes server lines while every candidate agrees on the next one.
func (s *server) emitReady() error {
	for {
		var out []byte
		var first *candidate
		for _, c := range s.cands {
			if c.done() || c.line().Dir != transcript.ServerToClient {
				continue
			}
			b, err := c.render()
			if err != nil {
				return fmt.Errorf("scenario %q step %d: %w", c.t.Header.Scenario, c.step(), err)
			}
			if first == nil {
				out, first = b, c
			} else if !bytes.Equal(b, out) {
				return ambiguous(first, c)
			}
		}
		if first == nil {
			return nil
		}
		for _, c := range s.cands {
			if c.done() || c.line().Dir != transcript.ServerToClient {
				return ambiguous(first, c)
			}
		}
		// The real server changed the files before it said so.
		if err := s.reenact(out, first.binds["CWD"]); err != nil {
			return fmt.Errorf("scenario %q step %d: %w", first.t.Header.Scenario, first.step(), err)
		}
		if err := s.out.WriteLine(out); err != nil {
			return fmt.Errorf("write to client: %w", err)
		}
		for _, c := range s.cands {
			c.pos++
		}
	}
}

func ambiguous(a, b *candidate) error {
	return fmt.Errorf("%w: %q step %d and %q step %d disagree on what the server says next; candidates must differ first in a client message",
		ErrAmbiguous, a.t.Header.Scenario, a.step(), b.t.Header.Scenario, b.step())
}

// read waits for the next client line. While a transcript still expects one
// the wait is bounded; once one is complete only ctx bounds it.
func (s *server) read(ctx context.Context, in <-chan input) ([]byte, error) {
	var expire <-chan time.Time
	if !s.anyDone() {
		timer := time.NewTimer(s.timeout)
		defer timer.Stop()
		expire = timer.C
	}
	select {
	case got := <-in:
		return got.line, got.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-expire:
		return nil, s.mismatch(nil, fmt.Sprintf("timed out after %v waiting for the client", s.timeout))
	}
}

func (s *server) anyDone() bool {
	for _, c := range s.cands {
		if c.done() {
			return true
		}
	}
	return false
}

// endOfInput decides the outcome of EOF: success if some candidate is
// complete, otherwise an error naming what was still expected.
func (s *server) endOfInput() error {
	if s.anyDone() {
		return nil
	}
	return s.mismatch(nil, "client closed its input before the transcript ended")
}

// consume matches one client line against every candidate and keeps those
// that accept it.
func (s *server) consume(line []byte) error {
	line = bytes.TrimSpace(line)
	act, perr := parseMessage(line)
	rep := s.representative()
	var kept []*candidate
	var reason string
	for _, c := range s.cands {
		var err error
		switch {
		case perr != nil:
			err = perr
		case c.done():
			err = errors.New("message after the end of the transcript")
		default:
			err = c.expect(act)
		}
		if err == nil {
			kept = append(kept, c)
		} else if c == rep {
			reason = err.Error()
		}
	}
	if len(kept) > 0 {
		s.cands = kept
		return nil
	}
	if act.kind == transcript.KindRequest {
		reply := fmt.Sprintf(`{"id":%s,"error":%s}`, act.id, unexpectedRequest)
		if err := s.out.WriteLine([]byte(reply)); err != nil {
			return fmt.Errorf("write to client: %w", err)
		}
	}
	if len(s.cands) > 1 {
		reason = fmt.Sprintf("no candidate transcript matches (%d tried); %q: %s", len(s.cands), rep.t.Header.Scenario, reason)
	}
	return s.mismatch(line, reason)
}

// representative is the candidate a failure is reported for: the first (in
// Config order) that still expects something, so that Expected is
// informative, or else the first.
func (s *server) representative() *candidate {
	for _, c := range s.cands {
		if !c.done() {
			return c
		}
	}
	return s.cands[0]
}

func (s *server) mismatch(actual []byte, reason string) *MismatchError {
	c := s.representative()
	e := &MismatchError{Scenario: c.t.Header.Scenario, Step: c.step(), Reason: reason}
	if !c.done() {
		e.Expected = c.line().Msg
	}
	if actual != nil {
		e.Actual = json.RawMessage(actual)
	} else if e.Expected != nil {
		e.Reason += "; expected " + describe(e.Expected)
	}
	return e
}

// describe names a recorded message briefly, for errors without an actual
// message to compare with.
func describe(raw json.RawMessage) string {
	m, err := parseMessage(raw)
	switch {
	case err != nil:
		return clip(raw, 200)
	case m.kind == transcript.KindResponse:
		return fmt.Sprintf("the answer to server request %s", m.id)
	}
	return fmt.Sprintf("%s %s", m.kind, m.method)
}

// input is one client line or the error that ended the input.
type input struct {
	line []byte
	err  error
}

// readInput reads client lines in its own goroutine so that Serve can wait
// for one with a deadline. The goroutine owns the bufio.Reader: every byte
// it has buffered ends up in a line on the channel, which is how the replay
// avoids the first prototype's bug of losing lines that were read ahead.
// It stops after the first error (io.EOF at the end) or when done closes;
// a Read that never returns keeps it alive until the input is closed.
func readInput(r io.Reader, done <-chan struct{}) <-chan input {
	ch := make(chan input)
	go func() {
		lr := ndjson.NewReader(r, transcript.MaxLine)
		for {
			line, err := lr.Next()
			if errors.Is(err, ndjson.ErrTooLong) {
				err = fmt.Errorf("client line longer than %d bytes", transcript.MaxLine)
			}
			if err == nil && len(bytes.TrimSpace(line)) == 0 {
				continue // blank lines carry no message
			}
			select {
			case ch <- input{line: line, err: err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}
