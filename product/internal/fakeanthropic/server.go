// Package fakeanthropic is a loopback fake of the Anthropic Messages API,
// the model provider Claude Code talks to. Pointing ANTHROPIC_BASE_URL at
// it lets the real `claude` run complete sessions offline, with every model
// decision made by a Go function the test supplies (the Model).
//
// POST /v1/messages decodes the request, asks the Model for a Reply and
// answers it the way the API does: a JSON message, or, when the request
// says "stream", server-sent events (message_start, ping, then per content
// block content_block_start, content_block_delta — text_delta or
// input_json_delta, the tool input split over several deltas —
// content_block_stop, then message_delta with the stop reason and
// message_stop). A Model error is answered 400 invalid_request_error and
// kept (Failures), so a test sees why a client gave up. POST
// /v1/messages/count_tokens answers an estimate. Everything else — another
// path, or a CONNECT from a client whose HTTPS_PROXY points here because it
// tried to leave the machine — is refused and recorded like every request
// (method, path, body; never headers, so a key cannot leak into a log).
// The server listens on 127.0.0.1 only.
package fakeanthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/needle-dev/needle/product/internal/fakemodel"
)

// maxBody bounds a request body; Claude Code sends its whole system prompt,
// tool list and conversation with each request, which stays far below this.
const maxBody = 64 << 20

// chunks is how many deltas a text or a tool input is split into, so that
// the client's stream assembly is exercised, not one delta.
const chunks = 3

// Model decides the reply to one messages request. It is called from the
// server's handlers, possibly concurrently.
type Model func(MessagesRequest) (Reply, error)

// Request is one request the server received, recorded as the
// OpenAI-shaped fake model records its own.
type Request = fakemodel.Request

// Server is a running fake.
type Server struct {
	srv    *http.Server
	url    string
	model  Model
	served chan struct{}

	mu       sync.Mutex
	requests []Request
	failures []error
	seq      int
}

// Start serves model on a fresh 127.0.0.1 port.
func Start(model Model) (*Server, error) {
	if model == nil {
		return nil, fmt.Errorf("fakeanthropic: nil model")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeanthropic: listen: %w", err)
	}
	s := &Server{url: "http://" + ln.Addr().String(), model: model, served: make(chan struct{})}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// URL is the base URL for ANTHROPIC_BASE_URL, "http://127.0.0.1:PORT" (the
// client appends /v1/messages).
func (s *Server) URL() string { return s.url }

// Addr is the listening address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return strings.TrimPrefix(s.url, "http://") }

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Failures returns the Model's errors and the malformed requests, in order.
func (s *Server) Failures() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.failures...)
}

// Close stops the server and its handlers.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.served
	return err
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "reading body: "+err.Error())
		return
	}
	path := r.URL.Path
	if r.Method == http.MethodConnect {
		path = r.Host // a CONNECT names where the client wanted to go
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: path, Body: fakemodel.RecordedBody(body)})
	s.mu.Unlock()
	switch p := strings.TrimRight(r.URL.Path, "/"); {
	case r.Method == http.MethodPost && p == "/v1/messages":
		s.messages(w, body)
	case r.Method == http.MethodPost && p == "/v1/messages/count_tokens":
		var req MessagesRequest
		if err := json.Unmarshal(body, &req); err != nil {
			s.fail(fmt.Errorf("count_tokens: %w", err))
			apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": tokens(len(body))})
	case r.Method == http.MethodConnect:
		apiError(w, http.StatusForbidden, "permission_error", "fakeanthropic: no network beyond this loopback fake")
	default:
		apiError(w, http.StatusNotFound, "not_found_error", "fakeanthropic: no "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	s.failures = append(s.failures, err)
	s.mu.Unlock()
}

// messages answers /v1/messages with the model's reply, whole or as an
// event stream as the request asks.
func (s *Server) messages(w http.ResponseWriter, body []byte) {
	var req MessagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.fail(fmt.Errorf("messages: %w", err))
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	reply, err := s.model(req)
	if err == nil {
		err = reply.check()
	}
	if err != nil {
		s.fail(fmt.Errorf("messages (model %q): %w", req.Model, err))
		apiError(w, http.StatusBadRequest, "invalid_request_error", "fakeanthropic: "+err.Error())
		return
	}
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("msg_fake_%d", s.seq)
	s.mu.Unlock()
	usage := map[string]any{"input_tokens": tokens(len(body)), "output_tokens": outputTokens(reply)}
	if !req.Stream {
		content := make([]any, len(reply.Content))
		for i, b := range reply.Content {
			content[i] = wireBlock(b, true)
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": content,
			"stop_reason": reply.stopReason(), "stop_sequence": nil, "usage": usage,
		})
		return
	}
	streamMessage(w, id, req.Model, reply, usage)
}

// streamMessage sends reply as the API's event stream: message_start, a
// ping, each block's start, deltas and stop, message_delta, message_stop.
// It stops at the first event the client no longer takes.
func streamMessage(w http.ResponseWriter, id, model string, reply Reply, usage map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(v map[string]any) bool {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], data)
		return rc.Flush() == nil
	}
	if !send(map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": usage["input_tokens"], "output_tokens": 1},
	}}) || !send(map[string]any{"type": "ping"}) {
		return
	}
	for i, b := range reply.Content {
		if !streamBlock(send, i, b) {
			return
		}
	}
	if send(map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": reply.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage["output_tokens"]}}) {
		send(map[string]any{"type": "message_stop"})
	}
}

// streamBlock sends block i of a reply: its start, its text or input JSON
// in chunks, its stop. It reports whether every event went out.
func streamBlock(send func(map[string]any) bool, i int, b Block) bool {
	if !send(map[string]any{"type": "content_block_start", "index": i, "content_block": wireBlock(b, false)}) {
		return false
	}
	delta, piece := "text_delta", "text"
	whole := b.Text
	if b.Type == "tool_use" {
		delta, piece = "input_json_delta", "partial_json"
		whole = string(compact(b.Input))
	}
	for _, part := range split(whole, chunks) {
		if !send(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": delta, piece: part}}) {
			return false
		}
	}
	return send(map[string]any{"type": "content_block_stop", "index": i})
}

// wireBlock is a reply block as the API sends it: whole in a JSON message;
// at content_block_start of a stream, empty, its text or input following
// in deltas.
func wireBlock(b Block, whole bool) map[string]any {
	if b.Type == "tool_use" {
		input := json.RawMessage("{}")
		if whole {
			input = compact(b.Input)
		}
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": input}
	}
	text := ""
	if whole {
		text = b.Text
	}
	return map[string]any{"type": "text", "text": text}
}

func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// split cuts s into at most n non-empty pieces on rune boundaries.
func split(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// tokens estimates a token count from a byte count (about four bytes a
// token), never zero.
func tokens(n int) int { return n/4 + 1 }

func outputTokens(r Reply) int {
	n := 0
	for _, b := range r.Content {
		n += len(b.Text) + len(b.Input)
	}
	return tokens(n)
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}
