package ndjson

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

func TestCapped(t *testing.T) {
	t.Run("KeepsTheFirstBytesAndNotes", func(t *testing.T) {
		var b bytes.Buffer
		c := NewCapped(&b, 5, "[cut]")
		for _, s := range []string{"abc", "defg", "hij"} {
			if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("Write(%q) = %d, %v; want success", s, n, err)
			}
		}
		if b.String() != "abcde[cut]" || !c.Truncated() {
			t.Errorf("kept %q, truncated %v", b.String(), c.Truncated())
		}
	})
	t.Run("ExactlyFullIsNotTruncated", func(t *testing.T) {
		var b bytes.Buffer
		c := NewCapped(&b, 3, "")
		_, _ = c.Write([]byte("abc"))
		if b.String() != "abc" || c.Truncated() {
			t.Errorf("kept %q, truncated %v", b.String(), c.Truncated())
		}
	})
	t.Run("AFailingSinkDoesNotStall", func(t *testing.T) {
		c := NewCapped(&failing{}, 10, "")
		if n, err := c.Write([]byte("abc")); n != 3 || err != nil {
			t.Errorf("Write = %d, %v", n, err)
		}
	})
}

func TestBuffer(t *testing.T) {
	b := NewBuffer(100)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				_, _ = b.Write([]byte("x"))
			}
		}()
	}
	wg.Wait()
	if len(b.String()) != 100 || len(b.Bytes()) != 100 || !b.Truncated() {
		t.Errorf("kept %d bytes, truncated %v; want 100 and true", len(b.String()), b.Truncated())
	}
	if _, err := b.Write(nil); err != nil {
		t.Error(errors.Unwrap(err))
	}
}

// TestBufferTail keeps the start up to its cap and the end of the stream,
// however the writes are cut.
func TestBufferTail(t *testing.T) {
	for _, chunk := range []int{1, 3, 7, 1000} {
		b := NewBufferTail(5, 4)
		stream := "0123456789abcdef"
		for i := 0; i < len(stream); i += chunk {
			_, _ = b.Write([]byte(stream[i:min(i+chunk, len(stream))]))
		}
		if b.String() != "01234" || string(b.Tail()) != "cdef" || !b.Truncated() {
			t.Errorf("chunks of %d: kept %q, tail %q, truncated %v", chunk, b.String(), b.Tail(), b.Truncated())
		}
	}
	if b := NewBuffer(5); len(b.Tail()) != 0 {
		t.Errorf("a buffer without a tail kept %q", b.Tail())
	}
}
