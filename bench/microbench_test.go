package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product"
	"github.com/needle-dev/needle/product/testenv"
)

// TestMicrobench_PastTheStepCap runs the contract microbenchmark through
// its command line for more rounds than two sessions' step cap: it must
// open new sessions as a reconnecting client would, verify every timed
// need_context answer as an exact hit, and time the no-op (an error reply)
// and ping for real. The evidence is an implementation location (certified
// without running anything), so the run is cheap; the seed's own request
// and evidence run in testscripts' bench_mcp_microbench. Timings are not
// asserted beyond being measured at all.
func TestMicrobench_PastTheStepCap(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeLatencyRepo(ctx, repo, 0); err != nil {
		t.Fatal(err)
	}
	loc, err := locationProposal("symbol", "NewSearcher", "search.go", latencySources["search.go"], "func NewSearcher")
	if err != nil {
		t.Fatal(err)
	}
	evidence, request := filepath.Join(dir, "evidence.json"), filepath.Join(dir, "request.json")
	if err := os.WriteFile(evidence, fmt.Appendf(nil, "[%s]", loc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(request, []byte(probeLocate.args), 0o644); err != nil {
		t.Fatal(err)
	}

	// The first session answers one untimed call (the need's first
	// resolution) and cap-1 timed rounds, the second cap rounds, the third
	// the last two.
	calls := 2*product.HardSessionSteps + 1
	const wantSessions = 3
	reports := filepath.Join(dir, "reports")
	var stdout, stderr bytes.Buffer
	args := []string{"experiment", "mcp-contract-microbench", "--codex", testenv.Codex(t), "--mcp-request-file", request,
		"--repository", repo, "--evidence", evidence, "--calls", fmt.Sprint(calls), "--reports", reports}
	if code := Main(ctx, args, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var r ExperimentReport
	data, err := os.ReadFile(filepath.Join(reports, "mcp-contract-microbench.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Calls != calls || r.Sessions != wantSessions || r.ExactHits != calls {
		t.Errorf("calls %d, sessions %d, exact hits %d; want %d calls over %d sessions, every one an exact hit", r.Calls, r.Sessions, r.ExactHits, calls, wantSessions)
	}
	for _, m := range []string{"need_context", "noop", "ping"} {
		q, ok := r.Methods[m]
		if !ok || q.N != calls || !(q.P50 > 0 && q.P50 <= q.P95 && q.P95 <= q.P99 && q.P99 <= q.Max) {
			t.Errorf("%s: %+v (present %v), want %d timed calls and ordered quantiles above 0", m, q, ok, calls)
		}
	}
	want := fmt.Sprintf("%d MCP sessions, a new one before a session's %d need_context steps", wantSessions, product.HardSessionSteps)
	if !strings.Contains(stdout.String(), want) || !strings.Contains(stdout.String(), fmt.Sprintf("exact hit (%d of %d)", calls, calls)) {
		t.Errorf("stdout lacks %q and the exact hits:\n%s", want, stdout.String())
	}
	md, err := os.ReadFile(filepath.Join(reports, "mcp-contract-microbench.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("over %d MCP sessions (opening one is not timed); %d of the timed need_context answers were verified exact hits", wantSessions, calls); !bytes.Contains(md, []byte(want)) {
		t.Errorf("report Markdown lacks %q:\n%s", want, md)
	}
}

// TestLineClient_ErrorReplyIsTimed checks that a JSON-RPC error answer is
// a round trip like any other: the client returns it as an error, with
// the reply and a measured duration.
func TestLineClient_ErrorReplyIsTimed(t *testing.T) {
	reqR, reqW := io.Pipe()
	repR, repW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		defer repW.Close()
		line, err := bufio.NewReader(reqR).ReadBytes('\n')
		if err != nil {
			served <- err
			return
		}
		var req struct{ ID int }
		if err := json.Unmarshal(line, &req); err != nil {
			served <- err
			return
		}
		_, err = fmt.Fprintf(repW, `{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":"unknown tool \"needlebench_noop\""}}`+"\n", req.ID)
		served <- err
	}()
	c := &lineClient{w: reqW, r: bufio.NewReader(repR)}
	d, reply, err := c.call(`"tools/call"`, `{"name":"needlebench_noop","arguments":{}}`)
	if serr := <-served; serr != nil {
		t.Fatal(serr)
	}
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("error %v, want the error reply's message", err)
	}
	if !bytes.Contains(reply, []byte(`"code":-32602`)) {
		t.Errorf("reply %q, want the error reply", reply)
	}
	if d <= 0 || millis(d) <= 0 {
		t.Errorf("an error reply took %v (%v ms): its round trip must be timed", d, millis(d))
	}
}
