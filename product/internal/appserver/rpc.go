package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/needle-dev/needle/product/internal/ndjson"
)

type pendingCall struct {
	ch chan callResult // buffered: the reader never blocks on a caller
	// onResult, if set, sees a successful result on the reader goroutine
	// before any later line is handled, so state it records is in wire order.
	onResult func(json.RawMessage)
}

type callResult struct {
	result json.RawMessage
	err    error
}

// Call sends a request and waits for its response, decoding the result into
// result unless it is nil. An error reply is returned as *RPCError; ctx ends
// the wait (the request is not withdrawn from the server).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	raw, err := c.call(ctx, method, params, nil)
	if err != nil || result == nil {
		return err
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("appserver: decode %s result: %w", method, err)
	}
	return nil
}

func (c *Client) call(ctx context.Context, method string, params any, onResult func(json.RawMessage)) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, pc, err := c.register(onResult)
	if err != nil {
		return nil, err
	}
	msg := outMsg{Method: method, ID: strconv.AppendInt(nil, id, 10), Params: params}
	if err := c.send(msg); err != nil {
		c.unregister(id)
		return nil, err
	}
	select {
	case r := <-pc.ch:
		return r.result, r.err
	case <-ctx.Done():
		c.unregister(id)
		return nil, ctx.Err()
	}
}

// Notify sends a notification; params may be nil.
func (c *Client) Notify(method string, params any) error {
	return c.send(outMsg{Method: method, Params: params})
}

func (c *Client) register(onResult func(json.RawMessage)) (int64, *pendingCall, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, nil, c.err
	}
	id := c.nextID
	c.nextID++
	pc := &pendingCall{ch: make(chan callResult, 1), onResult: onResult}
	c.pending[id] = pc
	return id, pc, nil
}

func (c *Client) unregister(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// failure is the error the connection failed with, or nil.
func (c *Client) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// send writes one message as one line. Once the connection has failed
// nothing more is written or teed.
func (c *Client) send(m outMsg) error {
	line, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("appserver: encode %s: %w", m.Method, err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.failure(); err != nil {
		return err
	}
	c.tee(DirC2S, line)
	if err := c.out.WriteLine(line); err != nil {
		if ferr := c.failure(); ferr != nil {
			return ferr
		}
		return closedError(fmt.Errorf("write: %w", err))
	}
	return nil
}

func (c *Client) tee(dir string, line []byte) {
	if c.spec.Tee == nil {
		return
	}
	c.teeMu.Lock()
	defer c.teeMu.Unlock()
	c.spec.Tee(dir, line)
}

func (c *Client) readLoop() {
	// An over-long line is fatal: the connection cannot continue after
	// one, so the rest of it is never read.
	r := ndjson.NewReader(c.proc.stdout, c.maxLine)
	var err error
	for {
		var line []byte
		if line, err = r.Next(); err != nil {
			if errors.Is(err, ndjson.ErrTooLong) {
				err = fmt.Errorf("%w of %d bytes", ErrLineTooLong, c.maxLine)
			}
			break
		}
		c.tee(DirS2C, line)
		c.dispatch(line)
	}
	c.readerStopped(err)
}

func (c *Client) dispatch(line []byte) {
	if isBlank(line) {
		return
	}
	m, kind, err := decodeMessage(line)
	if err != nil {
		c.logf("skipping malformed line: %v: %.200q", err, line)
		return
	}
	switch kind {
	case kindResponse:
		c.handleResponse(m)
	case kindRequest:
		c.handleRequest(m)
	case kindNotification:
		c.handleNotification(m.Method, m.Params)
	}
}

func (c *Client) handleResponse(m wireMsg) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	c.mu.Lock()
	pc := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if err != nil || pc == nil {
		// Also the fate of a reply whose caller gave up (ctx ended).
		c.logf("response to unknown request id %s", m.ID)
		return
	}
	if m.Error != nil {
		pc.ch <- callResult{err: m.Error}
		return
	}
	if pc.onResult != nil {
		pc.onResult(m.Result)
	}
	pc.ch <- callResult{result: m.Result}
}

// handleRequest starts answering a server request on its own goroutine, so
// a slow handler (a human approving a command) never stalls the stream.
func (c *Client) handleRequest(m wireMsg) {
	key := string(m.ID)
	ctx, cancel := context.WithCancel(c.life)
	c.mu.Lock()
	if _, dup := c.incoming[key]; dup {
		c.logf("server reused request id %s while it was pending", key)
	}
	c.incoming[key] = cancel
	c.mu.Unlock()
	go c.serve(ctx, key, m)
}

func (c *Client) serve(ctx context.Context, key string, m wireMsg) {
	result, rpcErr := c.runHandler(ctx, m.Method, m.Params)
	c.mu.Lock()
	if cancel := c.incoming[key]; cancel != nil {
		cancel()
		delete(c.incoming, key)
	}
	c.mu.Unlock()
	reply := outMsg{ID: m.ID, Error: rpcErr}
	if rpcErr == nil {
		reply.Result = result
		if result == nil {
			reply.Result = struct{}{}
		}
	}
	if err := c.send(reply); err != nil {
		c.logf("answer %s %s: %v", m.Method, m.ID, err)
	}
}

// runHandler calls OnRequest. A panicking handler is turned into an error
// reply, because an unanswered request would block the turn forever.
func (c *Client) runHandler(ctx context.Context, method string, params json.RawMessage) (result any, rpcErr *RPCError) {
	if c.spec.OnRequest == nil {
		return nil, &RPCError{Code: CodeMethodNotFound, Message: "method not found: " + method}
	}
	defer func() {
		if r := recover(); r != nil {
			c.logf("handler for %s panicked: %v", method, r)
			result, rpcErr = nil, &RPCError{Code: CodeInternalError, Message: "client handler failed"}
		}
	}()
	return c.spec.OnRequest(ctx, method, params)
}

// cancelIncoming ends the handler context of a request the server no longer
// waits for (serverRequest/resolved); the handler's late answer is ignored.
func (c *Client) cancelIncoming(rawID json.RawMessage) {
	c.mu.Lock()
	cancel := c.incoming[string(rawID)]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// readerStopped tears the connection down once no more lines can be read.
func (c *Client) readerStopped(readErr error) {
	var cause error
	if errors.Is(readErr, io.EOF) || errors.Is(readErr, os.ErrClosed) {
		cause = c.awaitExit()
	} else {
		// A broken stream (an over-long line) leaves the protocol out of
		// step for good; the process is of no further use.
		c.logf("%v", readErr)
		_ = c.proc.kill()
		cause = readErr
	}
	c.fail(closedError(cause))
	close(c.readerDone)
}

// awaitExit returns the exit status after stdout has ended, killing a
// process that keeps running without it.
func (c *Client) awaitExit() error {
	timer := time.NewTimer(c.grace)
	defer timer.Stop()
	select {
	case <-c.proc.exited:
	case <-timer.C:
		_ = c.proc.kill()
		<-c.proc.exited
	}
	return c.proc.err
}

// fail records the connection's end and fails everything still waiting.
func (c *Client) fail(err error) {
	c.mu.Lock()
	c.err = err
	pending := c.pending
	c.pending = make(map[int64]*pendingCall)
	for _, t := range c.turns {
		t.finishLocked(err)
	}
	c.mu.Unlock()
	for _, pc := range pending {
		pc.ch <- callResult{err: err}
	}
	c.endLife()
}
