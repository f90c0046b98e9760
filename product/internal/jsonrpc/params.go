package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// DecodeParams decodes a request's params into v by the envelope's rule:
// params is an object (absent params are an empty one) whose member names
// match v's json tags exactly (no case or Unicode folding, so "NAME" and
// "argumentſ" are other members), no member appears twice, strings are
// valid Unicode and types match. Members v does not name are ignored: MCP
// adds optional members (_meta) over time.
//
// The members listed in raw are the method's own input, taken as raw JSON
// (a jsontext.Value or json.RawMessage field) and held to the rule only at
// their name: what is inside them, duplicates included, the method decodes
// and refuses with its own paths. Every other member is checked all the
// way down. A failure is the -32602 error to send, naming the member by its
// JSON pointer and never a Go type.
func DecodeParams(params json.RawMessage, v any, raw ...string) *Error {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	dec := jsontext.NewDecoder(bytes.NewReader(params), jsontext.AllowDuplicateNames(true))
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return paramsError("", "params must be an object")
	}
	seen := map[string]bool{}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return paramsError("", "not valid JSON")
		}
		name := tok.String()
		val, err := dec.ReadValue()
		if err != nil {
			return paramsError("", "not valid JSON")
		}
		at := string(jsontext.Pointer("").AppendToken(name))
		switch {
		case seen[name]:
			return paramsError(at, "the member appears more than once")
		case !slices.Contains(raw, name) && !val.IsValid():
			return paramsError(at, "a member inside it appears more than once")
		}
		seen[name] = true
	}
	err = jsonv2.Unmarshal(params, v, jsontext.AllowDuplicateNames(true))
	var sem *jsonv2.SemanticError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &sem) && sem.JSONKind != 0:
		return paramsError(string(sem.JSONPointer), "a "+kindName(sem.JSONKind)+" is not allowed here")
	case errors.As(err, &sem):
		return paramsError(string(sem.JSONPointer), "wrong type")
	}
	return paramsError("", "does not decode")
}

// paramsError is the -32602 answer to params that break the rule; at is a
// JSON pointer into params, "" for params as a whole.
func paramsError(at, why string) *Error {
	if at == "" {
		return &Error{Code: CodeInvalidParams, Message: "invalid params: " + why}
	}
	return &Error{Code: CodeInvalidParams, Message: "invalid params at " + strconv.Quote(at) + ": " + why}
}

// kindName names a JSON kind for a message.
func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}
