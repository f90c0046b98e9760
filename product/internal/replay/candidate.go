package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/needle-dev/needle/product/internal/transcript"
)

// message is a decoded JSON-RPC message, client's or recorded.
type message struct {
	raw     json.RawMessage
	kind    string
	id      json.RawMessage
	method  string
	params  any // nil when absent or null: JSON-RPC treats both as "no params"
	body    any // a response's result or error
	isError bool
}

func parseMessage(raw []byte) (message, error) {
	msg := message{raw: raw, kind: transcript.Kind(raw)}
	if msg.kind == "" {
		return msg, errors.New("not a JSON-RPC request, notification or response")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return msg, err
	}
	msg.id = m["id"]
	if err := decode(m["method"], &msg.method); err != nil {
		return msg, err
	}
	if err := decode(m["params"], &msg.params); err != nil {
		return msg, err
	}
	body, isError := m["result"], false
	if e, ok := m["error"]; ok {
		body, isError = e, true
	}
	msg.isError = isError
	return msg, decode(body, &msg.body)
}

// decode decodes raw (if present) keeping numbers exact.
func decode(raw json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// idKey identifies a request id independently of its spelling.
func idKey(raw json.RawMessage) string {
	var v any
	if decode(raw, &v) != nil {
		return string(raw)
	}
	switch v := v.(type) {
	case string:
		return "s:" + v
	case json.Number:
		return "n:" + v.String()
	}
	return string(raw)
}

// candidate is one transcript being replayed and what the replay learned
// from the client so far.
type candidate struct {
	t        *transcript.Transcript
	pos      int // index of the next line
	declared map[string]bool
	ignore   map[string]bool
	binds    map[string]string
	ids      map[string]json.RawMessage // recorded client request id → actual id
}

func newCandidate(t *transcript.Transcript, env map[string]string) *candidate {
	c := &candidate{
		t:        t,
		declared: make(map[string]bool),
		ignore:   make(map[string]bool),
		binds:    make(map[string]string),
		ids:      make(map[string]json.RawMessage),
	}
	for _, name := range t.Header.Placeholders {
		c.declared[name] = true
	}
	for _, k := range t.Header.Match.IgnoreParamKeys {
		c.ignore[k] = true
	}
	for name, v := range env {
		if v != "" { // os.Getenv gives "" for unset; never bind to nothing
			c.binds[name] = v
		}
	}
	return c
}

func (c *candidate) done() bool { return c.pos >= len(c.t.Lines) }

func (c *candidate) line() transcript.Line { return c.t.Lines[c.pos] }

// step is the 1-based index of the next line among the transcript's messages.
func (c *candidate) step() int { return c.pos + 1 }

// expect matches the client's message against the next (c2s) line. On
// success it commits new bindings and the id mapping and advances; on
// failure it changes nothing and says why.
func (c *candidate) expect(act message) error {
	exp, err := parseMessage(c.line().Msg)
	if err != nil {
		return fmt.Errorf("recorded message: %w", err)
	}
	if exp.kind != act.kind {
		return fmt.Errorf("expected a %s, got a %s", exp.kind, act.kind)
	}
	m := &matcher{declared: c.declared, ignore: c.ignore, bound: c.binds, fresh: make(map[string]string)}
	switch {
	case exp.kind == transcript.KindResponse && idKey(exp.id) != idKey(act.id):
		return fmt.Errorf("expected the answer to server request %s, got one to %s", exp.id, act.id)
	case exp.kind == transcript.KindResponse && exp.isError != act.isError:
		return fmt.Errorf("expected %s, got %s", bodyName(exp.isError), bodyName(act.isError))
	case exp.kind == transcript.KindResponse:
		err = m.value(exp.body, act.body, "", bodyName(exp.isError))
	case exp.method != act.method:
		return fmt.Errorf("expected method %q, got %q", exp.method, act.method)
	default:
		err = m.value(exp.params, act.params, "", "params")
	}
	if err != nil {
		return err
	}
	maps.Copy(c.binds, m.fresh)
	if exp.kind == transcript.KindRequest {
		c.ids[idKey(exp.id)] = act.id
	}
	c.pos++
	return nil
}

func bodyName(isError bool) string {
	if isError {
		return "error"
	}
	return "result"
}

// render returns the next (s2c) line as it goes on the wire: placeholders
// substituted, the id of a response to a client request remapped to the id
// the client actually used, compacted.
func (c *candidate) render() ([]byte, error) {
	var unbound string
	msg, err := transcript.MapStrings(c.line().Msg, func(s string) string {
		return placeholderRE.ReplaceAllStringFunc(s, func(ph string) string {
			name := ph[2 : len(ph)-1]
			v, ok := c.binds[name]
			switch {
			case !c.declared[name]:
				return ph
			case !ok:
				unbound = name
				return ph
			}
			return v
		})
	})
	if err != nil {
		return nil, err
	}
	if unbound != "" {
		return nil, fmt.Errorf("placeholder ${%s} is not bound: put it in Config.Env or let the client send it first", unbound)
	}
	if transcript.Kind(msg) == transcript.KindResponse {
		if msg, err = c.remapID(msg); err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	if err := json.Compact(&out, msg); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// remapID rewrites the top-level id of a response, keeping member order.
func (c *candidate) remapID(msg []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(msg, &top); err != nil {
		return nil, err
	}
	actual, ok := c.ids[idKey(top["id"])]
	if !ok {
		return msg, nil
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		key, _ := json.Marshal(tok)
		if tok == "id" {
			v = actual
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.Write(key)
		out.WriteByte(':')
		out.Write(v)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}
