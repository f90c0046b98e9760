package appserver

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClient_Steer(t *testing.T) {
	h := startPeer(t, loadFrozen(t, "steer").all(), peerOptions{})
	ctx := testContext(t)
	th, err := h.c.StartThread(ctx, readOnlyThread(h.dir))
	if err != nil {
		t.Fatal(err)
	}
	turn, err := h.c.StartTurn(ctx, readOnlyTurn(th.ID))
	if err != nil {
		t.Fatal(err)
	}
	// Steerable: SteerOrStart waits for turn/started, then steers.
	in := []UserInput{TextInput("Context update: also check LICENSE.")}
	got, steered, err := h.c.SteerOrStart(ctx, th.ID, turn, in, TurnStartParams{})
	if err != nil || got != turn || !steered {
		t.Fatalf("SteerOrStart = %v, %v, %v; want the active turn, steered", got, steered, err)
	}
	_, err = h.c.Steer(ctx, th.ID, "wrong-turn-id", []UserInput{TextInput("mismatched")})
	var mismatch *TurnMismatchError
	if !errors.As(err, &mismatch) {
		t.Fatalf("wrong-turn steer: got %v, want *TurnMismatchError", err)
	}
	if diff := cmp.Diff(&TurnMismatchError{Expected: "wrong-turn-id", Actual: turn.ID()}, mismatch); diff != "" {
		t.Errorf("mismatch error (-want +got):\n%s", diff)
	}
	// turn/start while active is merged: same id, same *Turn.
	merged, err := h.c.StartTurn(ctx, TurnStartParams{ThreadID: th.ID, Input: []UserInput{TextInput("turn/start while active")}})
	if err != nil || merged != turn {
		t.Fatalf("StartTurn while active = %v, %v; want the active turn", merged, err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalMessage != "Saw both steer inputs; done." || res.Usage.TotalTokens != 812 {
		t.Errorf("final %q, usage %+v", res.FinalMessage, res.Usage)
	}
	// msg_1's stream was pre-empted by the steer: started, never completed.
	wantItems := []itemView{
		{"01a228b9-4ca7-7290-96ff-40e2a750810c", "userMessage", "", true},
		{"msg_1", "agentMessage", "", false},
		{"01a228b9-5281-7f53-b3f5-0afc3239c324", "userMessage", "", true},
		{"01a228b9-52a9-7ea0-9f1f-c94435e069f6", "userMessage", "", true},
		{"msg_3", "agentMessage", "", true},
	}
	if diff := cmp.Diff(wantItems, viewItems(res.Items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	expectIncludeTurnsRefused(t, h.c, th.ID)
}

// compactSession plays not_steerable.jsonl up to the compaction turn's
// start and returns the thread and the compaction turn. The recording's
// initialize (title null, no capabilities) is replaced by this client's.
func compactSession(t *testing.T, rest []step) (*harness, string, *Turn) {
	t.Helper()
	ns := loadFrozen(t, "not_steerable")
	turnStarted := make(chan string, 4)
	onNote := func(method string, params json.RawMessage) {
		if method == "turn/started" {
			var p struct {
				Turn struct{ ID string } `json:"turn"`
			}
			_ = json.Unmarshal(params, &p)
			turnStarted <- p.Turn.ID
		}
	}
	steps := join(loadFrozen(t, "evidence").lines(1, 1), ns.lines(2, 32), rest)
	h := startPeer(t, steps, peerOptions{onNote: onNote})
	ctx := testContext(t)
	th, err := h.c.StartThread(ctx, readOnlyThread(h.dir))
	if err != nil {
		t.Fatal(err)
	}
	first, err := h.c.StartTurn(ctx, TurnStartParams{ThreadID: th.ID, Input: []UserInput{TextInput("first")}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := first.Wait(ctx); err != nil || res.FinalMessage != "first turn answer" || res.Usage.TotalTokens != 105 {
		t.Fatalf("first turn: %+v, %v", res, err)
	}
	<-turnStarted // the first turn's
	if err := h.c.Call(ctx, "thread/compact/start", map[string]string{"threadId": th.ID}, nil); err != nil {
		t.Fatal(err)
	}
	<-turnStarted
	compact := h.c.ActiveTurn(th.ID)
	if compact == nil || compact == first {
		t.Fatalf("compaction turn not tracked as active: %v", compact)
	}
	return h, th.ID, compact
}

func wantNotSteerable(t *testing.T, what string, err error) {
	t.Helper()
	var ns *NotSteerableError
	if !errors.As(err, &ns) || ns.TurnKind != "compact" {
		t.Errorf("%s: got %v, want *NotSteerableError{compact}", what, err)
	}
}

func TestClient_NotSteerable(t *testing.T) {
	ns := loadFrozen(t, "not_steerable")
	h, threadID, compact := compactSession(t, ns.lines(33, ns.last()))
	ctx := testContext(t)
	_, err := h.c.Steer(ctx, threadID, compact.ID(), []UserInput{TextInput("steer into compact")})
	wantNotSteerable(t, "turn/steer", err)
	_, err = h.c.StartTurn(ctx, TurnStartParams{ThreadID: threadID, Input: []UserInput{TextInput("turn/start during compact")}})
	wantNotSteerable(t, "turn/start", err)
	res, err := compact.Wait(ctx)
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("compaction: %+v, %v", res, err)
	}
	// The compaction re-sent the previous total (105) and then 414 twice.
	if res.Usage.TotalTokens != 414-105 || h.c.ThreadUsage(threadID).TotalTokens != 414 {
		t.Errorf("compaction usage %+v, thread usage %+v", res.Usage, h.c.ThreadUsage(threadID))
	}
}

func TestClient_SteerOrStartAfterCompaction(t *testing.T) {
	ns := loadFrozen(t, "not_steerable")
	const thread = "01a228ba-c7f8-72d2-8bc6-279e475fad7f"
	next := []step{
		c2s(`{"method":"turn/start","id":5,"params":{"threadId":"` + thread + `","input":[{"type":"text","text":"after compact","text_elements":[]}]}}`),
		s2c(`{"id":5,"result":{"turn":{"id":"turn-3","items":[],"status":"inProgress","error":null}}}`),
		s2c(`{"method":"turn/started","params":{"threadId":"` + thread + `","turn":{"id":"turn-3","items":[],"status":"inProgress"}}}`),
		s2c(`{"method":"item/started","params":{"threadId":"` + thread + `","turnId":"turn-3","item":{"type":"agentMessage","id":"m3","text":""}}}`),
		s2c(`{"method":"item/completed","params":{"threadId":"` + thread + `","turnId":"turn-3","item":{"type":"agentMessage","id":"m3","text":"third turn answer"}}}`),
		s2c(`{"method":"thread/tokenUsage/updated","params":{"threadId":"` + thread + `","turnId":"turn-3","tokenUsage":{"total":{"totalTokens":500,"inputTokens":480,"cachedInputTokens":0,"outputTokens":20,"reasoningOutputTokens":0}}}}`),
		s2c(`{"method":"turn/completed","params":{"threadId":"` + thread + `","turn":{"id":"turn-3","items":[],"status":"completed","error":null,"durationMs":5}}}`),
	}
	// The steer is refused (line 34); the compaction then finishes (37-43)
	// and only then may the client start the new turn.
	steer := replaceText(ns.line(33), "steer into compact", "after compact")
	h, threadID, compact := compactSession(t, join([]step{steer}, ns.lines(34, 34), ns.lines(37, 43), next))
	ctx := testContext(t)
	turn, steered, err := h.c.SteerOrStart(ctx, threadID, compact, []UserInput{TextInput("after compact")}, TurnStartParams{})
	if err != nil || steered || turn.ID() != "turn-3" {
		t.Fatalf("SteerOrStart = %v, %v, %v; want a new turn-3", turn, steered, err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.FinalMessage != "third turn answer" || res.Usage.TotalTokens != 500-414 {
		t.Errorf("new turn: %+v, %v", res, err)
	}
}

func TestSteerError(t *testing.T) {
	compactData := json.RawMessage(`{"message":"cannot steer a compact turn","codexErrorInfo":{"activeTurnNotSteerable":{"turnKind":"compact"}},"additionalDetails":null,"misalignment":null}`)
	other := &RPCError{Code: CodeInvalidRequest, Message: "unknown variant `x`", Data: json.RawMessage(`{"codexErrorInfo":"other"}`)}
	tests := []struct {
		name string
		in   error
		want error
	}{
		{"NoActiveTurn", &RPCError{Code: CodeInvalidRequest, Message: "no active turn to steer"}, ErrNoActiveTurn},
		{"Mismatch", &RPCError{Code: CodeInvalidRequest, Message: "expected active turn id `a` but found `b`"}, &TurnMismatchError{"a", "b"}},
		{"NotSteerable", &RPCError{Code: CodeInvalidRequest, Message: "cannot steer a compact turn", Data: compactData}, &NotSteerableError{"compact"}},
		{"Other", other, other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, steerError(tt.in), cmp.Comparer(func(a, b error) bool { return a.Error() == b.Error() })); diff != "" {
				t.Errorf("steerError (-want +got):\n%s", diff)
			}
		})
	}
	start := &RPCError{Code: CodeInternalError, Message: "failed to submit turn input: ActiveTurnNotSteerable { turn_kind: Review }"}
	if diff := cmp.Diff(&NotSteerableError{"review"}, startError(start)); diff != "" {
		t.Errorf("startError (-want +got):\n%s", diff)
	}
}
