package codexhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// node is a JSON value that keeps the member order of its objects, so a
// hooks file can be rewritten with every key the user wrote, in the order
// they wrote it, whatever this package knows about. Scalars are kept as
// their decoded values (json.Number for numbers), which re-encode to JSON
// with the same meaning.
type node struct {
	kind    nodeKind
	members []member // kindObject
	items   []*node  // kindArray
	scalar  any      // kindScalar: string, json.Number, bool or nil
}

type nodeKind int

const (
	kindScalar nodeKind = iota
	kindObject
	kindArray
)

type member struct {
	key   string
	value *node
}

// maxDepth bounds nesting so that a hostile file cannot exhaust the stack.
const maxDepth = 64

// parseTree decodes exactly one JSON value from data. Duplicate object keys
// are an error: codex's own decoder rejects them in the fields it knows, and
// two readers could otherwise disagree about which one counts. So is
// invalid UTF-8, and anything but white space after the value.
func parseTree(data []byte) (*node, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the top-level value")
	}
	return n, nil
}

func parseValue(dec *json.Decoder, path string, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d", orRoot(path), maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return parseObject(dec, path, depth)
		case '[':
			return parseArray(dec, path, depth)
		}
		return nil, fmt.Errorf("%s: unexpected %q", orRoot(path), t)
	default:
		return &node{kind: kindScalar, scalar: t}, nil
	}
}

func parseObject(dec *json.Decoder, path string, depth int) (*node, error) {
	n := &node{kind: kindObject}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%s: object key is not a string", orRoot(path))
		}
		sub := joinPath(path, key)
		if seen[key] {
			return nil, fmt.Errorf("%s: duplicate key", sub)
		}
		seen[key] = true
		v, err := parseValue(dec, sub, depth+1)
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{key, v})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, syntaxError(err)
	}
	return n, nil
}

func parseArray(dec *json.Decoder, path string, depth int) (*node, error) {
	n := &node{kind: kindArray}
	for i := 0; dec.More(); i++ {
		v, err := parseValue(dec, path+"["+strconv.Itoa(i)+"]", depth+1)
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, v)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, syntaxError(err)
	}
	return n, nil
}

func syntaxError(err error) error {
	if err == io.EOF {
		return errors.New("unexpected end of JSON")
	}
	return err
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

// get returns the value of key in an object node, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for _, m := range n.members {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// set replaces the value of key, or appends the member when it is absent.
func (n *node) set(key string, v *node) {
	for i, m := range n.members {
		if m.key == key {
			n.members[i].value = v
			return
		}
	}
	n.members = append(n.members, member{key, v})
}

// remove deletes key from an object node.
func (n *node) remove(key string) {
	for i, m := range n.members {
		if m.key == key {
			n.members = append(n.members[:i], n.members[i+1:]...)
			return
		}
	}
}

// str returns the node's string value.
func (n *node) str() (string, bool) {
	if n == nil || n.kind != kindScalar {
		return "", false
	}
	s, ok := n.scalar.(string)
	return s, ok
}

func stringNode(s string) *node      { return &node{kind: kindScalar, scalar: s} }
func numberNode(i int) *node         { return &node{kind: kindScalar, scalar: json.Number(strconv.Itoa(i))} }
func objectNode(ms ...member) *node  { return &node{kind: kindObject, members: ms} }
func arrayNode(items ...*node) *node { return &node{kind: kindArray, items: items} }

// encode writes n as indented JSON (two spaces, like codex's own files)
// with a final newline. HTML characters are not escaped: a command such as
// `a && b` stays readable.
func (n *node) encode() []byte {
	var b bytes.Buffer
	n.write(&b, "")
	b.WriteByte('\n')
	return b.Bytes()
}

func (n *node) write(b *bytes.Buffer, indent string) {
	switch n.kind {
	case kindObject:
		if len(n.members) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, m := range n.members {
			b.WriteString(indent + "  ")
			writeScalar(b, m.key)
			b.WriteString(": ")
			m.value.write(b, indent+"  ")
			if i < len(n.members)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case kindArray:
		if len(n.items) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, it := range n.items {
			b.WriteString(indent + "  ")
			it.write(b, indent+"  ")
			if i < len(n.items)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	default:
		writeScalar(b, n.scalar)
	}
}

func writeScalar(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings, json.Number, bool and nil always encode
	b.Truncate(b.Len() - 1)
}
