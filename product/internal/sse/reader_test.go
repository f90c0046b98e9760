package sse

import (
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReader(t *testing.T) {
	// Spellings a server may use, per the HTML standard's parsing rules.
	in := ": comment\r\n" +
		"retry: 1500\r\n" +
		"event: a\r\nid: 1\r\ndata: first\r\ndata:second\r\n\r\n" + // CRLF, optional space
		"data: no id\rdata\r\r" + // CR endings; "data" without colon is an empty line of data
		"event: ignored\n\n" + // no data: not dispatched, type discarded
		"id: 2\x00\ndata: nul id ignored\n\n" +
		"unknown: field\ndata:  two spaces\n\n" +
		"data: torn"
	r := NewReader(strings.NewReader(in))
	want := []Event{
		{ID: "1", Type: "a", Data: []byte("first\nsecond")},
		{ID: "1", Data: []byte("no id\n")},
		{ID: "1", Data: []byte("nul id ignored")},
		{ID: "1", Data: []byte(" two spaces")},
	}
	for i, w := range want {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.ID != w.ID || ev.Type != w.Type || string(ev.Data) != string(w.Data) {
			t.Fatalf("event %d = %+v %q, want %+v %q", i, ev, ev.Data, w, w.Data)
		}
	}
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("torn last event: %v, want io.ErrUnexpectedEOF", err)
	}
	if r.Retry != 1500 {
		t.Errorf("Retry = %d", r.Retry)
	}
	if _, err := NewReader(strings.NewReader("data: " + strings.Repeat("x", MaxLine) + "\n\n")).Next(); err != ErrLineTooLong {
		t.Errorf("long line: %v", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("id: 1\nevent: a\ndata: x\n\n"))
	f.Add([]byte(": c\r\nretry: 9\r\ndata\r\r"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(strings.NewReader(string(in)))
		for range len(in) + 1 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if strings.ContainsAny(ev.Type, "\r\n") || strings.ContainsAny(ev.ID, "\r\n\x00") {
				t.Fatalf("event %+v holds a line break", ev)
			}
		}
		t.Fatal("more events than input bytes")
	})
}

// FuzzEncode: whatever Publish accepts, Encode spells so that a reader gets
// it back unchanged.
func FuzzEncode(f *testing.F) {
	f.Add("tick", "a\nb", uint64(7))
	f.Add("x.y-z", "", uint64(1))
	f.Fuzz(func(t *testing.T, typ, data string, seq uint64) {
		if checkEvent(typ, []byte(data)) != nil || !utf8.ValidString(data) {
			return
		}
		ev := Event{ID: "e-1", Type: typ, Data: []byte(data)}
		got, err := NewReader(strings.NewReader(string(Encode(ev)))).Next()
		if err != nil || got.ID != ev.ID || got.Type != ev.Type || string(got.Data) != data {
			t.Fatalf("round trip of %+v = %+v, %v", ev, got, err)
		}
	})
}
