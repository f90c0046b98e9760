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
	"time"

	"github.com/needle-dev/needle/product"
)

// experiment runs a named experiment.
func (h *harness) experiment(args []string) int {
	if len(args) > 0 && args[0] == "mcp-hit-latency" {
		return h.hitLatency(args[1:])
	}
	if len(args) == 0 || args[0] != "mcp-contract-microbench" {
		fmt.Fprintf(h.stderr, "needlebench experiment: want mcp-contract-microbench or mcp-hit-latency\n\n%s", usage)
		return 2
	}
	fs := h.flags("experiment mcp-contract-microbench")
	reqFile := fs.String("mcp-request-file", "", "")
	repo := fs.String("repository", ".", "")
	calls := fs.Int("calls", 200, "")
	reports := fs.String("reports", "reports", "")
	if !h.parse(fs, args[1:]) {
		return 2
	}
	if *reqFile == "" || *calls < 1 || fs.NArg() != 0 {
		fmt.Fprintf(h.stderr, "needlebench experiment mcp-contract-microbench: --mcp-request-file FILE is required\n\n%s", usage)
		return 2
	}
	rep, err := microbench(h.ctx, *reqFile, *repo, *calls)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment: %v\n", err)
		return 1
	}
	fmt.Fprintf(h.stdout, "mcp-contract-microbench: %d calls each over one stdio JSON-RPC loop (cache-only, in process)\n", *calls)
	fmt.Fprintf(h.stdout, "%-14s %10s %10s %10s %10s\n", "method", "p50 ms", "p95 ms", "p99 ms", "max ms")
	for _, m := range []string{"need_context", "ping"} {
		q := rep.Methods[m]
		fmt.Fprintf(h.stdout, "%-14s %10.3f %10.3f %10.3f %10.3f\n", m, q.P50, q.P95, q.P99, q.Max)
	}
	files, err := writeExperiment(*reports, rep)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment: %v\n", err)
		return 1
	}
	fmt.Fprintf(h.stdout, "wrote %s\n", strings.Join(files, ", "))
	return 0
}

// microbench serves MCP through the product's public ServeMCP on pipes and
// times need_context calls (the request file's arguments) and, in the same
// run on the same loop, a no-op ping.
func microbench(ctx context.Context, reqFile, repo string, calls int) (ExperimentReport, error) {
	rep := ExperimentReport{Experiment: "mcp-contract-microbench", Calls: calls, Methods: map[string]Quantiles{},
		Setup: "need_context with " + filepath.Base(reqFile) + " and a no-op ping over one stdio JSON-RPC loop of needle's MCP server (cache-only, in process)"}
	methods, err := microbenchRun(ctx, reqFile, repo, calls)
	if err != nil {
		return rep, err
	}
	rep.Methods = methods
	return rep, nil
}

func microbenchRun(ctx context.Context, reqFile, repo string, calls int) (map[string]Quantiles, error) {
	args, err := os.ReadFile(reqFile)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return nil, fmt.Errorf("%s: %w", reqFile, err)
	}
	args = compact.Bytes() // one request, one line
	data, err := os.MkdirTemp("", "needle-microbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(data)
	eng, err := product.Open(ctx, product.Config{DataDir: data, Repository: repo, CacheOnly: true, Transport: "mcp",
		Limits: product.Limits{Needs: product.HardSessionLimit}})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	profile, err := eng.Profile(ctx, product.DefaultProfileID)
	if err != nil {
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- product.ServeMCP(ctx, product.MCPConfig{Engine: eng, Repository: repo, MainModel: "microbench",
			Profile: profile, CacheOnly: true}, inR, outW)
		outW.Close()
	}()
	c := &lineClient{w: inW, r: bufio.NewReader(outR)}
	if _, err := c.call(`"initialize"`, `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"microbench","version":"1"}}`); err != nil {
		return nil, err
	}
	out := map[string]Quantiles{}
	for _, m := range []struct{ name, method, params string }{
		{"need_context", `"tools/call"`, `{"name":"need_context","arguments":` + string(args) + `}`},
		{"ping", `"ping"`, `{}`},
	} {
		var ms []float64
		for range calls {
			d, err := c.call(m.method, m.params)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.name, err)
			}
			ms = append(ms, float64(d.Microseconds())/1000)
		}
		out[m.name] = quantiles(ms)
	}
	inW.Close()
	return out, <-done
}

// lineClient is a minimal JSON-RPC client over lines.
type lineClient struct {
	w  io.Writer
	r  *bufio.Reader
	id int
}

// call sends one request and times the round trip; an error reply fails.
func (c *lineClient) call(method, params string) (time.Duration, error) {
	c.id++
	start := time.Now()
	if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}`+"\n", c.id, method, params); err != nil {
		return 0, err
	}
	line, err := c.r.ReadBytes('\n')
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	var reply struct {
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(line, &reply); err != nil {
		return 0, err
	}
	if reply.Error != nil {
		return 0, fmt.Errorf("error reply: %s", reply.Error.Message)
	}
	return took, nil
}
