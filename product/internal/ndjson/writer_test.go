package ndjson

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestWriter_WriteLine(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		var b bytes.Buffer
		w := NewWriter(&b)
		if err := w.WriteLine([]byte(`{"a":1}`)); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteLine(nil); err != nil {
			t.Fatal(err)
		}
		if b.String() != "{\"a\":1}\n\n" {
			t.Errorf("wrote %q", b.String())
		}
	})
	t.Run("ErrNewline", func(t *testing.T) {
		var b bytes.Buffer
		if err := NewWriter(&b).WriteLine([]byte("a\nb")); !errors.Is(err, ErrNewline) || b.Len() != 0 {
			t.Errorf("err %v, wrote %q", err, b.String())
		}
	})
	t.Run("NothingAfterAFailure", func(t *testing.T) {
		f := &failing{after: 1}
		w := NewWriter(f)
		_ = w.WriteLine([]byte("one"))
		err1 := w.WriteLine([]byte("two"))
		err2 := w.WriteLine([]byte("three"))
		if err1 == nil || err2 != err1 || f.writes != 2 {
			t.Errorf("errors %v, %v after %d writes; want the first failure twice and no third write", err1, err2, f.writes)
		}
	})
	t.Run("ConcurrentLinesStayWhole", func(t *testing.T) {
		var b syncBuffer
		w := NewWriter(&b)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 50 {
					_ = w.WriteLine([]byte(fmt.Sprintf("%d-%d-%s", i, j, strings.Repeat("z", 300))))
				}
			}()
		}
		wg.Wait()
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != 400 {
			t.Fatalf("%d lines, want 400", len(lines))
		}
		for _, l := range lines {
			var i, j int
			if n, _ := fmt.Sscanf(l, "%d-%d-", &i, &j); n != 2 || !strings.HasSuffix(l, strings.Repeat("z", 300)) {
				t.Fatalf("torn line %q", l)
			}
		}
	})
}

func TestEncode(t *testing.T) {
	got, err := Encode(map[string]any{"b": "<&>", "a": []int{1}})
	if err != nil || string(got) != `{"a":[1],"b":"<&>"}` {
		t.Errorf("Encode = %s, %v", got, err)
	}
}

type failing struct{ after, writes int }

func (f *failing) Write(p []byte) (int, error) {
	f.writes++
	if f.writes > f.after {
		return 0, errors.New("broken pipe")
	}
	return len(p), nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
