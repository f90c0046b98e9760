package contentid

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"lukechampine.com/blake3"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"SortedKeys", map[string]any{"b": 1, "a": []any{"x", true, nil}}, `{"a":["x",true,null],"b":1}`},
		{"StructFieldsSorted", struct {
			Z string `json:"z"`
			A string `json:"a"`
		}{"1", "2"}, `{"a":"2","z":"1"}`},
		{"NoHTMLEscape", map[string]string{"k": "<a&b>"}, `{"k":"<a&b>"}`},
		{"NFC", map[string]string{"cafe\u0301": "cafe\u0301"}, "{\"caf\u00e9\":\"caf\u00e9\"}"},
		{"NumbersKept", []any{1, 2.5, 1e21}, `[1,2.5,1e+21]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonical = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestOf(t *testing.T) {
	id, err := Of("needle.test.v1", map[string]any{"b": 1, "a": "x"})
	if err != nil {
		t.Fatal(err)
	}
	sum := blake3.Sum256([]byte("needle.test.v1\x00" + `{"a":"x","b":1}`))
	if want := "b3:" + hex.EncodeToString(sum[:]); id != want {
		t.Errorf("Of = %s, want %s", id, want)
	}
	// Frozen: a change here changes every id the product has ever stored.
	if id != "b3:"+frozenTestID {
		t.Errorf("Of = %s; the canonical form or hash framing changed (was b3:%s)", id, frozenTestID)
	}
	other, _ := Of("needle.other.v1", map[string]any{"b": 1, "a": "x"})
	if other == id {
		t.Error("the domain tag does not separate ids")
	}
}

const frozenTestID = "7d9dc42e84dc4e81ed73df35a79b724a51cf1c22fac6a8273d9abfdfe422a397"

func TestValid(t *testing.T) {
	good := "b3:" + strings.Repeat("0a", 32)
	for s, want := range map[string]bool{
		good:                            true,
		strings.ToUpper(good):           false,
		"b3:" + strings.Repeat("a", 63): false,
		"b3:" + strings.Repeat("a", 65): false,
		"b2:" + strings.Repeat("a", 64): false,
		"b3:" + strings.Repeat("g", 64): false,
		"":                              false,
	} {
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}

// BenchmarkOf is the id of an answer-sized value (issue 13: ids are
// computed several times for every answer). Each id took a new BLAKE3
// hasher (kilobytes to allocate and clear) and a new encoding buffer; both
// are reused now.
func BenchmarkOf(b *testing.B) {
	v := map[string]any{"context": strings.Repeat("implementation_location: search.go:15-17 [artifact b3:0123]\n", 20),
		"ids": []string{"b3:aa", "b3:bb"}, "step": map[string]any{"ordinal": 3, "relation": "repeat"}, "hit": true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Of("needle.test.v1", v); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOfBytes_ConcurrentReuse: ids computed concurrently through the
// reused hashers are each the hash of their own input (the oracle is
// blake3.Sum256 of the framed bytes).
func TestOfBytes_ConcurrentReuse(t *testing.T) {
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 200 {
				data := []byte(strings.Repeat(string(rune('a'+g)), i))
				sum := blake3.Sum256(append([]byte("needle.test.v1\x00"), data...))
				if got, want := OfBytes("needle.test.v1", data), "b3:"+hex.EncodeToString(sum[:]); got != want {
					done <- fmt.Errorf("goroutine %d, input %d: %s, want %s", g, i, got, want)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
