package product

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// compileJSON decodes a need_context request and compiles it.
func compileJSON(data []byte, routes routeSet) (compiledNeed, error) {
	req, err := DecodeNeedRequest(data)
	if err != nil {
		return compiledNeed{}, err
	}
	return Compile(req, routes)
}

// DecodeNeedRequest decodes the JSON text of a need_context request strictly:
// one JSON object, valid UTF-8, within maxRequestBytes and maxJSONDepth, no
// duplicate object keys at any level (encoding/json would silently keep the
// last), no unknown fields, no wrong types, no trailing data. Values are
// checked by Compile. Errors are KindInvalidInput with the JSON path.
func DecodeNeedRequest(data []byte) (NeedRequest, error) {
	root, err := parseJSONTree(data)
	if err != nil {
		return NeedRequest{}, err
	}
	return bindRequest(root)
}

const opDecode = "need.decode"

// jsonKind is the type of a jsonValue.
type jsonKind int

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

var jsonKindNames = [...]string{"null", "boolean", "number", "string", "array", "object"}

func (k jsonKind) String() string { return jsonKindNames[k] }

// jsonValue is a decoded JSON value that keeps object members in order, so
// duplicates can be reported and nothing is silently dropped.
type jsonValue struct {
	kind    jsonKind
	str     string
	members []jsonMember
	elems   []jsonValue
}

type jsonMember struct {
	key   string
	value jsonValue
}

// parseJSONTree parses exactly one JSON value from data.
func parseJSONTree(data []byte) (jsonValue, error) {
	if len(data) > maxRequestBytes {
		return jsonValue{}, invalidf(opDecode, "$", "request is %d bytes; the limit is %d", len(data), maxRequestBytes)
	}
	if !utf8.Valid(data) {
		return jsonValue{}, invalidf(opDecode, "$", "request is not valid UTF-8")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return jsonValue{}, invalidf(opDecode, "$", "empty request; want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := treeParser{dec: dec}
	v, err := p.value("$", 0)
	if err != nil {
		return jsonValue{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jsonValue{}, invalidf(opDecode, "$", "trailing data after the request at byte %d", p.offset())
	}
	return v, nil
}

type treeParser struct {
	dec *json.Decoder
}

func (p *treeParser) offset() int64 { return p.dec.InputOffset() }

func (p *treeParser) token(path string) (json.Token, error) {
	tok, err := p.dec.Token()
	if err == nil {
		return tok, nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, invalidf(opDecode, path, "unexpected end of input")
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return nil, invalidf(opDecode, path, "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	}
	return nil, invalidf(opDecode, path, "malformed JSON at byte %d: %s", p.offset(), err.Error())
}

func (p *treeParser) value(path string, depth int) (jsonValue, error) {
	tok, err := p.token(path)
	if err != nil {
		return jsonValue{}, err
	}
	switch tok := tok.(type) {
	case nil:
		return jsonValue{kind: jsonNull}, nil
	case bool:
		return jsonValue{kind: jsonBool}, nil
	case json.Number:
		return jsonValue{kind: jsonNumber, str: tok.String()}, nil
	case string:
		return jsonValue{kind: jsonString, str: tok}, nil
	case json.Delim:
		if depth >= maxJSONDepth {
			return jsonValue{}, invalidf(opDecode, path, "nesting deeper than %d levels", maxJSONDepth)
		}
		if tok == '[' {
			return p.array(path, depth)
		}
		if tok == '{' {
			return p.object(path, depth)
		}
	}
	return jsonValue{}, invalidf(opDecode, path, "malformed JSON at byte %d", p.offset())
}

func (p *treeParser) array(path string, depth int) (jsonValue, error) {
	v := jsonValue{kind: jsonArray, elems: []jsonValue{}}
	for p.dec.More() {
		elem, err := p.value(fmt.Sprintf("%s[%d]", path, len(v.elems)), depth+1)
		if err != nil {
			return jsonValue{}, err
		}
		v.elems = append(v.elems, elem)
	}
	_, err := p.token(path) // ']'
	return v, err
}

func (p *treeParser) object(path string, depth int) (jsonValue, error) {
	v := jsonValue{kind: jsonObject}
	seen := map[string]bool{}
	for p.dec.More() {
		tok, err := p.token(path)
		if err != nil {
			return jsonValue{}, err
		}
		key := tok.(string) // the decoder only yields string keys inside an object
		mpath := joinPath(path, key)
		if seen[key] {
			return jsonValue{}, invalidf(opDecode, mpath, "duplicate key %q", key)
		}
		seen[key] = true
		val, err := p.value(mpath, depth+1)
		if err != nil {
			return jsonValue{}, err
		}
		v.members = append(v.members, jsonMember{key, val})
	}
	_, err := p.token(path) // '}'
	return v, err
}

// joinPath appends a member to a JSON path. The root "$" is dropped before a
// plain key so paths read "required[1].granularity"; any other key is
// written as a quoted index: $["odd key"].
func joinPath(path, key string) string {
	if !isPlainKey(key) {
		return path + "[" + quoteJSON(key) + "]"
	}
	if path == "$" {
		return key
	}
	return path + "." + key
}

func isPlainKey(key string) bool {
	for i, r := range key {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return key != ""
}

// bindRequest maps the tree onto NeedRequest, checking shape and types.
func bindRequest(root jsonValue) (NeedRequest, error) {
	var req NeedRequest
	err := bindObject(root, "$", map[string]func(jsonValue, string) error{
		"route": func(v jsonValue, path string) error { return bindString(v, path, &req.Route) },
		"subject": func(v jsonValue, path string) error {
			return bindObject(v, path, map[string]func(jsonValue, string) error{
				"kind": func(v jsonValue, path string) error { return bindString(v, path, &req.Subject.Kind) },
				"name": func(v jsonValue, path string) error { return bindString(v, path, &req.Subject.Name) },
			}, "kind", "name")
		},
		"required":  func(v jsonValue, path string) error { return bindObligations(v, path, &req.Required) },
		"preferred": func(v jsonValue, path string) error { return bindObligations(v, path, &req.Preferred) },
		"world":     func(v jsonValue, path string) error { return bindWorld(v, path, &req.World) },
		"task":      func(v jsonValue, path string) error { return bindString(v, path, &req.Task) },
	}, "route", "subject")
	return req, err
}

// bindObject checks that v is an object whose keys all have a binder, that
// the required keys are present, and runs the binders in input order.
func bindObject(v jsonValue, path string, binders map[string]func(jsonValue, string) error, required ...string) error {
	if v.kind != jsonObject {
		return invalidf(opDecode, path, "want an object, got %s", v.kind)
	}
	for _, m := range v.members {
		bind, ok := binders[m.key]
		if !ok {
			return invalidf(opDecode, joinPath(path, m.key), "unknown field %q", m.key)
		}
		if err := bind(m.value, joinPath(path, m.key)); err != nil {
			return err
		}
	}
	for _, key := range required {
		if !hasMember(v, key) {
			return invalidf(opDecode, joinPath(path, key), "missing required field %q", key)
		}
	}
	return nil
}

func hasMember(v jsonValue, key string) bool {
	for _, m := range v.members {
		if m.key == key {
			return true
		}
	}
	return false
}

func bindString(v jsonValue, path string, dst *string) error {
	if v.kind != jsonString {
		return invalidf(opDecode, path, "want a string, got %s", v.kind)
	}
	*dst = v.str
	return nil
}

func bindObligations(v jsonValue, path string, dst *[]ObligationRequest) error {
	if v.kind != jsonArray {
		return invalidf(opDecode, path, "want an array, got %s", v.kind)
	}
	if len(v.elems) > maxObligations {
		return invalidf(opDecode, path, "too many obligations (%d); the limit is %d", len(v.elems), maxObligations)
	}
	out := []ObligationRequest{}
	for i, elem := range v.elems {
		epath := fmt.Sprintf("%s[%d]", path, i)
		if elem.kind != jsonObject {
			return invalidf(opDecode, epath, "want an object, got %s", elem.kind)
		}
		var o ObligationRequest
		for _, m := range elem.members {
			mpath := joinPath(epath, m.key)
			if m.key != "kind" {
				if _, ok := parseFacetName(m.key); !ok {
					return invalidf(opDecode, mpath, "unknown field %q", m.key)
				}
			}
			var s string
			if err := bindString(m.value, mpath, &s); err != nil {
				return err
			}
			if m.key == "kind" {
				o.Kind = s
			} else {
				o.Facets = append(o.Facets, facetRequest{Name: m.key, Value: s})
			}
		}
		if !hasMember(elem, "kind") {
			return invalidf(opDecode, joinPath(epath, "kind"), "missing required field %q", "kind")
		}
		out = append(out, o)
	}
	*dst = out
	return nil
}

func bindWorld(v jsonValue, path string, w *worldRequest) error {
	return bindObject(v, path, map[string]func(jsonValue, string) error{
		"source":   func(v jsonValue, path string) error { return bindNonEmpty(v, path, &w.Source) },
		"platform": func(v jsonValue, path string) error { return bindNonEmpty(v, path, &w.Platform) },
		"features": func(v jsonValue, path string) error {
			switch v.kind {
			case jsonString:
				if v.str != featuresDefault {
					return invalidf(opDecode, path, "want \"default\" or a sorted list of feature names, got %q", v.str)
				}
				w.Features = nil
				return nil
			case jsonArray:
				w.Features = make([]string, 0, len(v.elems))
				for i, elem := range v.elems {
					var s string
					if err := bindString(elem, fmt.Sprintf("%s[%d]", path, i), &s); err != nil {
						return err
					}
					w.Features = append(w.Features, s)
				}
				return nil
			}
			return invalidf(opDecode, path, "want \"default\" or an array of strings, got %s", v.kind)
		},
	})
}

// bindNonEmpty binds a string that may not be empty: in the request an empty
// world field would be indistinguishable from an omitted one.
func bindNonEmpty(v jsonValue, path string, dst *string) error {
	if err := bindString(v, path, dst); err != nil {
		return err
	}
	if *dst == "" {
		return invalidf(opDecode, path, "empty string; omit the field for its default")
	}
	return nil
}
