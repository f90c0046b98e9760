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
	repo := fs.String("repository", "", "")
	evidence := fs.String("evidence", "", "")
	calls := fs.Int("calls", 200, "")
	reports := fs.String("reports", "reports", "")
	if !h.parse(fs, args[1:]) {
		return 2
	}
	if *reqFile == "" || *calls < 1 || fs.NArg() != 0 || *evidence != "" && *repo == "" {
		fmt.Fprintf(h.stderr, "needlebench experiment mcp-contract-microbench: --mcp-request-file FILE is required (--evidence goes with --repository)\n\n%s", usage)
		return 2
	}
	rep, err := microbench(h.ctx, *reqFile, *repo, *evidence, *calls)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment: %v\n", err)
		return 1
	}
	fmt.Fprintf(h.stdout, "mcp-contract-microbench: %d calls each over one stdio JSON-RPC loop (cache-only, in process); need_context is an exact hit\n", *calls)
	fmt.Fprintf(h.stdout, "%-14s %10s %10s %10s %10s\n", "method", "p50 ms", "p95 ms", "p99 ms", "max ms")
	for _, m := range []string{"need_context", "noop", "ping"} {
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
// times need_context calls (the request file's arguments) once they are
// exact hits, and, in the same run on the same loop, a no-op tools/call (a
// tool the server does not have) and ping. Without a repository it serves
// the latency experiment's generated repository with its evidence
// certified (which answers the seed's request, fixtures/mcp-request.json);
// with one it certifies the proposals of the evidence file (a JSON array)
// there. Every timed need_context answer must be an exact hit.
func microbench(ctx context.Context, reqFile, repo, evidence string, calls int) (ExperimentReport, error) {
	rep := ExperimentReport{Experiment: "mcp-contract-microbench", Calls: calls, Methods: map[string]Quantiles{},
		Setup: "need_context with " + filepath.Base(reqFile) + " answered as an exact hit, a no-op tools/call and ping, " +
			"round-robin over one stdio JSON-RPC loop of needle's MCP server (cache-only, in process)"}
	methods, err := microbenchRun(ctx, reqFile, repo, evidence, calls)
	if err != nil {
		return rep, err
	}
	rep.Methods = methods
	return rep, nil
}

// microbenchEvidence returns the repository to serve and the proposals to
// certify in it.
func microbenchEvidence(ctx context.Context, repo, evidence, work string) (string, [][]byte, error) {
	if repo == "" {
		repo = filepath.Join(work, "repo")
		if err := os.MkdirAll(repo, 0o755); err != nil {
			return "", nil, err
		}
		if err := writeLatencyRepo(ctx, repo, 0); err != nil {
			return "", nil, err
		}
		props, err := coreProposals()
		return repo, props, err
	}
	if evidence == "" {
		return repo, nil, nil
	}
	data, err := os.ReadFile(evidence)
	if err != nil {
		return "", nil, err
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return "", nil, fmt.Errorf("%s: want a JSON array of proposals: %w", evidence, err)
	}
	var props [][]byte
	for _, p := range raw {
		props = append(props, p)
	}
	return repo, props, nil
}

func microbenchRun(ctx context.Context, reqFile, repo, evidence string, calls int) (map[string]Quantiles, error) {
	args, err := os.ReadFile(reqFile)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return nil, fmt.Errorf("%s: %w", reqFile, err)
	}
	args = compact.Bytes() // one request, one line
	work, err := os.MkdirTemp("", "needle-microbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	repo, proposals, err := microbenchEvidence(ctx, repo, evidence, work)
	if err != nil {
		return nil, err
	}
	eng, err := product.Open(ctx, product.Config{DataDir: filepath.Join(work, "data"), Repository: repo, CacheOnly: true, Transport: "mcp",
		Limits: product.Limits{Needs: product.HardSessionLimit}})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	for _, p := range proposals {
		res, err := eng.Propose(ctx, p)
		if err != nil {
			return nil, err
		}
		if res.Status != "certified" {
			return nil, fmt.Errorf("evidence not certified: %v\n%s", res.Reasons, p)
		}
	}
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
	if _, _, err := c.call(`"initialize"`, `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"microbench","version":"1"}}`); err != nil {
		return nil, err
	}
	needContext := `{"name":"need_context","arguments":` + string(args) + `}`
	// The first answer certifies the need (a coverage or composite hit);
	// the second must be exact, or the evidence does not answer the request.
	for i := range 2 {
		_, reply, err := c.call(`"tools/call"`, needContext)
		if err != nil {
			return nil, fmt.Errorf("need_context: %w", err)
		}
		if kind := resolutionKind(reply); i == 1 && kind != string(product.ResolutionExact) {
			return nil, fmt.Errorf("need_context is answered %q, not an exact hit: certify its evidence (--repository DIR --evidence FILE)", kind)
		}
	}
	methods := []struct{ name, method, params string }{
		{"need_context", `"tools/call"`, needContext},
		{"noop", `"tools/call"`, `{"name":"needlebench_noop","arguments":{}}`},
		{"ping", `"ping"`, `{}`},
	}
	ms := map[string][]float64{}
	for range calls {
		for _, m := range methods {
			d, reply, err := c.call(m.method, m.params)
			if m.name == "noop" && err != nil && strings.Contains(err.Error(), "unknown tool") {
				err = nil // the answer a no-op gets
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.name, err)
			}
			if kind := resolutionKind(reply); m.name == "need_context" && kind != string(product.ResolutionExact) {
				return nil, fmt.Errorf("need_context answered %q, not an exact hit", kind)
			}
			ms[m.name] = append(ms[m.name], float64(d.Microseconds())/1000)
		}
	}
	inW.Close()
	out := map[string]Quantiles{}
	for name, v := range ms {
		out[name] = quantiles(v)
	}
	return out, <-done
}

// resolutionKind is the resolution kind of a need_context answer, "" for
// any other reply.
func resolutionKind(reply []byte) string {
	var r struct {
		Result struct {
			Structured struct {
				Resolution struct {
					Kind string `json:"kind"`
				} `json:"resolution"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if json.Unmarshal(reply, &r) != nil {
		return ""
	}
	return r.Result.Structured.Resolution.Kind
}

// lineClient is a minimal JSON-RPC client over lines.
type lineClient struct {
	w  io.Writer
	r  *bufio.Reader
	id int
}

// call sends one request and times the round trip; an error reply fails.
func (c *lineClient) call(method, params string) (time.Duration, []byte, error) {
	c.id++
	start := time.Now()
	if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}`+"\n", c.id, method, params); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadBytes('\n')
	took := time.Since(start)
	if err != nil {
		return 0, nil, err
	}
	var reply struct {
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(line, &reply); err != nil {
		return 0, nil, err
	}
	if reply.Error != nil {
		return 0, nil, fmt.Errorf("error reply: %s", reply.Error.Message)
	}
	return took, line, nil
}
