//go:build harden

package testscripts

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// Issue 12 item 21: scopes and change text refuse every alias of .git on the
// file systems checkouts live on (HFS+ ignorable code points, NTFS streams
// and 8.3 names), control characters, bidi marks and NUL. A valid request
// reaches the (failing) worker and is a tool error; a hostile one is -32602
// before anything runs.
func TestHarden_HostileScopesAndChangeText(t *testing.T) {
	repo, data := storeRepo(t)
	log := filepath.Join(t.TempDir(), "log")
	codex := workerScript(t, log, "exit 1")
	p := startMCP(t, needlePath(t), serveArgs(repo, data, "--codex", codex)...)
	p.initialize()
	change := func(task, criterion, scope string) string {
		b, _ := json.Marshal(map[string]any{"task": task, "acceptance_criteria": []string{criterion},
			"scopes": []any{map[string]string{"path": scope, "kind": "exact"}}})
		return string(b)
	}
	r := p.call(1, "prepare_change", change("Rename Open.", "Open is renamed.", "store.go"))
	if r.Error != nil {
		t.Fatalf("the valid control request was refused: %s", short(r.raw))
	}
	hostile := []struct{ name, task, criterion, scope string }{
		{"ZeroWidthJoiner", "t", "c", ".git\u200d/config"},
		{"ZeroWidthNonJoiner", "t", "c", ".g\u200cit/config"},
		{"ByteOrderMark", "t", "c", "\ufeff.git/config"},
		{"RightToLeftMarkInGit", "t", "c", ".git\u200f/hooks/pre-commit"},
		{"NTFSIndexAllocation", "t", "c", ".git::$INDEX_ALLOCATION/config"},
		{"NTFSDataStream", "t", "c", ".git:$DATA"},
		{"ShortNameGIT2", "t", "c", "GIT~2/config"},
		{"ControlCharacterInScope", "t", "c", "a\u0007b.go"},
		{"BidiOverrideInScope", "t", "c", "a\u202eog.txt"},
		{"NULInTask", "fix\u0000 it", "c", "store.go"},
		{"BidiOverrideInTask", "fix \u202eit", "c", "store.go"},
		{"EscapeInCriterion", "t", "\u001b[31mred\u001b[0m", "store.go"},
	}
	for i, h := range hostile {
		r := p.call(100+i, "prepare_change", change(h.task, h.criterion, h.scope))
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s: %q / %q / %q was answered %s; want -32602", h.name, h.task, h.criterion, h.scope, short(r.raw))
		}
	}
}
