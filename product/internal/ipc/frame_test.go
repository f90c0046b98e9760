package ipc

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrame_RoundTrip(t *testing.T) {
	var buf bytes.Buffer
	f := NewFramer(&buf)
	big := bytes.Repeat([]byte("x"), MaxFrame+10)
	if _, err := f.Writer(1).Write(big); err != nil {
		t.Fatal(err)
	}
	if err := f.Send(3, nil); err != nil {
		t.Fatal(err)
	}
	var got []byte
	var chans []byte
	for {
		ch, p, err := ReadFrame(&buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
		if ch == 1 {
			got = append(got, p...)
		}
	}
	if !bytes.Equal(got, big) || !bytes.Equal(chans, []byte{1, 1, 3}) {
		t.Fatalf("got %d bytes on channels %v, want %d on [1 1 3]", len(got), chans, len(big))
	}
}

func TestReadFrame_Errors(t *testing.T) {
	if _, _, err := ReadFrame(bytes.NewReader([]byte{1, 0xff, 0xff, 0xff, 0xff})); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized length: %v", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{1, 0, 0, 0, 4, 'a'})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated payload: %v", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{1, 0})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated header: %v", err)
	}
	if err := WriteFrame(io.Discard, 1, make([]byte, MaxFrame+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized write: %v", err)
	}
}

// FuzzReadFrame: any byte stream yields frames that re-encode to exactly
// the bytes consumed, or an error; never a panic or an oversized frame.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 'h', 'i', 3, 0, 0, 0, 0})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var re bytes.Buffer
		for {
			ch, p, err := ReadFrame(r)
			if err != nil {
				break
			}
			if len(p) > MaxFrame {
				t.Fatalf("frame of %d bytes", len(p))
			}
			if err := WriteFrame(&re, ch, p); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.HasPrefix(data, re.Bytes()) {
			t.Fatalf("re-encoded frames are not a prefix of the input")
		}
	})
}
