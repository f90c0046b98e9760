// Package transcript reads, writes, records and freezes Codex App Server
// transcripts: complete JSON-RPC sessions between a client and
// `codex app-server`, kept as test fixtures (frozen/ in the repository).
//
// A transcript file is JSONL. The first line is the header:
//
//	{"kind":"header","format":"needle.codex-appserver-transcript/v1","codexVersion":"0.171.0",
//	 "scenario":"evidence","placeholders":["CODEX_HOME","CWD"],"match":{"ignoreParamKeys":["clientInfo.version"]}}
//
// Every further line is one wire message and its direction:
//
//	{"dir":"c2s","msg":{"method":"initialize","id":0,"params":{…}}}
//	{"dir":"s2c","msg":{"id":0,"result":{"codexHome":"${CODEX_HOME}",…}}}
//
// msg is the exact JSON-RPC object from the wire (request, notification or
// response; "JSON-RPC lite": no "jsonrpc" member is required). Extra line keys
// such as "t_ms" or "note" are accepted and dropped on read.
//
// Environment-bound strings (the checkout path, CODEX_HOME) are replaced by
// ${NAME} placeholders when a recording is frozen (Freeze), so a transcript
// recorded in one temporary directory replays in another. Server-generated
// ids and timestamps stay literal: once frozen they are deterministic.
//
// Reading is strict because transcripts are golden files: a malformed line is
// an error naming its line rather than something to skip.
package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/needle-dev/needle/product/internal/lazyregexp"
)

// Format is the header format tag of this version of the file format.
const Format = "needle.codex-appserver-transcript/v1"

// MaxLine bounds the length of one transcript line. Real lines reach a few
// hundred KiB (diffs, aggregated output, resumed turns); the bound only stops
// a corrupt file from exhausting memory.
const MaxLine = 16 << 20

// Directions of a Line.
const (
	ClientToServer = "c2s"
	ServerToClient = "s2c"
)

// Message kinds returned by Kind.
const (
	KindRequest      = "request"
	KindNotification = "notification"
	KindResponse     = "response"
)

// Header is the first line of a transcript.
type Header struct {
	Kind         string   `json:"kind"` // always "header"
	Format       string   `json:"format"`
	CodexVersion string   `json:"codexVersion"`
	Scenario     string   `json:"scenario"`
	Placeholders []string `json:"placeholders"`
	Match        Match    `json:"match"`
}

// Match tunes how a replay compares client messages with the recording.
type Match struct {
	// IgnoreParamKeys are dotted paths below params (or below a response's
	// result/error body) whose values are not compared, e.g.
	// "clientInfo.version". Arrays add no path segment.
	IgnoreParamKeys []string `json:"ignoreParamKeys"`
}

// Line is one recorded wire message.
type Line struct {
	Dir string          `json:"dir"` // ClientToServer or ServerToClient
	Msg json.RawMessage `json:"msg"`
}

// Transcript is a header and the recorded messages in wire order.
type Transcript struct {
	Header Header
	Lines  []Line
}

// Error reports a problem with one line of a transcript.
type Error struct {
	Line int // 1-based; the header is line 1
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("transcript line %d: %v", e.Line, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// placeholderName is the syntax of a placeholder NAME in ${NAME}.
var placeholderName = lazyregexp.New(`^[A-Z_][A-Z0-9_]*$`)

// ValidPlaceholder reports whether name may appear as ${name}.
func ValidPlaceholder(name string) bool { return placeholderName.MatchString(name) }

// Kind classifies a JSON-RPC message: "request" (method and id),
// "notification" (method, no id) or "response" (id and exactly one of
// result/error). It returns "" for anything else, including invalid JSON.
func Kind(msg json.RawMessage) string {
	k, _ := classify(msg)
	return k
}

// classify is Kind with the reason a message is rejected.
func classify(msg json.RawMessage) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil || m == nil {
		return "", errors.New("msg is not a JSON object")
	}
	id, hasID := m["id"]
	if hasID {
		if err := checkID(id); err != nil {
			return "", err
		}
	}
	if method, ok := m["method"]; ok {
		var s string
		if err := json.Unmarshal(method, &s); err != nil || s == "" {
			return "", errors.New("method is not a non-empty string")
		}
		if hasID {
			return KindRequest, nil
		}
		return KindNotification, nil
	}
	_, hasResult := m["result"]
	_, hasError := m["error"]
	switch {
	case !hasID:
		return "", errors.New("msg has neither method nor id")
	case hasResult == hasError:
		return "", errors.New("response needs exactly one of result and error")
	}
	return KindResponse, nil
}

// checkID accepts the RequestId of the protocol: a string or an int64.
func checkID(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		return nil // json.Unmarshal already proved it a valid string
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
		return fmt.Errorf("id %s is neither a string nor an int64", raw)
	}
	return nil
}

// checkLine validates one Line as Read and Write require it.
func checkLine(l Line) error {
	if l.Dir != ClientToServer && l.Dir != ServerToClient {
		return fmt.Errorf("dir %q is neither %q nor %q", l.Dir, ClientToServer, ServerToClient)
	}
	if _, err := classify(l.Msg); err != nil {
		return err
	}
	return nil
}

// checkHeader validates a header as Read and Write require it.
func checkHeader(h Header) error {
	if h.Kind != "header" {
		return fmt.Errorf("first line has kind %q, want \"header\"", h.Kind)
	}
	if h.Format != Format {
		return fmt.Errorf("format %q, want %q", h.Format, Format)
	}
	for _, name := range h.Placeholders {
		if !ValidPlaceholder(name) {
			return fmt.Errorf("invalid placeholder name %q", name)
		}
	}
	return nil
}
