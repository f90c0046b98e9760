package contentid

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// canonicalize rewrites JSON that encoding/json wrote into canonical form
// in one pass over its bytes: object members sorted by their NFC key,
// strings in NFC, everything else copied. It produces exactly what decoding
// into an any tree (numbers as json.Number), putting every string in NFC
// and encoding again produces (canonical_test.go holds the two to the same
// bytes), without building the tree: content ids are computed on every
// answer, and the tree was most of their cost.
//
// Duplicate keys keep the last value, as decoding into a map does. Two
// distinct keys with the same NFC form are not canonical in either
// implementation; the product never builds them.
func canonicalize(raw []byte) ([]byte, error) {
	c := canonicalizer{in: raw}
	out, err := c.value(make([]byte, 0, len(raw)))
	if err != nil {
		return nil, err
	}
	if c.skipSpace(); c.pos != len(c.in) {
		return nil, c.errorf("trailing data")
	}
	return out, nil
}

type canonicalizer struct {
	in  []byte
	pos int
}

func (c *canonicalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("canonicalize: offset %d: %s", c.pos, fmt.Sprintf(format, args...))
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// value appends the canonical form of the value at c.pos to out.
func (c *canonicalizer) value(out []byte) ([]byte, error) {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return nil, c.errorf("unexpected end")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(out)
	case b == '[':
		return c.array(out)
	case b == '"':
		s, err := c.str(false)
		if err != nil {
			return nil, err
		}
		return s.append(out)
	default:
		return c.scalar(out)
	}
}

// member is one object member: its key (NFC) and its canonical value.
type member struct {
	key   jsonString
	value []byte
}

func (c *canonicalizer) object(out []byte) ([]byte, error) {
	c.pos++ // {
	var members []member
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return append(out, '{', '}'), nil
	}
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return nil, c.errorf("object key expected")
		}
		k, err := c.str(true)
		if err != nil {
			return nil, err
		}
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return nil, c.errorf("':' expected")
		}
		c.pos++
		v, err := c.value(nil)
		if err != nil {
			return nil, err
		}
		key := k.nfc()
		if i := slices.IndexFunc(members, func(m member) bool { return m.key.value == key.value }); i >= 0 {
			members[i].value = v // the last duplicate wins
		} else {
			members = append(members, member{key, v})
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return nil, c.errorf("unexpected end in object")
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if c.in[c.pos] != ',' {
			return nil, c.errorf("',' or '}' expected")
		}
		c.pos++
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key.value, b.key.value) })
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = m.key.append(out); err != nil {
			return nil, err
		}
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}'), nil
}

func (c *canonicalizer) array(out []byte) ([]byte, error) {
	c.pos++ // [
	out = append(out, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		return append(out, ']'), nil
	}
	for first := true; ; first = false {
		if !first {
			out = append(out, ',')
		}
		var err error
		if out, err = c.value(out); err != nil {
			return nil, err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return nil, c.errorf("unexpected end in array")
		}
		if c.in[c.pos] == ']' {
			c.pos++
			return append(out, ']'), nil
		}
		if c.in[c.pos] != ',' {
			return nil, c.errorf("',' or ']' expected")
		}
		c.pos++
	}
}

// scalar copies a number or a literal; encoding/json writes a
// json.Number as the text it holds, so the text is the canonical form once
// it is a valid JSON number.
func (c *canonicalizer) scalar(out []byte) ([]byte, error) {
	start := c.pos
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			goto end
		}
		c.pos++
	}
end:
	tok := c.in[start:c.pos]
	switch string(tok) {
	case "true", "false", "null":
		return append(out, tok...), nil
	}
	if !isNumber(tok) {
		return nil, c.errorf("invalid value %q", tok)
	}
	return append(out, tok...), nil
}

// isNumber reports whether b is a JSON number.
func isNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	return i == len(b)
}

// jsonString is a string token: its decoded value, and when the token is
// already canonical (ASCII with only the escapes encoding/json writes: NFC
// as it is, and written back to the same bytes) the token itself, quotes
// included.
type jsonString struct {
	value string
	raw   []byte // nil: encode value
}

// str reads the string token at c.pos. The value of a plain token is only
// decoded for a key (members are sorted by it).
func (c *canonicalizer) str(key bool) (jsonString, error) {
	start := c.pos
	c.pos++ // opening quote
	plain, escaped := true, false
	for c.pos < len(c.in) {
		b := c.in[c.pos]
		switch {
		case b == '"':
			c.pos++
			tok := c.in[start:c.pos]
			if plain && !key {
				return jsonString{raw: tok}, nil
			}
			if !escaped && utf8.Valid(tok) {
				s := jsonString{value: string(tok[1 : len(tok)-1])}
				if plain {
					s.raw = tok
				}
				return s, nil
			}
			var s jsonString
			if err := json.Unmarshal(tok, &s.value); err != nil {
				return jsonString{}, c.errorf("string: %v", err)
			}
			if plain {
				s.raw = tok
			}
			return s, nil
		case b == '\\':
			if c.pos+1 >= len(c.in) {
				return jsonString{}, c.errorf("unexpected end in string")
			}
			escaped = true
			if !encoderEscape(c.in[c.pos:]) {
				plain = false
			}
			c.pos += 2
		case b < 0x20:
			return jsonString{}, c.errorf("control character in string")
		default:
			if b >= 0x80 {
				plain = false
			}
			c.pos++
		}
	}
	return jsonString{}, c.errorf("unexpected end in string")
}

// nfc returns s in NFC; a plain token is already.
func (s jsonString) nfc() jsonString {
	if s.raw != nil {
		return s
	}
	if n := norm.NFC.String(s.value); n != s.value {
		return jsonString{value: n}
	}
	return s
}

// encoderEscape reports whether s starts with an escape exactly as
// encoding/json writes it: a short form (\" \\ \b \f \n \r \t), or
// \u00xx in lowercase hex for the other control characters. Such an
// escape decodes to ASCII and is written back the same; any other (\/,
// \u0041, uppercase hex) is not canonical as it stands.
func encoderEscape(s []byte) bool {
	if len(s) < 2 {
		return false
	}
	switch s[1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
	default:
		return false
	}
	if len(s) < 6 || s[2] != '0' || s[3] != '0' || (s[4] != '0' && s[4] != '1') {
		return false
	}
	h := s[5]
	if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f') {
		return false
	}
	switch string(s[4:6]) {
	case "08", "0c", "0a", "0d", "09": // written in their short forms
		return false
	}
	return true
}

// append appends the canonical encoding of s: the token when it is
// plain, else its value in NFC encoded as encoding/json encodes it without
// HTML escaping.
func (s jsonString) append(out []byte) ([]byte, error) {
	if s.raw != nil {
		return append(out, s.raw...), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(norm.NFC.String(s.value)); err != nil {
		return nil, err
	}
	return append(out, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...), nil
}
