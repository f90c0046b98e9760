package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/needle-dev/needle/product/internal/tomlstr"
)

// LoadScript reads a script from JSON, for scenarios kept as files:
//
//	{"responses": [
//	  {"message": {"text": "done", "usage": {"input": 1000, "cached": 200, "output": 50, "reasoning": 10},
//	               "id": "msg_1", "response_id": "resp_1"}},
//	  {"function_call": {"name": "exec_command", "arguments": {"cmd": "cat README", "yield_time_ms": 1000},
//	                     "call_id": "call_1", "response_id": "resp_2", "usage": {…}}},
//	  {"status": 500, "body": {"error": {"message": "boom", "type": "server_error"}}},
//	  {"events": [{"type": "response.created", "response": {"id": "r"}}, …]},
//	  {"message": {"text": "slow"}, "hold": true, "delay_ms": 5}
//	]}
//
// Each response has exactly one of message, function_call, status (with an
// optional body) or events, plus optional hold, delay_ms, match and
// measure_input (Response.MeasureInput). Ids may be
// omitted (Start derives them from the position). function_call arguments
// are the JSON-encoded argument string of the Responses API, or, for
// convenience, a JSON object that is encoded for you. Unknown keys are
// errors, so a typo cannot silently change a scenario.
func LoadScript(r io.Reader) (Script, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	dec.UseNumber() // keep event numbers exactly as written
	var doc struct {
		Responses []scriptResponse `json:"responses"`
	}
	if err := dec.Decode(&doc); err != nil {
		return Script{}, fmt.Errorf("fakemodel: script: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Script{}, errors.New("fakemodel: script: data after the top-level object")
	}
	if doc.Responses == nil {
		return Script{}, errors.New(`fakemodel: script: missing "responses"`)
	}
	var s Script
	for i, sr := range doc.Responses {
		resp, err := sr.response()
		if err != nil {
			return Script{}, fmt.Errorf("fakemodel: script: responses[%d]: %w", i, err)
		}
		s.Responses = append(s.Responses, resp)
	}
	return s, nil
}

type scriptResponse struct {
	Message      *scriptMessage   `json:"message"`
	FunctionCall *scriptCall      `json:"function_call"`
	Status       int              `json:"status"`
	Body         json.RawMessage  `json:"body"`
	Events       []map[string]any `json:"events"`
	Hold         bool             `json:"hold"`
	DelayMS      int64            `json:"delay_ms"`
	Match        []string         `json:"match"`
	MeasureInput bool             `json:"measure_input"`
}

type scriptMessage struct {
	Text       string `json:"text"`
	Usage      Usage  `json:"usage"`
	ID         string `json:"id"`
	ResponseID string `json:"response_id"`
}

type scriptCall struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	CallID     string          `json:"call_id"`
	ResponseID string          `json:"response_id"`
	Usage      Usage           `json:"usage"`
}

func (sr scriptResponse) response() (Response, error) {
	var kinds []string
	for name, set := range map[string]bool{
		"message": sr.Message != nil, "function_call": sr.FunctionCall != nil,
		"status": sr.Status != 0, "events": sr.Events != nil,
	} {
		if set {
			kinds = append(kinds, name)
		}
	}
	switch {
	case len(kinds) != 1:
		return Response{}, errors.New("need exactly one of message, function_call, status and events")
	case sr.Body != nil && sr.Status == 0:
		return Response{}, errors.New("body without status")
	case sr.Status == 200 || sr.Status < 0 || sr.Status > 599:
		return Response{}, fmt.Errorf("status %d: use a failure status, or events for a stream", sr.Status)
	case sr.DelayMS < 0:
		return Response{}, errors.New("negative delay_ms")
	}
	var resp Response
	switch {
	case sr.Message != nil:
		m := sr.Message
		resp = Message(m.ResponseID, m.ID, m.Text, m.Usage)
	case sr.FunctionCall != nil:
		c := sr.FunctionCall
		args, err := arguments(c.Arguments)
		if err != nil {
			return Response{}, err
		}
		if c.Name == "" {
			return Response{}, errors.New("function_call without name")
		}
		resp = FunctionCall(c.ResponseID, c.CallID, c.Name, args, c.Usage)
	case sr.Status != 0:
		resp = Response{Status: sr.Status}
		if sr.Body != nil {
			resp.Body = sr.Body
		}
	default:
		resp = Response{Events: sr.Events}
	}
	resp.Hold = sr.Hold
	resp.Delay = time.Duration(sr.DelayMS) * time.Millisecond
	resp.Match = sr.Match
	resp.MeasureInput = sr.MeasureInput
	return resp, nil
}

// arguments returns the argument string of a function call: a JSON string
// as is, any other JSON value encoded compactly, nothing as "{}".
func arguments(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "{}", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// ConfigTOML returns the CODEX_HOME/config.toml that points codex at a fake
// model served at baseURL (codex reads its model provider from there):
// model "mock-model" from the
// provider mock_provider over the Responses wire API, with retries off (a
// scripted failure must fail the turn, not be retried into the next
// scripted response), no websockets, and no remote model metadata fetch.
func ConfigTOML(baseURL string) string {
	return `model = "mock-model"
model_provider = "mock_provider"

[features]
remote_models = false

[model_providers.mock_provider]
name = "Mock provider (loopback)"
base_url = ` + tomlstr.Quote(baseURL) + `
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false
`
}
