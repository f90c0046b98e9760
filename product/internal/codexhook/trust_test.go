package codexhook

import "testing"

// The expected values come from codex 0.171.0 itself: the first is the
// currentHash `hooks/list` reported for a hooks file holding exactly that
// handler, the second the trusted_hash under which `codex exec` ran it.
// TestContractTrustHash checks harder commands live.
func TestTrustHash_Observed(t *testing.T) {
	for _, tc := range []struct {
		h    Handler
		want string
	}{
		{Handler{Command: "/tmp/hx/hook.sh", Timeout: 30}, "sha256:06f97df064c2e594e7e7f6a6aff9af8b6087dd7f7f9df9102803610b5154aceb"},
		{Handler{Command: "/tmp/hx/hook.sh", Timeout: 1}, "sha256:e602bd6468d838f8a3d0fb63c70295614dae90959271fecf6f1821a0a8e72aba"},
	} {
		if got := TrustHash(EventStop, nil, tc.h); got != tc.want {
			t.Errorf("TrustHash(%+v) = %s, want %s", tc.h, got, tc.want)
		}
	}
}

func TestTrustHash_Normalizes(t *testing.T) {
	if TrustHash(EventStop, nil, Handler{Command: "x"}) != TrustHash(EventStop, nil, Handler{Command: "x", Timeout: DefaultTimeout}) {
		t.Error("no timeout and the default timeout hash differently; codex normalizes one into the other")
	}
	m := "^Bash$"
	if TrustHash(EventPreToolUse, &m, Handler{Command: "x"}) == TrustHash(EventPreToolUse, nil, Handler{Command: "x"}) {
		t.Error("the matcher is not part of the identity")
	}
}

func TestTrustKey(t *testing.T) {
	if got := TrustKey("/h/.codex/hooks.json", EventUserPromptSubmit, 2, 1); got != "/h/.codex/hooks.json:user_prompt_submit:2:1" {
		t.Errorf("TrustKey = %s", got)
	}
}
