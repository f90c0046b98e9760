package appserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const evidenceAnswer = `{"answer": "README.txt says disposable checkout", "files": ["README.txt"]}`

// runEvidence drives the client through evidence.jsonl and returns the turn.
func runEvidence(t *testing.T, h *harness) (Thread, TurnResult) {
	t.Helper()
	ctx := testContext(t)
	th, err := h.c.StartThread(ctx, readOnlyThread(h.dir))
	if err != nil {
		t.Fatalf("StartThread: %v\n%s", err, h.stderr)
	}
	p := readOnlyTurn(th.ID)
	p.OutputSchema = evidenceSchema
	turn, err := h.c.StartTurn(ctx, p)
	if err != nil {
		t.Fatalf("StartTurn: %v\n%s", err, h.stderr)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v\n%s", err, h.stderr)
	}
	expectIncludeTurnsRefused(t, h.c, th.ID)
	return th, res
}

// duplicateUsage re-sends every thread/tokenUsage/updated, as the server
// sometimes does.
func duplicateUsage(steps []step) []step {
	var out []step
	for _, st := range steps {
		out = append(out, st)
		if strings.Contains(string(st.Msg), `"thread/tokenUsage/updated"`) {
			out = append(out, st)
		}
	}
	return out
}

func TestTurn_Evidence(t *testing.T) {
	ev := loadFrozen(t, "evidence")
	h := startPeer(t, duplicateUsage(ev.all()), peerOptions{})
	th, res := runEvidence(t, h)
	if th.ID != "01a228b8-add6-7453-a2c3-aa6627e3c286" || th.Model != "mock-model" || th.ModelProvider != "mock_provider" {
		t.Errorf("thread = %+v", th)
	}
	var answer struct {
		Answer string   `json:"answer"`
		Files  []string `json:"files"`
	}
	if res.FinalMessage != evidenceAnswer || json.Unmarshal([]byte(res.FinalMessage), &answer) != nil {
		t.Errorf("FinalMessage = %q, want the structured answer", res.FinalMessage)
	}
	wantItems := []itemView{
		{"01a228b8-b05b-7d63-9af2-a8162f1c068d", "userMessage", "", true},
		{"call_1", "commandExecution", "completed", true},
		{"msg_1", "agentMessage", "", true},
	}
	if diff := cmp.Diff(wantItems, viewItems(res.Items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	// Each total is sent twice; the second copy must add nothing.
	wantUsage := Usage{TotalTokens: 2290, InputTokens: 2200, CachedInputTokens: 1200, OutputTokens: 90, ReasoningOutputTokens: 15}
	if diff := cmp.Diff(wantUsage, res.Usage); diff != "" {
		t.Errorf("turn usage (-want +got):\n%s", diff)
	}
	if got := h.c.ThreadUsage(th.ID); got != wantUsage {
		t.Errorf("ThreadUsage = %+v, want %+v", got, wantUsage)
	}
	if res.Status != StatusCompleted || res.DurationMs != 1153 || res.Error != nil {
		t.Errorf("status %q, duration %d, error %v", res.Status, res.DurationMs, res.Error)
	}
	if a := h.c.ActiveTurn(th.ID); a != nil {
		t.Errorf("ActiveTurn after turn/completed = %s", a.ID())
	}
}

func TestTurn_OrphanItem(t *testing.T) {
	// Without msg_1's item/completed (line 27) the agent message is an
	// orphan: its text is what the deltas built, and the final message comes
	// from turn/completed's summary.
	ev := loadFrozen(t, "evidence")
	h := startPeer(t, join(ev.lines(1, 26), ev.lines(28, ev.last())), peerOptions{})
	_, res := runEvidence(t, h)
	msg := res.Items[len(res.Items)-1]
	if msg.ID != "msg_1" || msg.Completed || msg.Text != evidenceAnswer {
		t.Errorf("orphan = %+v, want msg_1 open with the deltas' text", msg)
	}
	if res.FinalMessage != evidenceAnswer {
		t.Errorf("FinalMessage = %q, want the summary's text", res.FinalMessage)
	}
}

func TestTurn_Interrupt(t *testing.T) {
	h := startPeer(t, loadFrozen(t, "interrupt").all(), peerOptions{})
	ctx := testContext(t)
	th, err := h.c.StartThread(ctx, readOnlyThread(h.dir))
	if err != nil {
		t.Fatal(err)
	}
	turn, err := h.c.StartTurn(ctx, readOnlyTurn(th.ID))
	if err != nil {
		t.Fatal(err)
	}
	<-turn.Started()
	if err := h.c.Interrupt(ctx, th.ID, turn.ID()); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusInterrupted || res.FinalMessage != "" || len(res.Items) != 1 {
		t.Errorf("result = %+v, want interrupted with only the user message", res)
	}
	expectIncludeTurnsRefused(t, h.c, th.ID)
}

func TestTurn_Failed(t *testing.T) {
	h := startPeer(t, loadFrozen(t, "failed").all(), peerOptions{})
	ctx := testContext(t)
	th, err := h.c.StartThread(ctx, readOnlyThread(h.dir))
	if err != nil {
		t.Fatal(err)
	}
	turn, err := h.c.StartTurn(ctx, readOnlyTurn(th.ID))
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := &TurnError{
		Message:        `{"error": {"message": "mock: bad request for test", "type": "invalid_request_error", "code": "bad_request"}}`,
		CodexErrorInfo: json.RawMessage(`"other"`),
	}
	if res.Status != StatusFailed {
		t.Errorf("status = %q, want failed", res.Status)
	}
	if diff := cmp.Diff(want, res.Error); diff != "" {
		t.Errorf("turn error (-want +got):\n%s", diff)
	}
	expectIncludeTurnsRefused(t, h.c, th.ID)
}
