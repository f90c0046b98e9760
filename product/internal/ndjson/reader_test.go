package ndjson

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readAll reads every line, writing an error as "!" + its text.
func readAll(r *Reader) []string {
	var out []string
	for {
		line, err := r.Next()
		switch {
		case errors.Is(err, io.EOF):
			return out
		case err != nil:
			out = append(out, "!"+err.Error())
			if !errors.Is(err, ErrTooLong) || !r.SkipTooLong && len(out) > 1 && out[len(out)-2] == out[len(out)-1] {
				return out
			}
		default:
			out = append(out, string(line))
		}
	}
}

func TestReader_Next(t *testing.T) {
	long := strings.Repeat("x", 9)
	for _, tc := range []struct {
		name, in string
		max      int
		strict   bool
		skip     bool
		want     []string
	}{
		{"OK", "a\n\nbc\n", 8, false, false, []string{"a", "", "bc"}},
		{"Empty", "", 8, false, false, nil},
		{"LastWithoutNewline", "a\nbc", 8, false, false, []string{"a", "bc"}},
		{"ErrNoNewline", "a\nbc", 8, true, false, []string{"a", "!" + ErrNoNewline.Error()}},
		{"ExactlyMax", "12345678\n", 8, false, false, []string{"12345678"}},
		{"SkipTooLong", "a\n" + long + "\nb\n", 8, false, true, []string{"a", "!" + ErrTooLong.Error(), "b"}},
		{"SkipTooLongAtEOF", "a\n" + long, 8, false, true, []string{"a", "!" + ErrTooLong.Error()}},
		{"ErrTooLongEndsTheReader", "a\n" + long + "\nb\n", 8, false, false, []string{"a", "!" + ErrTooLong.Error(), "!" + ErrTooLong.Error()}},
		{"CarriageReturnKept", "a\r\n", 8, false, false, []string{"a\r"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				r := NewReader(in, tc.max)
				r.RequireNewline, r.SkipTooLong = tc.strict, tc.skip
				if diff := cmp.Diff(tc.want, readAll(r)); diff != "" {
					t.Errorf("lines (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestReader_LongLines crosses the 64 KiB buffer: a long line is kept whole
// across buffer refills, and a longer one is refused and skipped (one byte
// at a time, so the limit is checked at every refill).
func TestReader_LongLines(t *testing.T) {
	big := strings.Repeat("y", 200<<10)
	r := NewReader(iotest.OneByteReader(strings.NewReader(big+"\n"+big+"z\nend\n")), len(big))
	r.SkipTooLong = true
	got := readAll(r)
	want := []string{big, "!" + ErrTooLong.Error(), "end"}
	if !cmp.Equal(got, want) {
		t.Errorf("got %d lines %.40q…, want the long line, ErrTooLong and end", len(got), got)
	}
}

// TestReader_LinesAreTheCallers: a returned line is not overwritten by the
// next one.
func TestReader_LinesAreTheCallers(t *testing.T) {
	r := NewReader(strings.NewReader("first\nsecond\n"), 64)
	a, _ := r.Next()
	b, _ := r.Next()
	if string(a) != "first" || string(b) != "second" {
		t.Errorf("lines %q, %q", a, b)
	}
}

// FuzzReader checks the reader against bytes.Split: every line within the
// limit comes back byte for byte, every longer one is ErrTooLong, in order.
func FuzzReader(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 2)
	f.Add([]byte("{\"jsonrpc\":\"2.0\"}\n"), 8)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 0 || max > 1<<12 {
			return
		}
		var want []string
		parts := bytes.Split(data, []byte("\n"))
		if len(parts[len(parts)-1]) == 0 {
			parts = parts[:len(parts)-1] // the input ended with a newline (or was empty)
		}
		for _, p := range parts {
			if len(p) > max {
				want = append(want, "!"+ErrTooLong.Error())
			} else {
				want = append(want, string(p))
			}
		}
		r := NewReader(bytes.NewReader(data), max)
		r.SkipTooLong = true
		got := readAll(r)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("lines of %q (max %d) (-want +got):\n%s", data, max, diff)
		}
	})
}

// TestReader_ErrTooLongAtOnce: a reader that does not skip reports an
// over-long line without waiting for its end (once a buffer's worth of it
// has come).
func TestReader_ErrTooLongAtOnce(t *testing.T) {
	pr, pw := io.Pipe()
	go pw.Write([]byte(strings.Repeat("x", 100<<10))) // no newline ever comes
	r := NewReader(pr, 10)
	if _, err := r.Next(); !errors.Is(err, ErrTooLong) {
		t.Errorf("Next = %v, want ErrTooLong", err)
	}
	pr.Close()
}
