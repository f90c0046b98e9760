package sse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustPublish(t *testing.T, b *Broker, n int) []Event {
	t.Helper()
	var out []Event
	for i := range n {
		ev, err := b.Publish("tick", fmt.Appendf(nil, `{"n":%d}`, i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func seqs(evs []Event) []uint64 {
	var out []uint64
	for _, ev := range evs {
		out = append(out, ev.Seq)
	}
	return out
}

func TestBroker_Publish(t *testing.T) {
	b := New(Options{Epoch: "e1"})
	evs := mustPublish(t, b, 3)
	for i, ev := range evs {
		if want := fmt.Sprintf("e1-%d", i+1); ev.ID != want || ev.Seq != uint64(i+1) {
			t.Errorf("event %d: id %q seq %d, want %s", i, ev.ID, ev.Seq, want)
		}
	}
	if b.LastID() != "e1-3" {
		t.Errorf("LastID = %q", b.LastID())
	}
	for name, c := range map[string]struct {
		typ  string
		data []byte
	}{
		"ErrEmptyType":   {"", []byte("x")},
		"ErrTypeNewline": {"a\nb", []byte("x")},
		"ErrTypeUpper":   {"Tick", []byte("x")},
		"ErrDataCR":      {"tick", []byte("a\rb")},
		"ErrDataUTF8":    {"tick", []byte{0xff}},
		"ErrDataTooBig":  {"tick", bytes.Repeat([]byte("a"), MaxData+1)},
	} {
		if _, err := b.Publish(c.typ, c.data); err == nil {
			t.Errorf("%s: Publish succeeded", name)
		}
	}
	if b.LastID() != "e1-3" {
		t.Errorf("refused events advanced the id to %q", b.LastID())
	}
}

func TestBroker_Subscribe(t *testing.T) {
	t.Run("Resume", func(t *testing.T) {
		b := New(Options{Epoch: "e"})
		mustPublish(t, b, 5)
		s, err := b.Subscribe("e-2")
		if err != nil {
			t.Fatal(err)
		}
		if s.Reset || fmt.Sprint(seqs(s.Backlog)) != "[3 4 5]" {
			t.Fatalf("reset %v backlog %v, want [3 4 5]", s.Reset, seqs(s.Backlog))
		}
		mustPublish(t, b, 1)
		if ev := <-s.C; ev.Seq != 6 {
			t.Fatalf("live event %d, want 6", ev.Seq)
		}
	})
	t.Run("LiveOnly", func(t *testing.T) {
		b := New(Options{Epoch: "e"})
		mustPublish(t, b, 5)
		s, _ := b.Subscribe("")
		if s.Reset || len(s.Backlog) != 0 {
			t.Fatalf("reset %v backlog %v for a fresh subscriber", s.Reset, seqs(s.Backlog))
		}
	})
	t.Run("ResumeAtRingEdge", func(t *testing.T) {
		b := New(Options{Epoch: "e", Ring: 4})
		mustPublish(t, b, 10) // ring holds 7..10
		s, _ := b.Subscribe("e-6")
		if s.Reset || fmt.Sprint(seqs(s.Backlog)) != "[7 8 9 10]" {
			t.Fatalf("reset %v backlog %v, want [7 8 9 10]", s.Reset, seqs(s.Backlog))
		}
		s, _ = b.Subscribe("e-10")
		if s.Reset || len(s.Backlog) != 0 {
			t.Fatalf("up to date: reset %v backlog %v", s.Reset, seqs(s.Backlog))
		}
	})
	for name, last := range map[string]string{
		"ResetTooOld":     "e-5",
		"ResetOtherEpoch": "f-9",
		"ResetFuture":     "e-11",
		"ResetGarbage":    "garbage",
		"ResetNegative":   "e--1",
		"ResetEmptyEpoch": "-3",
	} {
		t.Run(name, func(t *testing.T) {
			b := New(Options{Epoch: "e", Ring: 4})
			mustPublish(t, b, 10)
			s, _ := b.Subscribe(last)
			if !s.Reset || s.ResetID != "e-10" || s.ResetReason == "" || len(s.Backlog) != 0 {
				t.Fatalf("Subscribe(%q): reset %v id %q reason %q backlog %v; want a reset at e-10", last, s.Reset, s.ResetID, s.ResetReason, seqs(s.Backlog))
			}
		})
	}
	t.Run("SlowDropped", func(t *testing.T) {
		b := New(Options{Epoch: "e", Buffer: 2})
		slow, _ := b.Subscribe("")
		fast, _ := b.Subscribe("")
		var got []uint64
		for range 3 {
			mustPublish(t, b, 1)
			got = append(got, (<-fast.C).Seq)
		}
		if !slow.Dropped() || fast.Dropped() {
			t.Fatalf("dropped: slow %v fast %v", slow.Dropped(), fast.Dropped())
		}
		var kept []uint64
		for ev := range slow.C { // closed after what it had queued
			kept = append(kept, ev.Seq)
		}
		if fmt.Sprint(kept) != "[1 2]" || fmt.Sprint(got) != "[1 2 3]" {
			t.Fatalf("slow kept %v, fast got %v", kept, got)
		}
		if b.Subscribers() != 1 {
			t.Fatalf("%d subscribers, want 1", b.Subscribers())
		}
	})
	t.Run("Close", func(t *testing.T) {
		b := New(Options{})
		s, _ := b.Subscribe("")
		b.Close()
		b.Close()
		if _, ok := <-s.C; ok {
			t.Fatal("subscription open after Close")
		}
		if _, err := b.Publish("x", nil); err != ErrClosed {
			t.Fatalf("Publish after Close: %v", err)
		}
		if _, err := b.Subscribe(""); err != ErrClosed {
			t.Fatalf("Subscribe after Close: %v", err)
		}
	})
}

// loopbackServer serves h on 127.0.0.1:0 with the broker's Close
// registered for shutdown.
func loopbackServer(t *testing.T, b *Broker) (*http.Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: b}
	srv.RegisterOnShutdown(b.Close)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return srv, "http://" + l.Addr().String() + "/events"
}

// stream opens an event stream, resuming after last.
func stream(t *testing.T, url, last string) (*Reader, io.Closer) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	return NewReader(resp.Body), resp.Body
}

func TestBroker_ServeHTTP(t *testing.T) {
	t.Run("LiveAndResume", func(t *testing.T) {
		// Events published by another goroutine while the client reads, drops
		// its connection twice and resumes by Last-Event-ID: it sees every
		// event exactly once, in order.
		const total = 300
		b := New(Options{Epoch: "e", Ring: total})
		_, url := loopbackServer(t, b)
		r, body := stream(t, url, "")
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range total {
				if _, err := b.Publish("tick", fmt.Appendf(nil, "%d", i+1)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		var got []string
		last := ""
		for len(got) < total {
			ev, err := r.Next()
			if err != nil {
				t.Fatalf("after %d events: %v", len(got), err)
			}
			if ev.Type == ResetType {
				t.Fatalf("unexpected reset: %s", ev.Data)
			}
			got = append(got, string(ev.Data))
			last = ev.ID
			if len(got) == total/3 || len(got) == 2*total/3 {
				body.Close()
				r, body = stream(t, url, last)
			}
		}
		body.Close()
		wg.Wait()
		for i, d := range got {
			if d != fmt.Sprint(i+1) {
				t.Fatalf("event %d carries %q", i+1, d)
			}
		}
		if last != fmt.Sprintf("e-%d", total) {
			t.Fatalf("last id %q", last)
		}
	})
	t.Run("ResetEvent", func(t *testing.T) {
		b := New(Options{Epoch: "e", Ring: 2})
		_, url := loopbackServer(t, b)
		mustPublish(t, b, 5)
		r, body := stream(t, url, "e-1")
		defer body.Close()
		ev, err := r.Next()
		if err != nil || ev.Type != ResetType || ev.ID != "e-5" || !strings.Contains(string(ev.Data), "no longer kept") {
			t.Fatalf("first event %+v (%v), want a reset at e-5", ev, err)
		}
		if r.Retry != int(DefaultRetry.Milliseconds()) {
			t.Errorf("retry %d", r.Retry)
		}
		mustPublish(t, b, 1)
		if ev, err := r.Next(); err != nil || ev.ID != "e-6" {
			t.Fatalf("after the reset: %+v, %v", ev, err)
		}
	})
	t.Run("QueryResume", func(t *testing.T) {
		b := New(Options{Epoch: "e"})
		_, url := loopbackServer(t, b)
		mustPublish(t, b, 3)
		r, body := stream(t, url+"?last_event_id=e-2", "")
		defer body.Close()
		if ev, err := r.Next(); err != nil || ev.ID != "e-3" {
			t.Fatalf("%+v, %v; want e-3", ev, err)
		}
	})
	t.Run("Shutdown", func(t *testing.T) {
		b := New(Options{Epoch: "e"})
		srv, url := loopbackServer(t, b)
		r, body := stream(t, url, "")
		defer body.Close()
		mustPublish(t, b, 1)
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v (a stream kept it waiting)", err)
		}
		if _, err := r.Next(); err != io.EOF && err != io.ErrUnexpectedEOF {
			t.Fatalf("after shutdown: %v, want the end of the stream", err)
		}
	})
	t.Run("ErrClosed", func(t *testing.T) {
		b := New(Options{})
		b.Close()
		w := httptest.NewRecorder()
		b.ServeHTTP(w, httptest.NewRequest("GET", "/events", nil))
		if w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%d, want 503", w.Code)
		}
		w = httptest.NewRecorder()
		New(Options{}).ServeHTTP(w, httptest.NewRequest("POST", "/events", nil))
		if w.Code != http.StatusMethodNotAllowed {
			t.Fatalf("POST: %d, want 405", w.Code)
		}
	})
	t.Run("SlowClientDropped", func(t *testing.T) {
		b := New(Options{Epoch: "e", Buffer: 1, Heartbeat: -1})
		w := &blockingWriter{header: http.Header{}, release: make(chan struct{}), entered: make(chan struct{})}
		done := make(chan struct{})
		go func() {
			b.ServeHTTP(w, httptest.NewRequest("GET", "/events", nil))
			close(done)
		}()
		<-w.entered // the handler is stuck writing to a client that does not read
		mustPublish(t, b, 3)
		if b.Subscribers() != 0 {
			t.Fatalf("%d subscribers; the slow one should be dropped", b.Subscribers())
		}
		close(w.release)
		<-done // the handler ends by itself
	})
}

// blockingWriter blocks its first Write until release is closed.
type blockingWriter struct {
	header  http.Header
	release chan struct{}
	entered chan struct{}
	once    sync.Once
	buf     bytes.Buffer
}

func (w *blockingWriter) Header() http.Header { return w.header }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}
func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered); <-w.release })
	return w.buf.Write(p)
}

// TestBroker_MaxSubscribers: past Options.MaxSubscribers live streams a
// subscription is refused (HTTP: 503 with Retry-After) until one ends.
func TestBroker_MaxSubscribers(t *testing.T) {
	b := New(Options{Epoch: "e", MaxSubscribers: 2})
	_, url := loopbackServer(t, b)
	first, err := b.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	_, body := stream(t, url, "") // the second
	defer body.Close()
	if _, err := b.Subscribe(""); !errors.Is(err, ErrTooMany) {
		t.Errorf("Subscribe past the limit: %v, want ErrTooMany", err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		resp.Body.Close()
		t.Fatalf("stream past the limit: %s", resp.Status)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" || !strings.Contains(string(msg), "too many event streams (the limit is 2)") {
		t.Errorf("stream past the limit: %s %v %q", resp.Status, resp.Header, msg)
	}
	first.Close()
	r, body3 := stream(t, url, "")
	defer body3.Close()
	mustPublish(t, b, 1)
	if _, err := r.Next(); err != nil {
		t.Errorf("a stream after one ended: %v", err)
	}
}
