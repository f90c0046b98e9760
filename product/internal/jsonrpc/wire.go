package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/needle-dev/needle/product/internal/ndjson"
)

// ID is a request id exactly as the client sent it: a JSON string or number.
type ID = json.RawMessage

// Request is one incoming request or notification.
type Request struct {
	ID             ID // nil for a notification
	Method         string
	Params         json.RawMessage // nil when absent; otherwise an object or array
	IsNotification bool
}

// nullID is sent when the offending message's id is absent or unusable.
var nullID = ID("null")

type msgKind int

const (
	kindRequest msgKind = iota + 1
	kindNotification
	kindResponse // a reply from the client; we send no requests, so it is dropped
)

// message is one validated incoming line.
type message struct {
	kind   msgKind
	id     ID     // nil when absent or not a string or number
	key    string // canonical form of id, see idKey
	method string
	params json.RawMessage
}

// decode parses one non-blank line. A non-nil *Error is the reply the line
// deserves; message.id is then set if the line carried a usable id.
func decode(line []byte) (message, *Error) {
	var fields map[string]json.RawMessage
	err := json.Unmarshal(line, &fields)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return message{}, errParse()
	case err != nil && bytes.TrimSpace(line)[0] == '[':
		return message{}, errInvalid("batches are not supported")
	case err != nil || fields == nil: // a scalar or null
		return message{}, errInvalid("not an object")
	}
	return classify(fields)
}

// classify validates a message object. Raw values never alias the line
// buffer: json.RawMessage copies what it is given.
func classify(f map[string]json.RawMessage) (message, *Error) {
	var m message
	rawID, hasID := f["id"]
	if hasID {
		if key, ok := idKey(rawID); ok {
			m.id, m.key = rawID, key
		}
	}
	rawMethod, hasMethod := f["method"]
	if !hasMethod {
		_, hasResult := f["result"]
		_, hasError := f["error"]
		if m.id != nil && (hasResult || hasError) {
			m.kind = kindResponse
			return m, nil
		}
		return m, errInvalid("missing method")
	}
	var version string
	if json.Unmarshal(f["jsonrpc"], &version) != nil || version != "2.0" {
		return m, errInvalid(`jsonrpc must be "2.0"`)
	}
	if hasID && m.id == nil {
		return m, errInvalid("id must be a string or a number")
	}
	if json.Unmarshal(rawMethod, &m.method) != nil {
		return m, errInvalid("method must be a string")
	}
	if p, ok := f["params"]; ok {
		if p[0] != '{' && p[0] != '[' {
			return m, errInvalid("params must be an object or an array")
		}
		m.params = p
	}
	m.kind = kindNotification
	if hasID {
		m.kind = kindRequest
	}
	return m, nil
}

// idKey is the identity of an id for duplicate detection: a string by its
// decoded value (so "a" and "\u0061" collide), a number by its exact text
// (so 1 and 1.0 do not: numbers are not normalised). Other JSON values are
// not ids.
func idKey(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	case c == '-' || (c >= '0' && c <= '9'):
		return "n" + string(raw), true
	}
	return "", false
}

// response is an outgoing response; exactly one of Result and Error is set.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      ID              `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// notification is an outgoing server-to-client notification.
type notification struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// marshal is the one encoder of everything written (results, params and
// whole messages): compact JSON, which never holds a raw newline, with HTML
// escaping off because the peer is a program, not a browser.
func marshal(v any) (json.RawMessage, error) { return ndjson.Encode(v) }
