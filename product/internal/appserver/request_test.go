package appserver

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// approvalRun starts the workspace-write turn of patch_approval.jsonl and
// decline.jsonl (their first 9 lines are the same exchange).
func approvalRun(t *testing.T, h *harness) (string, *Turn) {
	t.Helper()
	ctx := testContext(t)
	th, err := h.c.StartThread(ctx, ThreadStartParams{Cwd: h.dir, Sandbox: "workspace-write", ApprovalPolicy: "on-request", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := h.c.StartTurn(ctx, TurnStartParams{
		ThreadID: th.ID, Input: []UserInput{TextInput(evidencePrompt)},
		SandboxPolicy:  map[string]any{"type": "workspaceWrite", "writableRoots": []string{h.dir}, "networkAccess": false},
		ApprovalPolicy: "untrusted",
	})
	if err != nil {
		t.Fatal(err)
	}
	return th.ID, turn
}

// decider answers every approval with one decision and records what it saw.
type decider struct {
	decision string
	mu       sync.Mutex
	seen     []string // method and itemId
}

func (d *decider) handle(_ context.Context, method string, params json.RawMessage) (any, *RPCError) {
	var p struct {
		ItemID string `json:"itemId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &RPCError{Code: -32602, Message: err.Error()}
	}
	d.mu.Lock()
	d.seen = append(d.seen, method+" "+p.ItemID)
	d.mu.Unlock()
	return map[string]string{"decision": d.decision}, nil
}

func (d *decider) requests() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.seen...)
}

func TestServerRequest_Handler(t *testing.T) {
	tests := []struct {
		name, transcript, decision, final string
		itemStatus                        string
	}{
		{"Accept", "patch_approval", "accept", "Done: added hello.txt", "completed"},
		{"Decline", "decline", "decline", "user declined", "declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &decider{decision: tt.decision}
			h := startPeer(t, loadFrozen(t, tt.transcript).all(), peerOptions{onRequest: d.handle})
			threadID, turn := approvalRun(t, h)
			res, err := turn.Wait(testContext(t))
			if err != nil {
				t.Fatal(err)
			}
			wantSeen := []string{"item/commandExecution/requestApproval call_cmd", "item/fileChange/requestApproval call_patch"}
			if diff := cmp.Diff(wantSeen, d.requests()); diff != "" {
				t.Errorf("requests seen (-want +got):\n%s", diff)
			}
			if res.FinalMessage != tt.final {
				t.Errorf("FinalMessage = %q, want %q", res.FinalMessage, tt.final)
			}
			for _, it := range res.Items {
				if (it.ID == "call_cmd" || it.ID == "call_patch") && (it.Status != tt.itemStatus || !it.Completed) {
					t.Errorf("item %s: status %q completed %v, want %q", it.ID, it.Status, it.Completed, tt.itemStatus)
				}
			}
			expectIncludeTurnsRefused(t, h.c, threadID)
		})
	}
}

func TestServerRequest_PatchDiff(t *testing.T) {
	h := startPeer(t, loadFrozen(t, "patch_approval").all(), peerOptions{onRequest: (&decider{decision: "accept"}).handle})
	threadID, turn := approvalRun(t, h)
	res, err := turn.Wait(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	const wantDiff = "diff --git a/hello.txt b/hello.txt\nnew file mode 100644\n" +
		"index 0000000000000000000000000000000000000000..c74de0800e5d166401e080402da5cf632f21be03\n" +
		"--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hello from patch worker\n"
	if res.Diff != wantDiff {
		t.Errorf("Diff = %q", res.Diff)
	}
	if res.Usage.TotalTokens != 2950 || h.c.ThreadUsage(threadID).TotalTokens != 2950 {
		t.Errorf("usage %+v", res.Usage)
	}
	expectIncludeTurnsRefused(t, h.c, threadID)
}

func TestServerRequest_DefaultMethodNotFound(t *testing.T) {
	// Without a handler every request, whatever its id type, is refused
	// with -32601 and its id echoed exactly; the peer checks the answers.
	pa := loadFrozen(t, "patch_approval")
	steps := join(pa.lines(1, 18), []step{
		c2s(`{"id":0,"error":{"code":-32601,"message":"method not found: item/commandExecution/requestApproval"}}`),
		s2c(`{"id":"req-α","method":"item/tool/requestUserInput","params":{"threadId":"x","questions":[]}}`),
		c2s(`{"id":"req-α","error":{"code":-32601,"message":"method not found: item/tool/requestUserInput"}}`),
	}, pa.lines(44, 45))
	h := startPeer(t, steps, peerOptions{})
	_, turn := approvalRun(t, h)
	if _, err := turn.Wait(testContext(t)); err != nil {
		t.Fatal(err)
	}
	// The peer exits cleanly at Close (checked by the harness) only if both
	// answers matched.
}
