package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/needle-dev/needle/product/internal/ndjson"
)

// ID is a request id exactly as the client sent it: a JSON string or number
// that satisfies the id rule (see idKey).
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
	id     ID     // nil when absent or not a valid id
	key    string // canonical form of id, see idKey
	method string
	params json.RawMessage
}

// member is one top-level member of a message object, in order.
type member struct {
	name  string
	value json.RawMessage
}

// decode parses one non-blank line. A non-nil *Error is the reply the line
// deserves; message.id is then set if the line carried a valid id.
//
// The line must be JSON text as RFC 8259 defines it, checked by one strict
// reader (jsontext): valid UTF-8, no lone surrogate escapes, one value and
// nothing after it; anything else is -32700. The message's own members are
// matched exactly (no case or Unicode folding) and a member named twice is
// -32600: what a gateway reads in the envelope is what is run. Duplicates
// inside params are the method's to refuse (DecodeParams), as -32602.
func decode(line []byte) (message, *Error) {
	if !jsontext.Value(line).IsValid(jsontext.AllowDuplicateNames(true)) {
		return message{}, errParse()
	}
	dec := jsontext.NewDecoder(bytes.NewReader(line), jsontext.AllowDuplicateNames(true))
	tok, err := dec.ReadToken()
	switch {
	case err != nil:
		return message{}, errParse()
	case tok.Kind() == '[':
		return message{}, errInvalid("batches are not supported")
	case tok.Kind() != '{':
		return message{}, errInvalid("not an object")
	}
	var members []member
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return message{}, errParse()
		}
		name := tok.String() // before the next read voids tok
		val, err := dec.ReadValue()
		if err != nil {
			return message{}, errParse()
		}
		members = append(members, member{name, bytes.Clone(val)})
	}
	return classify(members)
}

// classify validates a message object.
func classify(members []member) (message, *Error) {
	f := make(map[string]json.RawMessage, len(members))
	dup, hasDup := "", false
	for _, mb := range members {
		if _, seen := f[mb.name]; seen && !hasDup {
			dup, hasDup = mb.name, true
		}
		f[mb.name] = mb.value
	}
	var m message
	rawID, hasID := f["id"]
	if hasID && !(hasDup && dup == "id") {
		if key, ok := idKey(rawID); ok {
			m.id, m.key = rawID, key
		}
	}
	if hasDup {
		return m, errInvalid("member " + strconv.Quote(dup) + " appears more than once")
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
	if string(f["jsonrpc"]) != `"2.0"` {
		return m, errInvalid(`jsonrpc must be "2.0"`)
	}
	if hasID && m.id == nil {
		return m, errInvalid("id must be a string or an integer of at most 2^53-1 in magnitude")
	}
	if rawMethod[0] != '"' || json.Unmarshal(rawMethod, &m.method) != nil {
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

// maxSafeInteger is the largest integer every JSON peer can hold exactly
// (an IEEE double's 2^53-1, JavaScript's Number.MAX_SAFE_INTEGER).
const maxSafeInteger = 1<<53 - 1

// idKey is the rule for ids and their identity. An id is a string (valid
// Unicode, which decode already guaranteed; identity: its value, so "a"
// and "\u0061" are one id) or a number whose value is an integer within
// ±(2^53-1) (identity: that value, so 7, 7.0 and 70e-1 are one id and so
// are 0 and -0). Anything else — a fraction, a number past the bound,
// null, a boolean, an object — is not an id. The id is echoed back as sent.
func idKey(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if !jsontext.Value(raw).IsValid() || json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	case c == '-' || (c >= '0' && c <= '9'):
		n, ok := integerValue(string(raw))
		if !ok {
			return "", false
		}
		return "n" + strconv.FormatInt(n, 10), true
	}
	return "", false
}

// integerValue returns the value of a JSON number when it is an integer
// within ±maxSafeInteger. It works on the digits, never through a float
// (9007199254740993 must not round to an acceptable neighbour) and never
// materializes a huge exponent.
func integerValue(text string) (int64, bool) {
	neg := strings.HasPrefix(text, "-")
	text = strings.TrimPrefix(text, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(text), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	e := 0
	if hasExp {
		v, err := strconv.Atoi(exp) // accepts a sign; fails past int range
		if err != nil || v > 1000 || v < -1000 {
			return 0, false
		}
		e = v
	}
	if digits == "" {
		return 0, true // zero, however it is written
	}
	e -= len(frac)
	for e < 0 && strings.HasSuffix(digits, "0") {
		digits, e = digits[:len(digits)-1], e+1
	}
	if e < 0 || len(digits)+e > 16 {
		return 0, false // a fraction, or more than 16 digits: past 2^53-1
	}
	digits += strings.Repeat("0", e)
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > maxSafeInteger {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
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

// resultLine is the line of a result response, exactly as marshal writes
// the response: encoding/json reads a json.RawMessage again to compact
// it, which for a need_context answer was a second pass over its largest
// part on every hit (issue 13). result is marshal's output, compact
// already; the id is compacted as marshal would.
func resultLine(id ID, result json.RawMessage) []byte {
	var compact bytes.Buffer
	if err := json.Compact(&compact, id); err != nil {
		line, _ := marshal(response{JSONRPC: "2.0", ID: id, Result: result})
		return line
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	line := make([]byte, 0, len(head)+compact.Len()+len(mid)+len(result)+1)
	line = append(line, head...)
	line = append(line, compact.Bytes()...)
	line = append(line, mid...)
	line = append(line, result...)
	return append(line, '}')
}
