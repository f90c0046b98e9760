package fakemodel

import (
	"fmt"
	"maps"
	"time"
	"unicode/utf8"
)

// Usage is the token usage a scripted response reports in response.completed.
// Codex passes it through verbatim into thread/tokenUsage/updated.
type Usage struct {
	Input     int64 `json:"input"`     // input_tokens, including cached
	Cached    int64 `json:"cached"`    // input_tokens_details.cached_tokens
	Output    int64 `json:"output"`    // output_tokens, including reasoning
	Reasoning int64 `json:"reasoning"` // output_tokens_details.reasoning_tokens
}

// Response is one scripted answer to POST …/responses.
type Response struct {
	// Events are the SSE events, each written as
	// "event: <type>\ndata: <json>\n\n" where <type> is the event's "type".
	Events []map[string]any
	// Status, when non-zero and not 200, makes the answer a plain HTTP
	// response with this status and Body as JSON (an upstream failure).
	Status int
	Body   any
	// Hold delays the first event (or the failure) until Release is called
	// or the request ends, so that tests can interrupt or steer a turn while
	// the model is "thinking".
	Hold bool
	// Delay is slept between events.
	Delay time.Duration
	// Match, when set, makes the response keyed: it answers the first
	// request whose body contains every one of these strings, whatever its
	// position in the script. Responses without Match are served in script
	// order to the requests no keyed response matches.
	Match []string
	// Read fills the events from the request, as a model uses what its
	// tools answered: every occurrence of a key in the events' JSON is
	// replaced by the first match of its regular expression in the
	// request's body (a tool's output, say). A key whose expression does
	// not match fails the request (HTTP 500): a scripted turn never goes
	// on with a value it did not read.
	Read map[string]string
	// MeasureInput replaces the scripted input_tokens of response.completed
	// by the request body's size in bytes divided by BytesPerToken, rounded
	// up: a model charges for everything a client sends, and a client that
	// sends a longer history is charged more. Scripted usage cannot tell
	// a client that resends what it sent before from one that does not.
	MeasureInput bool
}

// BytesPerToken is the rough size of one input token MeasureInput
// assumes: about four bytes of English or code per token.
const BytesPerToken = 4

// Script is the queue of responses, served in order, one per request.
type Script struct {
	Responses []Response
}

// chunks is how many output_text.delta events a message is split into, so
// that clients see streaming rather than one delta.
const chunks = 3

// Message returns a streamed assistant message: response.created,
// output_item.added, output_text.delta chunks, output_item.done and
// response.completed with u. Empty respID or msgID are filled in by Start
// from the response's position in the script ("resp_N", "msg_N"), so
// recordings are repeatable.
func Message(respID, msgID, text string, u Usage) Response {
	events := []map[string]any{
		created(respID),
		{"type": "response.output_item.added", "item": map[string]any{
			"type": "message", "role": "assistant", "id": msgID, "content": []any{},
		}},
	}
	for _, d := range split(text, chunks) {
		events = append(events, map[string]any{
			"type": "response.output_text.delta", "item_id": msgID,
			"output_index": 0, "content_index": 0, "delta": d,
		})
	}
	events = append(events,
		map[string]any{"type": "response.output_item.done", "item": map[string]any{
			"type": "message", "role": "assistant", "id": msgID,
			"content": []any{map[string]any{"type": "output_text", "text": text}},
		}},
		completed(respID, u))
	return Response{Events: events}
}

// FunctionCall returns a response in which the model calls a tool, e.g. name
// "exec_command" with arguments `{"cmd":"cat README","workdir":"…","yield_time_ms":1000}`
// (the shell tool codex offers a model it has no metadata for). An empty
// respID or callID is filled in by Start ("resp_N", "call_N").
func FunctionCall(respID, callID, name, arguments string, u Usage) Response {
	return Response{Events: []map[string]any{
		created(respID),
		{"type": "response.output_item.done", "item": map[string]any{
			"type": "function_call", "call_id": callID, "name": name, "arguments": arguments,
		}},
		completed(respID, u),
	}}
}

// MessageThenCall returns a response in which the model says text and then,
// in the same response, calls a tool: the turn goes on after the message
// (the commentary a model writes before it acts). Ids are filled in as for
// Message and FunctionCall.
func MessageThenCall(respID, msgID, text, callID, name, arguments string, u Usage) Response {
	msg := Message(respID, msgID, text, u).Events
	call := FunctionCall(respID, callID, name, arguments, u).Events
	events := append(msg[:len(msg)-1:len(msg)-1], call[1:]...)
	return Response{Events: events}
}

func created(respID string) map[string]any {
	return map[string]any{"type": "response.created", "response": map[string]any{"id": respID}}
}

func completed(respID string, u Usage) map[string]any {
	return map[string]any{"type": "response.completed", "response": map[string]any{
		"id": respID,
		"usage": map[string]any{
			"input_tokens":          u.Input,
			"input_tokens_details":  map[string]any{"cached_tokens": u.Cached},
			"output_tokens":         u.Output,
			"output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
			"total_tokens":          u.Input + u.Output,
		},
	}}
}

// split cuts text into at most n pieces on rune boundaries (a delta must be
// valid UTF-8 on its own).
func split(text string, n int) []string {
	size := max(1, (utf8.RuneCountInString(text)+n-1)/n)
	var out []string
	for text != "" {
		i, runes := 0, 0
		for i < len(text) && runes < size {
			_, w := utf8.DecodeRuneInString(text[i:])
			i += w
			runes++
		}
		out = append(out, text[:i])
		text = text[i:]
	}
	return out
}

// withIDs returns ev with empty response, message and call ids replaced by
// ids derived from n, the 1-based position of the response in its script.
// Maps that change are copied; the caller's script is never modified.
func withIDs(ev map[string]any, n int) map[string]any {
	out := maps.Clone(ev)
	if r, ok := ev["response"].(map[string]any); ok && r["id"] == "" {
		r = maps.Clone(r)
		r["id"] = fmt.Sprintf("resp_%d", n)
		out["response"] = r
	}
	if it, ok := ev["item"].(map[string]any); ok {
		it = maps.Clone(it)
		if it["type"] == "message" && it["id"] == "" {
			it["id"] = fmt.Sprintf("msg_%d", n)
		}
		if it["type"] == "function_call" && it["call_id"] == "" {
			it["call_id"] = fmt.Sprintf("call_%d", n)
		}
		out["item"] = it
	}
	if ev["item_id"] == "" {
		out["item_id"] = fmt.Sprintf("msg_%d", n)
	}
	return out
}
