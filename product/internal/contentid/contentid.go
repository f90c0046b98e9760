// Package contentid computes content addresses: "b3:" followed by the
// lowercase hex BLAKE3-256 of a domain-separation tag and the canonical JSON
// of a value. The same value under the same tag has the same id on every
// machine; the tag keeps ids of different kinds of object apart even when
// their JSON coincides.
//
// Canonical JSON here is: object keys sorted by their UTF-8 bytes, no
// insignificant whitespace, strings in Unicode NFC with HTML characters not
// escaped, numbers as encoding/json writes them. It is what Canonical returns.
package contentid

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"lukechampine.com/blake3"
)

// Prefix starts every id.
const Prefix = "b3:"

// hexLen is the length of the hex part of an id (32 bytes).
const hexLen = 64

// Regexp matches an id, unanchored: for the JSON Schema patterns that
// advertise ids ("^" + Regexp + "$", or optional ids). Valid is the same
// rule in code.
const Regexp = Prefix + "[0-9a-f]{64}"

// Canonical returns the canonical JSON encoding of v.
func Canonical(v any) ([]byte, error) {
	b := buffers.Get().(*bytes.Buffer)
	defer buffers.Put(b)
	raw, err := marshalInto(b, v)
	if err != nil {
		return nil, err
	}
	return canonicalize(raw) // a new slice: raw goes back to the pool
}

// Of returns the id of v under tag.
func Of(tag string, v any) (string, error) {
	c, err := Canonical(v)
	if err != nil {
		return "", err
	}
	return OfBytes(tag, c), nil
}

// OfBytes returns the id of data under tag; data is hashed as given.
func OfBytes(tag string, data []byte) string {
	h := hashers.Get().(*blake3.Hasher)
	defer hashers.Put(h)
	h.Reset()
	h.Write([]byte(tag))
	h.Write([]byte{0})
	h.Write(data)
	var sum [32]byte
	var out [len(Prefix) + hexLen]byte
	copy(out[:], Prefix)
	hex.Encode(out[len(Prefix):], h.Sum(sum[:0]))
	return string(out[:])
}

// hashers reuses BLAKE3 hashers: a new one is a few kilobytes to allocate
// and clear, and ids are computed several times for every answer (issue
// 13). Reset returns a hasher to the state New gives it.
var hashers = sync.Pool{New: func() any { return blake3.New(32, nil) }}

// buffers reuses the buffers values are encoded into before they are made
// canonical.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Valid reports whether s is a well-formed id: "b3:" and 64 lowercase hex digits.
func Valid(s string) bool {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok || len(rest) != hexLen {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func marshal(v any) ([]byte, error) { return marshalInto(new(bytes.Buffer), v) }

// marshalInto encodes v into b (reset first) and returns the encoding,
// which aliases b.
func marshalInto(b *bytes.Buffer, v any) ([]byte, error) {
	b.Reset()
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonicalize: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Memo remembers ids of values that are asked for again and again. A
// value's id is a function of its encoding (Canonical rewrites what
// encoding/json wrote), so equal encodings have equal ids and the memo
// skips the canonical form and the hash; it still encodes the value. It is
// safe for concurrent use and bounded: past its size it starts over.
type Memo struct {
	mu   sync.Mutex
	max  int
	byID map[string]string
}

// NewMemo returns a memo of at most size ids.
func NewMemo(size int) *Memo { return &Memo{max: size, byID: map[string]string{}} }

// Of returns the id of v under tag, as Of does.
func (m *Memo) Of(tag string, v any) (string, error) {
	b := buffers.Get().(*bytes.Buffer)
	defer buffers.Put(b)
	raw, err := marshalInto(b, v)
	if err != nil {
		return "", err
	}
	key := tag + "\x00" + string(raw)
	m.mu.Lock()
	id, ok := m.byID[key]
	m.mu.Unlock()
	if ok {
		return id, nil
	}
	c, err := canonicalize(raw)
	if err != nil {
		return "", err
	}
	id = OfBytes(tag, c)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.byID) >= m.max {
		clear(m.byID)
	}
	m.byID[key] = id
	return id, nil
}

// MustOf is Of for a value its caller built and that therefore always
// encodes; it panics otherwise.
func MustOf(tag string, v any) string {
	id, err := Of(tag, v)
	if err != nil {
		panic(fmt.Sprintf("contentid: %s does not encode: %v", tag, err))
	}
	return id
}

// MustCanonical is Canonical, as a string, for a value its caller built;
// it panics when the value does not encode.
func MustCanonical(v any) string {
	c, err := Canonical(v)
	if err != nil {
		panic(fmt.Sprintf("contentid: value does not encode: %v", err))
	}
	return string(c)
}
