// Package fakemodel is a loopback fake of the OpenAI Responses API, the
// model provider codex talks to. Pointing a per-test CODEX_HOME at it
// (ConfigTOML) lets the real `codex app-server` run complete turns offline
// and without credentials, with every model decision scripted.
//
// POST …/responses pops the next scripted Response and streams its events as
// server-sent events; once the script is exhausted it answers HTTP 500.
// GET …/models answers {"models":[]}; everything else is 404. Every request
// is recorded (method, path, body; never headers, so an Authorization header
// cannot leak into a fixture). The server listens on 127.0.0.1 only.
package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// maxBody bounds a recorded request body; codex sends the whole conversation
// with each request, which stays far below this in tests.
const maxBody = 64 << 20

// exhausted is the answer once the script has no response left.
const exhausted = `{"error":{"message":"fakemodel: script exhausted","type":"server_error"}}`

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	// Body is the request body if it is JSON, else the body as a JSON
	// string; nil when empty.
	Body json.RawMessage
}

// Server is a running fake model.
type Server struct {
	srv    *http.Server
	url    string
	served chan struct{} // closed when srv.Serve returns

	mu       sync.Mutex
	script   []prepared
	used     []bool
	requests []Request
	closing  bool
	handlers sync.WaitGroup // Add only under mu while !closing, so Close may Wait

	released    chan struct{} // closed by Release
	releaseOnce sync.Once
	closed      chan struct{} // closed by Close: ends every hold
	closeOnce   sync.Once
	holding     chan struct{} // signalled when a handler starts to hold; for tests
}

// Start validates the script and serves it on a fresh 127.0.0.1 port.
func Start(s Script) (*Server, error) {
	script, err := prepare(s)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	m := &Server{
		url:      "http://" + ln.Addr().String() + "/v1",
		served:   make(chan struct{}),
		script:   script,
		used:     make([]bool, len(script)),
		released: make(chan struct{}),
		closed:   make(chan struct{}),
		holding:  make(chan struct{}, 64),
	}
	m.srv = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(m.served)
		m.srv.Serve(ln)
	}()
	return m, nil
}

// URL is the provider base URL, "http://127.0.0.1:PORT/v1".
func (s *Server) URL() string { return s.url }

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Release lets every held response proceed, including ones not yet requested.
func (s *Server) Release() {
	s.releaseOnce.Do(func() { close(s.released) })
}

// Holding is signalled each time a response starts to hold (at most 64
// signals are buffered), so a test can act while the model "thinks".
func (s *Server) Holding() <-chan struct{} { return s.holding }

// Close stops the server, ends held responses and waits for every handler.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		close(s.closed)
		err = s.srv.Close()
		<-s.served
		s.handlers.Wait()
	})
	return err
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "fakemodel: reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !s.enter(Request{Method: r.Method, Path: r.URL.Path, Body: RecordedBody(body)}) {
		http.Error(w, "fakemodel: closed", http.StatusServiceUnavailable)
		return
	}
	defer s.handlers.Done()
	path := strings.TrimRight(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		s.respond(w, r, body)
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		writeJSON(w, http.StatusOK, []byte(`{"models":[]}`))
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// enter records a request and registers its handler, unless closing.
func (s *Server) enter(req Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if s.closing {
		return false
	}
	s.handlers.Add(1)
	return true
}

// pop takes the response for a request body: the first unused response
// whose Match strings all occur in the body, else the first unused one
// without Match, in script order.
func (s *Server) pop(body []byte) (prepared, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pick := -1
	for i, p := range s.script {
		if s.used[i] {
			continue
		}
		if len(p.match) > 0 && containsAll(body, p.match) {
			pick = i
			break
		}
		if len(p.match) == 0 && pick < 0 {
			pick = i
		}
	}
	if pick < 0 {
		return prepared{}, false
	}
	s.used[pick] = true
	return s.script[pick], true
}

func containsAll(body []byte, subs []string) bool {
	for _, sub := range subs {
		if !bytes.Contains(body, []byte(sub)) {
			return false
		}
	}
	return true
}

func (s *Server) respond(w http.ResponseWriter, r *http.Request, body []byte) {
	p, ok := s.pop(body)
	switch {
	case !ok:
		writeJSON(w, http.StatusInternalServerError, []byte(exhausted))
		return
	case p.status != 0 && p.status != http.StatusOK:
		if !p.hold || s.hold(r) {
			writeJSON(w, p.status, p.body)
		}
		return
	}
	events, err := p.filled(body)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, []byte(fmt.Sprintf(`{"error":{"message":%q,"type":"server_error"}}`, err.Error())))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush() // headers first: codex sees the stream open, then waits
	if p.hold && !s.hold(r) {
		return
	}
	for i, ev := range events {
		if i > 0 && p.delay > 0 && !s.pause(r, p.delay) {
			return
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.typ, ev.data)
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// filled is p's events with every Read key replaced by what the request
// body holds.
func (p prepared) filled(body []byte) ([]event, error) {
	if len(p.read) == 0 && !p.measure {
		return p.events, nil
	}
	out := make([]event, len(p.events))
	copy(out, p.events)
	if p.measure {
		if err := measureInput(out, int64(len(body))); err != nil {
			return nil, err
		}
	}
	for _, r := range p.read {
		m := r.re.Find(body)
		if m == nil {
			return nil, fmt.Errorf("fakemodel: the request holds nothing that %s reads (%s)", r.key, r.re)
		}
		// The value goes into JSON strings: encode it as one.
		v, _ := json.Marshal(string(m))
		v = v[1 : len(v)-1]
		for i := range out {
			out[i].data = bytes.ReplaceAll(out[i].data, []byte(r.key), v)
		}
	}
	return out, nil
}

// measureInput sets the input tokens of the response.completed event in
// events to n bytes' worth (MeasureInput), keeping the cached tokens within
// them and the total the sum of input and output.
func measureInput(events []event, n int64) error {
	for i, ev := range events {
		if ev.typ != "response.completed" {
			continue
		}
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader(ev.data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return fmt.Errorf("fakemodel: measure input: %w", err)
		}
		resp, _ := doc["response"].(map[string]any)
		usage, _ := resp["usage"].(map[string]any)
		if usage == nil {
			return errors.New("fakemodel: measure input: response.completed has no usage")
		}
		input := (n + BytesPerToken - 1) / BytesPerToken
		output, _ := usage["output_tokens"].(json.Number).Int64()
		usage["input_tokens"], usage["total_tokens"] = input, input+output
		if details, ok := usage["input_tokens_details"].(map[string]any); ok {
			if cached, _ := details["cached_tokens"].(json.Number).Int64(); cached > input {
				details["cached_tokens"] = input
			}
		}
		data, err := marshal(doc)
		if err != nil {
			return err
		}
		events[i].data = data
	}
	return nil
}

// hold waits for Release; false means the request ended first.
func (s *Server) hold(r *http.Request) bool {
	select {
	case s.holding <- struct{}{}:
	default:
	}
	select {
	case <-s.released:
		return true
	case <-r.Context().Done():
	case <-s.closed:
	}
	return false
}

// pause sleeps d between events; false means the request ended first.
func (s *Server) pause(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.closed:
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// RecordedBody is how a fake keeps a request body: the JSON itself, else
// the bytes as a JSON string; nil when empty.
func RecordedBody(body []byte) json.RawMessage {
	switch {
	case len(body) == 0:
		return nil
	case json.Valid(body):
		return bytes.Clone(body)
	}
	quoted, _ := json.Marshal(string(body))
	return quoted
}

// prepared is a Response ready to serve: ids filled in, events encoded.
type prepared struct {
	match   []string
	read    []reader
	events  []event
	status  int
	body    []byte
	hold    bool
	delay   time.Duration
	measure bool
}

// reader is one Read entry, compiled.
type reader struct {
	key string
	re  *regexp.Regexp
}

type event struct {
	typ  string
	data []byte
}

// prepare encodes the script up front so that a bad script fails Start, not
// a request in the middle of a codex turn.
func prepare(s Script) ([]prepared, error) {
	out := make([]prepared, len(s.Responses))
	for i, r := range s.Responses {
		p, err := prepareOne(r, i+1)
		if err != nil {
			return nil, fmt.Errorf("fakemodel: response %d: %w", i, err)
		}
		out[i] = p
	}
	return out, nil
}

func prepareOne(r Response, n int) (prepared, error) {
	p := prepared{status: r.Status, hold: r.Hold, delay: r.Delay, match: r.Match, measure: r.MeasureInput}
	for key, expr := range r.Read {
		re, err := regexp.Compile(expr)
		if err != nil || key == "" {
			return p, fmt.Errorf("read %q: %v", key, err)
		}
		p.read = append(p.read, reader{key, re})
	}
	switch {
	case r.Status != 0 && (r.Status < 100 || r.Status > 599):
		return p, fmt.Errorf("invalid HTTP status %d", r.Status)
	case r.Delay < 0:
		return p, errors.New("negative delay")
	}
	body, err := marshal(r.Body)
	if err != nil {
		return p, err
	}
	if r.Body == nil {
		body = []byte("{}")
	}
	p.body = body
	for j, ev := range r.Events {
		typ, ok := ev["type"].(string)
		if !ok || typ == "" || strings.ContainsAny(typ, "\r\n") {
			return p, fmt.Errorf("event %d has no valid \"type\"", j)
		}
		data, err := marshal(withIDs(ev, n))
		if err != nil {
			return p, fmt.Errorf("event %d: %w", j, err)
		}
		p.events = append(p.events, event{typ: typ, data: data})
	}
	return p, nil
}

// marshal encodes v as one line of JSON without HTML escaping.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
