package fakeanthropic

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/sse"
)

// post sends body to path and returns the response.
func post(t *testing.T, s *Server, path, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// assemble rebuilds the message a stream carries the way a client does:
// blocks opened by content_block_start, grown by text_delta and
// input_json_delta, the stop reason from message_delta. It fails on an
// event out of order.
func assemble(t *testing.T, body io.Reader) (types []string, content []Block, stop string) {
	t.Helper()
	r := sse.NewReader(body)
	partial := map[int]string{}
	open := -1
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var data struct {
			Type         string          `json:"type"`
			Index        int             `json:"index"`
			ContentBlock Block           `json:"content_block"`
			Delta        json.RawMessage `json:"delta"`
		}
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatalf("event %q: %v", ev.Data, err)
		}
		if data.Type != ev.Type {
			t.Fatalf("event %q carries type %q", ev.Type, data.Type)
		}
		types = append(types, ev.Type)
		switch ev.Type {
		case "content_block_start":
			if open != -1 || data.Index != len(content) {
				t.Fatalf("content_block_start %d while %d is open, %d blocks done", data.Index, open, len(content))
			}
			open = data.Index
			content = append(content, data.ContentBlock)
		case "content_block_delta":
			var d struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			}
			if err := json.Unmarshal(data.Delta, &d); err != nil {
				t.Fatal(err)
			}
			if data.Index != open {
				t.Fatalf("delta for block %d while %d is open", data.Index, open)
			}
			switch b := &content[open]; d.Type {
			case "text_delta":
				b.Text += d.Text
			case "input_json_delta":
				partial[open] += d.PartialJSON
			default:
				t.Fatalf("delta type %q", d.Type)
			}
		case "content_block_stop":
			if data.Index != open {
				t.Fatalf("stop for block %d while %d is open", data.Index, open)
			}
			if content[open].Type == "tool_use" {
				content[open].Input = json.RawMessage(partial[open])
			}
			open = -1
		case "message_delta":
			var d struct {
				StopReason string `json:"stop_reason"`
			}
			json.Unmarshal(data.Delta, &d)
			stop = d.StopReason
		}
	}
	return types, content, stop
}

func TestStreamsToolUseAndText(t *testing.T) {
	var got MessagesRequest
	s, err := Start(func(req MessagesRequest) (Reply, error) {
		got = req
		return Call("Let me look — ünïcode.", "toolu_1", "lookup", json.RawMessage(`{"query": "where is Open", "n": 3}`)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp := post(t, s, "/v1/messages?beta=true", `{"model":"m","max_tokens":9,"stream":true,
		"messages":[{"role":"user","content":"hi"}],
		"tools":[{"name":"lookup","description":"d","input_schema":{"type":"object"}},{"name":"later","input_schema":{"type":"object"},"defer_loading":true}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	types, content, stop := assemble(t, resp.Body)
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(types, " ") != want {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(types, " "), want)
	}
	if len(content) != 2 || content[0].Text != "Let me look — ünïcode." || content[1].Type != "tool_use" || content[1].ID != "toolu_1" || content[1].Name != "lookup" {
		t.Fatalf("assembled %+v", content)
	}
	var input map[string]any
	if err := json.Unmarshal(content[1].Input, &input); err != nil || input["query"] != "where is Open" || input["n"] != 3.0 {
		t.Errorf("tool input reassembled from the deltas: %s (%v)", content[1].Input, err)
	}
	if stop != "tool_use" {
		t.Errorf("stop reason %q; want tool_use", stop)
	}
	if got.Model != "m" || got.MaxTokens != 9 || len(got.Messages) != 1 || got.Messages[0].Content[0].Text != "hi" {
		t.Errorf("the model got %+v", got)
	}
	if tool, ok := got.Tool("later"); !ok || !tool.DeferLoading {
		t.Errorf("deferred tool: %+v %t", tool, ok)
	}
}

func TestAnswersJSONWhenNotStreaming(t *testing.T) {
	s, err := Start(func(MessagesRequest) (Reply, error) { return Say("done"), nil })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp := post(t, s, "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)
	var msg struct {
		Type       string  `json:"type"`
		Role       string  `json:"role"`
		Content    []Block `json:"content"`
		StopReason string  `json:"stop_reason"`
		Usage      struct {
			Input  int `json:"input_tokens"`
			Output int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || msg.Type != "message" || msg.Role != "assistant" || len(msg.Content) != 1 ||
		msg.Content[0].Text != "done" || msg.StopReason != "end_turn" || msg.Usage.Input == 0 || msg.Usage.Output == 0 {
		t.Errorf("status %d, message %+v", resp.StatusCode, msg)
	}
}

func TestToolResult(t *testing.T) {
	var req MessagesRequest
	err := json.Unmarshal([]byte(`{"messages":[
		{"role":"user","content":"q"},
		{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"t","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"one"},{"type":"tool_reference","tool_name":"x"},{"type":"text","text":"two"}]}]}]}`), &req)
	if err != nil {
		t.Fatal(err)
	}
	res, ok := req.ToolResult("a")
	if !ok || res.ResultText() != "one\ntwo" || res.ResultBlocks()[1].ToolName != "x" {
		t.Errorf("ToolResult: %+v %t", res, ok)
	}
	if _, ok := req.ToolResult("b"); ok {
		t.Error("ToolResult found an id never answered")
	}
	var str Block
	json.Unmarshal([]byte(`{"type":"tool_result","tool_use_id":"a","content":"plain","is_error":true}`), &str)
	if str.ResultText() != "plain" || !str.IsError {
		t.Errorf("string content: %+v", str)
	}
}

func TestRefusesAndRecords(t *testing.T) {
	s, err := Start(func(req MessagesRequest) (Reply, error) {
		if len(req.Tools) == 0 {
			return Reply{}, errors.New("no tools offered")
		}
		return Reply{Content: []Block{{Type: "tool_use", ID: "x", Name: "t", Input: json.RawMessage(`[1]`)}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		path, body string
		status     int
		errType    string
	}{
		{"/v1/messages", `{"model":"m","messages":[]}`, 400, "invalid_request_error"},                          // the model's error
		{"/v1/messages", `{"model":"m","messages":[],"tools":[{"name":"t"}]}`, 400, "invalid_request_error"},   // a tool_use with a non-object input
		{"/v1/messages", `{"messages":[{"role":"user","content":7}]}`, 400, "invalid_request_error"},           // malformed
		{"/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"hello"}]}`, 200, ""}, // an estimate
		{"/api/event_logging/batch", `{}`, 404, "not_found_error"},
	} {
		resp := post(t, s, c.path, c.body)
		var e struct {
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
			InputTokens int `json:"input_tokens"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		if resp.StatusCode != c.status || e.Error.Type != c.errType || (c.status == 200 && e.InputTokens == 0) {
			t.Errorf("POST %s %s: %d %+v; want %d %q", c.path, c.body, resp.StatusCode, e, c.status, c.errType)
		}
	}
	if f := s.Failures(); len(f) != 3 || !strings.Contains(f[0].Error(), "no tools offered") {
		t.Errorf("failures: %v", f)
	}
	// A client whose HTTPS_PROXY is the fake: the CONNECT is refused and
	// recorded with where it wanted to go.
	proxy, _ := url.Parse(s.URL())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	if _, err := client.Get("https://example.invalid/"); err == nil {
		t.Error("a CONNECT through the fake succeeded")
	}
	reqs := s.Requests()
	if last := reqs[len(reqs)-1]; len(reqs) != 6 || last.Method != "CONNECT" || last.Path != "example.invalid:443" {
		t.Errorf("requests: %+v", reqs)
	}
}
