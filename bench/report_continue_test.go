package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestContinuationTokens reads the figure from recordings written here:
// a continued thread is charged what its total grew by over the flow turn,
// a fresh one its whole total; the section says why when there are none.
func TestContinuationTokens(t *testing.T) {
	dir := t.TempDir()
	usage := func(total int) string {
		return `{"dir":"s2c","msg":{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"totalTokens":` +
			strconv.Itoa(total) + `}}}}}`
	}
	turn := func(prompt string) string {
		return `{"dir":"c2s","msg":{"method":"turn/start","id":3,"params":{"input":[{"type":"text","text":"` + prompt + `"}]}}}`
	}
	write := func(name string, lines ...string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	header := `{"kind":"header","format":"needle.codex-appserver-transcript/v1"}`
	write("continued/a.jsonl", header, turn("Propose implementation_location evidence."), usage(100), usage(250),
		turn(`Continue in the same checkout.\nPropose runtime_flow evidence.`), usage(400), usage(1000))
	write("fresh/a.jsonl", header, turn("Propose implementation_location evidence."), usage(100), usage(250))
	write("fresh/b.jsonl", header, turn("Propose runtime_flow evidence."), usage(300), usage(900))
	c, err := continuationTokens(dir)
	if err != nil || c.Continued != 750 || c.Fresh != 900 {
		t.Fatalf("figure %+v, %v; want continued 1000-250 = 750, fresh 900", c, err)
	}
	var b bytes.Buffer
	markdownContinuation(&b, Report{Continuation: c})
	if !strings.Contains(b.String(), "| fresh thread | 900 |") || !strings.Contains(b.String(), "| continued thread | 750 (83.3% of fresh) |") {
		t.Errorf("section:\n%s", b.String())
	}
	if _, err := continuationTokens(filepath.Join(dir, "absent")); err == nil {
		t.Error("no recordings gave a figure")
	}

	// The committed recordings: the continued thread costs the residual
	// need less than a fresh one.
	c, err = continuationTokens(filepath.Join("..", "frozen", "continue"))
	if err != nil || c.Continued <= 0 || c.Continued >= c.Fresh {
		t.Errorf("frozen/continue: %+v, %v", c, err)
	}
	t.Logf("frozen/continue: residual need's worker tokens, fresh %d, continued %d", c.Fresh, c.Continued)
}
