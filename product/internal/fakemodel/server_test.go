package fakemodel

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// safety bounds waits that are expected to end at once.
const safety = 20 * time.Second

// MustStart starts a server that is closed when the test ends.
func MustStart(tb testing.TB, s Script) *Server {
	tb.Helper()
	srv, err := Start(s)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	return srv
}

// post sends a Responses request the way codex does (with a key that must
// never be recorded) and returns the response with its body read.
func post(tb testing.TB, ctx context.Context, url, body string) (*http.Response, string) {
	tb.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk-secret")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp, string(b)
}

func TestServer_Message(t *testing.T) {
	srv := MustStart(t, Script{Responses: []Response{
		Message("resp_a", "msg_a", "Hi <you>, ok", Usage{Input: 1000, Cached: 200, Output: 50, Reasoning: 10}),
	}})
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") || !strings.HasSuffix(srv.URL(), "/v1") {
		t.Fatalf("URL = %s", srv.URL())
	}
	resp, body := post(t, context.Background(), srv.URL()+"/responses", `{"model":"mock-model","input":[]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	want := `event: response.created
data: {"response":{"id":"resp_a"},"type":"response.created"}

event: response.output_item.added
data: {"item":{"content":[],"id":"msg_a","role":"assistant","type":"message"},"type":"response.output_item.added"}

event: response.output_text.delta
data: {"content_index":0,"delta":"Hi <","item_id":"msg_a","output_index":0,"type":"response.output_text.delta"}

event: response.output_text.delta
data: {"content_index":0,"delta":"you>","item_id":"msg_a","output_index":0,"type":"response.output_text.delta"}

event: response.output_text.delta
data: {"content_index":0,"delta":", ok","item_id":"msg_a","output_index":0,"type":"response.output_text.delta"}

event: response.output_item.done
data: {"item":{"content":[{"text":"Hi <you>, ok","type":"output_text"}],"id":"msg_a","role":"assistant","type":"message"},"type":"response.output_item.done"}

event: response.completed
data: {"response":{"id":"resp_a","usage":{"input_tokens":1000,"input_tokens_details":{"cached_tokens":200},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":1050}},"type":"response.completed"}

`
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("SSE body (-want +got):\n%s", diff)
	}
	wantReqs := []Request{{Method: "POST", Path: "/v1/responses", Body: json.RawMessage(`{"model":"mock-model","input":[]}`)}}
	if diff := cmp.Diff(wantReqs, srv.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// events parses an SSE body into its data objects, checking that every
// event's name is its type.
func events(tb testing.TB, body string) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(block, "\ndata: ")
		if !ok || !strings.HasPrefix(name, "event: ") {
			tb.Fatalf("bad SSE block %q", block)
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			tb.Fatal(err)
		}
		if ev["type"] != strings.TrimPrefix(name, "event: ") {
			tb.Fatalf("event name %q, type %v", name, ev["type"])
		}
		out = append(out, ev)
	}
	return out
}

func TestServer_FunctionCallAndDerivedIDs(t *testing.T) {
	srv := MustStart(t, Script{Responses: []Response{
		FunctionCall("", "", "exec_command", `{"cmd":"cat README","workdir":"/w","yield_time_ms":1000}`, Usage{Input: 7, Output: 3}),
		Message("", "", "é", Usage{}),
	}})
	_, body := post(t, context.Background(), srv.URL()+"/responses", `{}`)
	evs := events(t, body)
	wantItem := map[string]any{"type": "function_call", "call_id": "call_1", "name": "exec_command",
		"arguments": `{"cmd":"cat README","workdir":"/w","yield_time_ms":1000}`}
	if len(evs) != 3 || evs[0]["response"].(map[string]any)["id"] != "resp_1" {
		t.Fatalf("events %v", evs)
	}
	if diff := cmp.Diff(wantItem, evs[1]["item"]); diff != "" {
		t.Errorf("function call item (-want +got):\n%s", diff)
	}
	usage := evs[2]["response"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"] != 7.0 || usage["output_tokens"] != 3.0 || usage["total_tokens"] != 10.0 {
		t.Errorf("usage %v", usage)
	}
	_, body = post(t, context.Background(), srv.URL()+"/responses", `{}`)
	evs = events(t, body)
	if evs[0]["response"].(map[string]any)["id"] != "resp_2" || evs[2]["item_id"] != "msg_2" || evs[2]["delta"] != "é" {
		t.Errorf("second response ids: %v", evs)
	}
}

func TestServer_Failures(t *testing.T) {
	srv := MustStart(t, Script{Responses: []Response{
		{Status: 400, Body: map[string]any{"error": map[string]any{"message": "bad request", "type": "invalid_request_error"}}},
	}})
	resp, body := post(t, context.Background(), srv.URL()+"/responses", `{}`)
	if resp.StatusCode != 400 || body != `{"error":{"message":"bad request","type":"invalid_request_error"}}` {
		t.Errorf("scripted failure: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, context.Background(), srv.URL()+"/responses", `not json`)
	if resp.StatusCode != 500 || body != exhausted {
		t.Errorf("exhausted script: %d %s", resp.StatusCode, body)
	}
	resp, _ = post(t, context.Background(), srv.URL()+"/chat/completions", `{}`)
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	get, err := http.Get(srv.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(get.Body)
	get.Body.Close()
	if get.StatusCode != 200 || string(b) != `{"models":[]}` {
		t.Errorf("models: %d %s", get.StatusCode, b)
	}
	want := []Request{
		{Method: "POST", Path: "/v1/responses", Body: json.RawMessage(`{}`)},
		{Method: "POST", Path: "/v1/responses", Body: json.RawMessage(`"not json"`)},
		{Method: "POST", Path: "/v1/chat/completions", Body: json.RawMessage(`{}`)},
		{Method: "GET", Path: "/v1/models"},
	}
	if diff := cmp.Diff(want, srv.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), "sk-secret") {
			t.Error("credential recorded")
		}
	}
}

// waitHolding waits until a handler has started to hold its response.
func waitHolding(tb testing.TB, srv *Server) {
	tb.Helper()
	select {
	case <-srv.holding:
	case <-time.After(safety):
		tb.Fatal("no response is being held")
	}
}

func TestServer_HoldRelease(t *testing.T) {
	srv := MustStart(t, Script{Responses: []Response{
		{Hold: true, Delay: time.Millisecond, Events: Message("r", "m", "held text", Usage{}).Events},
		{Hold: true, Status: 503, Body: map[string]any{"error": "busy"}},
	}})
	got := make(chan string, 1)
	go func() {
		_, body := post(t, context.Background(), srv.URL()+"/responses", `{}`)
		got <- body
	}()
	waitHolding(t, srv)
	srv.Release()
	select {
	case body := <-got:
		if evs := events(t, body); len(evs) != 7 {
			t.Errorf("%d events after release, want 7", len(evs))
		}
	case <-time.After(safety):
		t.Fatal("released response did not complete")
	}
	// Release also covers responses requested later.
	resp, body := post(t, context.Background(), srv.URL()+"/responses", `{}`)
	if resp.StatusCode != 503 || body != `{"error":"busy"}` {
		t.Errorf("held failure after release: %d %s", resp.StatusCode, body)
	}
}

func TestServer_HoldEndsWithClient(t *testing.T) {
	srv := MustStart(t, Script{Responses: []Response{
		{Hold: true, Events: Message("r1", "m1", "never sent", Usage{}).Events},
		Message("r2", "m2", "next", Usage{}),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/responses", strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	waitHolding(t, srv)
	cancel() // codex gives up on the stream, e.g. on turn/interrupt
	resp.Body.Close()
	idle := make(chan struct{})
	go func() { srv.handlers.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-time.After(safety):
		t.Fatal("held handler still running after the client left")
	}
	_, body := post(t, context.Background(), srv.URL()+"/responses", `{}`)
	if evs := events(t, body); evs[0]["response"].(map[string]any)["id"] != "r2" {
		t.Errorf("after an abandoned hold the script did not move on: %v", evs[0])
	}
}

func TestServer_CloseEndsHold(t *testing.T) {
	srv, err := Start(Script{Responses: []Response{{Hold: true, Events: Message("r", "m", "x", Usage{}).Events}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(srv.URL()+"/responses", "application/json", strings.NewReader(`{}`))
		if err == nil {
			bufio.NewReader(resp.Body).ReadString('\n') // ends when the server closes
			resp.Body.Close()
		}
	}()
	waitHolding(t, srv)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestStart_Errors(t *testing.T) {
	for name, r := range map[string]Response{
		"NoType":     {Events: []map[string]any{{"response": map[string]any{}}}},
		"Status":     {Status: 1000},
		"Unencoding": {Events: []map[string]any{{"type": "x", "bad": func() {}}}},
		"Delay":      {Delay: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if srv, err := Start(Script{Responses: []Response{r}}); err == nil {
				srv.Close()
				t.Fatal("no error")
			}
		})
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"ab", []string{"a", "b"}},
		{"abcdefg", []string{"abc", "def", "g"}},
		{"héllo", []string{"hé", "ll", "o"}},
	} {
		if diff := cmp.Diff(tc.want, split(tc.in, 3)); diff != "" {
			t.Errorf("split(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestServer_Keyed: keyed responses answer the requests that contain their
// strings, in script order among themselves; unkeyed ones answer the rest
// in order; a request nothing answers gets the exhausted error.
func TestServer_Keyed(t *testing.T) {
	keyed := func(text string, match ...string) Response {
		r := Message("", "", text, Usage{})
		r.Match = match
		return r
	}
	srv := MustStart(t, Script{Responses: []Response{
		keyed("tests-1", "need-A", "Propose focused_tests"),
		keyed("impl-1", "need-A", "Propose implementation_location"),
		keyed("impl-2", "need-A", "Propose implementation_location"),
		Message("", "", "plain", Usage{}),
	}})
	ask := func(body string) string {
		t.Helper()
		_, out := post(t, context.Background(), srv.URL()+"/responses", body)
		for _, want := range []string{"tests-1", "impl-1", "impl-2", "plain"} {
			if strings.Contains(out, `"text":"`+want+`"`) {
				return want
			}
		}
		return out
	}
	for _, step := range []struct{ body, want string }{
		{`{"input":"need-A: Propose implementation_location evidence"}`, "impl-1"},
		{`{"input":"need-B: Propose implementation_location evidence"}`, "plain"},
		{`{"input":"need-A: Propose implementation_location evidence, then Propose focused_tests"}`, "tests-1"},
		{`{"input":"need-A: Propose implementation_location evidence"}`, "impl-2"},
	} {
		if got := ask(step.body); got != step.want {
			t.Errorf("request %s answered %q, want %q", step.body, got, step.want)
		}
	}
	if resp, _ := post(t, context.Background(), srv.URL()+"/responses", `{"input":"need-A: Propose implementation_location"}`); resp.StatusCode != 500 {
		t.Errorf("an exhausted script answered %d", resp.StatusCode)
	}
}

// TestServer_Read: a response reads its values from the request it
// answers (here a tool's output naming an id), and a request that holds
// nothing it reads fails rather than go on without the value.
func TestServer_Read(t *testing.T) {
	call := FunctionCall("", "call_2", "verify", `{"id":"$ID"}`, Usage{})
	call.Read = map[string]string{"$ID": `chg_[0-9a-f]{4}`}
	srv := MustStart(t, Script{Responses: []Response{call, call}})
	resp, out := post(t, context.Background(), srv.URL()+"/responses",
		`{"input":[{"type":"function_call_output","call_id":"call_1","output":"change chg_0a1f: prepared"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(out, `\"id\":\"chg_0a1f\"`) || strings.Contains(out, "$ID") {
		t.Errorf("the call did not read the id from the request: %d\n%s", resp.StatusCode, out)
	}
	resp, out = post(t, context.Background(), srv.URL()+"/responses", `{"input":"no id here"}`)
	if resp.StatusCode != 500 || !strings.Contains(out, "holds nothing that $ID reads") {
		t.Errorf("a request without the value answered %d: %s", resp.StatusCode, out)
	}
	if _, err := Start(Script{Responses: []Response{{Events: call.Events, Read: map[string]string{"$X": "("}}}}); err == nil {
		t.Error("Start accepted a Read expression that does not compile")
	}
}

func TestServer_MeasureInput(t *testing.T) {
	msg := Message("", "", "ok", Usage{Input: 999999, Cached: 500000, Output: 7})
	msg.MeasureInput = true
	srv := MustStart(t, Script{Responses: []Response{msg, msg}})
	for _, body := range []string{`{"input":"short"}`, `{"input":"` + strings.Repeat("x", 4001) + `"}`} {
		resp, out := post(t, context.Background(), srv.URL()+"/responses", body)
		want := int64((len(body) + 3) / 4) // ceil(bytes / 4), independently of the server
		var usage struct {
			Input   int64 `json:"input_tokens"`
			Total   int64 `json:"total_tokens"`
			Output  int64 `json:"output_tokens"`
			Details struct {
				Cached int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		}
		_, data, _ := strings.Cut(out, "event: response.completed\ndata: ")
		data, _, _ = strings.Cut(data, "\n")
		var doc struct {
			Response struct {
				Usage json.RawMessage `json:"usage"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(data), &doc); err != nil || json.Unmarshal(doc.Response.Usage, &usage) != nil {
			t.Fatalf("%d: no usage in %s (%v)", resp.StatusCode, out, err)
		}
		if usage.Input != want || usage.Output != 7 || usage.Total != want+7 || usage.Details.Cached > want {
			t.Errorf("body of %d bytes: usage %+v, want input %d", len(body), usage, want)
		}
	}
}
