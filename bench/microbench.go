package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	if len(args) > 0 && args[0] == "proof-latency" {
		return h.proofLatency(args[1:])
	}
	if len(args) == 0 || args[0] != "mcp-contract-microbench" {
		fmt.Fprintf(h.stderr, "needlebench experiment: want mcp-contract-microbench, mcp-hit-latency or proof-latency\n\n%s", usage)
		return 2
	}
	fs := h.flags("experiment mcp-contract-microbench")
	reqFile := fs.String("mcp-request-file", "", "")
	repo := fs.String("repository", "", "")
	evidence := fs.String("evidence", "", "")
	calls := fs.Int("calls", 200, "")
	reports := fs.String("reports", "reports", "")
	codex := fs.String("codex", "", "")
	testsCache := fs.String("tests-cache", "", "")
	if !h.parse(fs, args[1:]) {
		return 2
	}
	if *reqFile == "" || *calls < 1 || fs.NArg() != 0 || *evidence != "" && *repo == "" {
		fmt.Fprintf(h.stderr, "needlebench experiment mcp-contract-microbench: --mcp-request-file FILE is required (--evidence goes with --repository)\n\n%s", usage)
		return 2
	}
	rep, err := microbench(h.ctx, *reqFile, *repo, *evidence, *codex, *testsCache, *calls)
	if err != nil {
		fmt.Fprintf(h.stderr, "needlebench experiment: %v\n", err)
		return 1
	}
	fmt.Fprintf(h.stdout, "mcp-contract-microbench: %d calls each over stdio JSON-RPC loops, %d MCP sessions, a new one before a session's %d need_context steps (cache-only, in process; opening one is not timed); need_context is an exact hit (%d of %d)\n",
		*calls, rep.Sessions, product.HardSessionSteps, rep.ExactHits, rep.Methods["need_context"].N)
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
// there. Every timed need_context answer must be an exact hit. The
// proofs build into testsCache ("" = a new cache, removed after).
func microbench(ctx context.Context, reqFile, repo, evidence, codex, testsCache string, calls int) (ExperimentReport, error) {
	rep := ExperimentReport{Experiment: "mcp-contract-microbench", Calls: calls, Methods: map[string]Quantiles{},
		Setup: "need_context with " + filepath.Base(reqFile) + " answered as an exact hit, a no-op tools/call and ping, " +
			"round-robin over stdio JSON-RPC loops of needle's MCP server, a new session (not timed) before a session's " +
			fmt.Sprint(product.HardSessionSteps) + " need_context steps (cache-only, in process)"}
	run, err := microbenchRun(ctx, reqFile, repo, evidence, codex, testsCache, calls)
	if err != nil {
		return rep, err
	}
	rep.Methods, rep.Sessions, rep.ExactHits = run.methods, run.sessions, run.exactHits
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

// microbenchRun certifies the evidence on a fresh engine, then times calls
// rounds of need_context, a no-op tool call and ping over MCP sessions.
func microbenchRun(ctx context.Context, reqFile, repo, evidence, codex, testsCache string, calls int) (microbenchResult, error) {
	var none microbenchResult
	args, err := readMicrobenchRequest(reqFile)
	if err != nil {
		return none, err
	}
	work, err := os.MkdirTemp("", "needle-microbench-")
	if err != nil {
		return none, err
	}
	defer os.RemoveAll(work)
	repo, proposals, err := microbenchEvidence(ctx, repo, evidence, work)
	if err != nil {
		return none, err
	}
	// The evidence is certified as a user's would be: a flow and a test by
	// running them in codex's sandbox (the seed's request asks for a
	// contract_complete flow, which only an executed one is).
	if codex == "" {
		if codex, err = exec.LookPath("codex"); err != nil {
			return none, errors.New("the evidence's flow and tests run in codex's sandbox and there is no codex on PATH: pass --codex BIN")
		}
	}
	if testsCache == "" {
		testsCache = filepath.Join(work, "testrun")
	} else if testsCache, err = filepath.Abs(testsCache); err != nil {
		return none, err
	}
	eng, err := product.Open(ctx, product.Config{DataDir: filepath.Join(work, "data"), Repository: repo, CacheOnly: true, Transport: "mcp",
		Limits: product.Limits{Needs: product.HardSessionLimit},
		Tests:  product.TestsConfig{Codex: codex, CacheDir: testsCache}})
	if err != nil {
		return none, err
	}
	defer eng.Close()
	if err := certifyMicrobenchEvidence(ctx, eng, proposals); err != nil {
		return none, err
	}
	profile, err := eng.Profile(ctx, product.DefaultProfileID)
	if err != nil {
		return none, err
	}
	needContext := `{"name":"need_context","arguments":` + string(args) + `}`
	return timeMicrobenchCalls(ctx, eng, repo, profile, needContext, calls)
}

// readMicrobenchRequest reads the need_context arguments of reqFile,
// compacted to one line: one request, one line.
func readMicrobenchRequest(reqFile string) ([]byte, error) {
	args, err := os.ReadFile(reqFile)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return nil, fmt.Errorf("%s: %w", reqFile, err)
	}
	return compact.Bytes(), nil
}

// certifyMicrobenchEvidence proposes every piece of evidence and fails
// unless each is certified, or undecided only for want of a test run.
func certifyMicrobenchEvidence(ctx context.Context, eng *product.Engine, proposals [][]byte) error {
	for _, p := range proposals {
		res, err := eng.Propose(ctx, p)
		if err != nil {
			return err
		}
		switch res.Status {
		case product.OutcomeCertified:
		case product.OutcomeUndecided:
			// A focused test is proven only by running it, and this engine
			// runs none: the need's preferred tests stay missing, which
			// does not keep it from being an exact hit.
		default:
			return fmt.Errorf("evidence %s: %v\n%s", res.Status, res.Reasons, p)
		}
	}
	return nil
}

// microbenchCall is one of the calls a microbenchmark round times.
type microbenchCall struct{ name, method, params string }

// microbenchResult is what a microbenchmark run timed: each call's latency
// quantiles in milliseconds, the MCP sessions the rounds were spread over
// and the timed need_context answers verified to be exact hits.
type microbenchResult struct {
	methods   map[string]Quantiles
	sessions  int
	exactHits int
}

// timeMicrobenchCalls times calls rounds of need_context, a no-op tool
// call and ping, each need_context an exact hit.
//
// Every need_context call counts toward a session's hard step limit
// (product.HardSessionSteps), repeats included: past it a need is a bypass.
// Like a client that reconnects, the run opens a new connection, a new
// session, whenever the next round's need_context would pass the limit;
// opening one (and its initialize) is not timed.
func timeMicrobenchCalls(ctx context.Context, eng *product.Engine, repo string, profile product.ProfileRevision, needContext string, calls int) (microbenchResult, error) {
	var sess *mcpSession
	defer func() {
		if sess != nil {
			_ = sess.close()
		}
	}()
	methods := []microbenchCall{
		{"need_context", `"tools/call"`, needContext},
		{"noop", `"tools/call"`, `{"name":"needlebench_noop","arguments":{}}`},
		{"ping", `"ping"`, `{}`},
	}
	res := microbenchResult{methods: map[string]Quantiles{}}
	ms := map[string][]float64{}
	steps := 0 // need_context calls on sess, untimed ones included
	for range calls {
		if sess == nil || steps+1 > product.HardSessionSteps {
			if sess != nil {
				err := sess.close()
				sess = nil
				if err != nil {
					return res, err
				}
			}
			var err error
			if sess, err = openMCPSession(ctx, eng, repo, profile); err != nil {
				return res, err
			}
			res.sessions++
			steps = 0
			if res.sessions == 1 {
				// The first answer certifies the need (a coverage or
				// composite hit); the next must be exact, or the evidence
				// does not answer the request.
				steps++
				if _, _, err := sess.c.call(`"tools/call"`, needContext); err != nil {
					return res, fmt.Errorf("need_context: %w", err)
				}
			}
		}
		if err := sess.timeRound(methods, ms); err != nil {
			return res, fmt.Errorf("session %d, step %d: %w", res.sessions, steps+1, err)
		}
		steps++
		res.exactHits++ // timeRound failed unless it was one
	}
	err := sess.close()
	sess = nil
	for name, v := range ms {
		res.methods[name] = quantiles(v)
	}
	return res, err
}

// timeRound makes each call once on the session and adds its latency to
// ms, failing unless need_context is an exact hit. A no-op's error reply is
// the answer it gets: its round trip is timed like any other.
func (s *mcpSession) timeRound(methods []microbenchCall, ms map[string][]float64) error {
	for _, m := range methods {
		d, reply, err := s.c.call(m.method, m.params)
		if m.name == "noop" && err != nil && strings.Contains(err.Error(), "unknown tool") {
			err = nil // the answer a no-op gets, timed like any other
		}
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if kind := resolutionKind(reply); m.name == "need_context" && kind != string(product.ResolutionExact) {
			return fmt.Errorf("need_context answered %q, not an exact hit: certify its evidence (--repository DIR --evidence FILE)", kind)
		}
		ms[m.name] = append(ms[m.name], millis(d))
	}
	return nil
}

// millis is d in milliseconds, to the nanosecond: a round trip of less
// than a microsecond is not 0.
func millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// mcpSession is one MCP connection to ServeMCP on pipes, initialized.
type mcpSession struct {
	c    *lineClient
	in   io.Closer
	done chan error
}

func openMCPSession(ctx context.Context, eng *product.Engine, repo string, profile product.ProfileRevision) (*mcpSession, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &mcpSession{c: &lineClient{w: inW, r: bufio.NewReader(outR)}, in: inW, done: make(chan error, 1)}
	go func() {
		s.done <- product.ServeMCP(ctx, product.MCPConfig{Engine: eng, Repository: repo, MainModel: "microbench",
			Profile: profile, CacheOnly: true}, inR, outW)
		outW.Close()
	}()
	if _, _, err := s.c.call(`"initialize"`, `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"microbench","version":"1"}}`); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close ends the session's input and waits for the server to end.
func (s *mcpSession) close() error {
	s.in.Close()
	return <-s.done
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

// call sends one request and times the round trip; an error reply is an
// error, with its round trip timed.
func (c *lineClient) call(method, params string) (time.Duration, []byte, error) {
	c.id++
	start := time.Now()
	if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}`+"\n", c.id, method, params); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadBytes('\n')
	took := time.Since(start)
	if err != nil {
		return took, nil, err
	}
	var reply struct {
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(line, &reply); err != nil {
		return took, nil, err
	}
	if reply.Error != nil {
		// An error reply is an answer too: its round trip is timed.
		return took, line, fmt.Errorf("error reply: %s", reply.Error.Message)
	}
	return took, line, nil
}
