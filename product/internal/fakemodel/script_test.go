package fakemodel

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/needle-dev/needle/product/internal/tomlstr"
)

func TestLoadScript(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		s, err := LoadScript(strings.NewReader(`{"responses": [
			{"message": {"text": "done", "usage": {"input": 10, "cached": 2, "output": 5, "reasoning": 1}, "id": "msg_x", "response_id": "resp_x"}},
			{"function_call": {"name": "exec_command", "arguments": {"cmd": "cat README", "yield_time_ms": 1000}}},
			{"function_call": {"name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "call_id": "c"}},
			{"status": 500, "body": {"error": {"message": "boom"}}},
			{"events": [{"type": "response.created", "response": {"id": "r", "n": 12345678901234567890}}], "hold": true, "delay_ms": 5}
		]}`))
		if err != nil {
			t.Fatal(err)
		}
		want := []Response{
			Message("resp_x", "msg_x", "done", Usage{Input: 10, Cached: 2, Output: 5, Reasoning: 1}),
			FunctionCall("", "", "exec_command", `{"cmd":"cat README","yield_time_ms":1000}`, Usage{}),
			FunctionCall("", "c", "exec_command", `{"cmd":"ls"}`, Usage{}),
			{Status: 500, Body: json.RawMessage(`{"error": {"message": "boom"}}`)},
			{Events: []map[string]any{{"type": "response.created", "response": map[string]any{"id": "r", "n": json.Number("12345678901234567890")}}},
				Hold: true, Delay: 5 * time.Millisecond},
		}
		if diff := cmp.Diff(want, s.Responses); diff != "" {
			t.Errorf("script (-want +got):\n%s", diff)
		}
	})
	t.Run("Serves", func(t *testing.T) {
		s, err := LoadScript(strings.NewReader(`{"responses":[{"events":[{"type":"x","n":12345678901234567890}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		srv := MustStart(t, s)
		_, body := post(t, context.Background(), srv.URL()+"/responses", `{}`)
		if want := "event: x\ndata: {\"n\":12345678901234567890,\"type\":\"x\"}\n\n"; body != want {
			t.Errorf("body %q, want %q", body, want)
		}
	})
	for name, in := range map[string]string{
		"ErrNotJSON":        `responses`,
		"ErrNoResponses":    `{}`,
		"ErrUnknownKey":     `{"responses":[{"message":{"text":"a","txet":"b"}}]}`,
		"ErrUnknownTopKey":  `{"responses":[],"extra":1}`,
		"ErrTwoKinds":       `{"responses":[{"message":{"text":"a"},"status":500}]}`,
		"ErrNoKind":         `{"responses":[{"hold":true}]}`,
		"ErrStatus200":      `{"responses":[{"status":200}]}`,
		"ErrStatusRange":    `{"responses":[{"status":700}]}`,
		"ErrBodyNoStatus":   `{"responses":[{"message":{"text":"a"},"body":{}}]}`,
		"ErrNegativeDelay":  `{"responses":[{"message":{"text":"a"},"delay_ms":-1}]}`,
		"ErrCallNoName":     `{"responses":[{"function_call":{"arguments":"{}"}}]}`,
		"ErrTrailingData":   `{"responses":[]} {}`,
		"ErrUsageType":      `{"responses":[{"message":{"text":"a","usage":{"input":"many"}}}]}`,
		"ErrEventsNotArray": `{"responses":[{"events":{}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := LoadScript(strings.NewReader(in)); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestConfigTOML(t *testing.T) {
	want := `model = "mock-model"
model_provider = "mock_provider"

[features]
remote_models = false

[model_providers.mock_provider]
name = "Mock provider (loopback)"
base_url = "http://127.0.0.1:4242/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false
`
	if diff := cmp.Diff(want, ConfigTOML("http://127.0.0.1:4242/v1")); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if got := tomlstr.Quote("a\"b\\c\n"); got != `"a\"b\\c\u000A"` {
		t.Errorf("tomlString = %s", got)
	}
}

func TestMessageThenCall(t *testing.T) {
	r := MessageThenCall("", "", "let me look", "", "exec_command", `{"cmd":"ls"}`, Usage{Input: 10, Output: 2})
	var types []string
	for _, ev := range r.Events {
		types = append(types, ev["type"].(string))
	}
	want := "response.created response.output_item.added response.output_text.delta response.output_text.delta " +
		"response.output_text.delta response.output_item.done response.output_item.done response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events %s", got)
	}
	if it := r.Events[len(r.Events)-2]["item"].(map[string]any); it["type"] != "function_call" || it["name"] != "exec_command" {
		t.Errorf("last item %v", it)
	}
}
