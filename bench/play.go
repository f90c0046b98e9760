package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/needle-dev/needle/product"
	"github.com/needle-dev/needle/product/codextest"
)

// Playing a corpus: one product engine per module, opened through the
// product's public API with a fresh data directory and an App Server
// command (the replay server, or the real codex while recording); every
// session's needs in order, the module's work tree checked out at the
// session's version first.

// outcome is what happened to one need.
type outcome struct {
	Session   string
	Developer string
	Need      string
	Pattern   string
	Module    string
	Version   string
	Raw       string // the request as the developer wrote it (JSON or marker)
	// SubjectKind and SubjectName are the subject as the corpus asks for
	// it: the truth is judged for what was asked, not what Needle says.
	SubjectKind, SubjectName string
	NeedID                   string
	Kinds                    []string // the compiled need's required capability kinds
	Result                   product.NeedResult
	LatencyMs                float64
}

// bump is a module's work tree moved to another version after evidence
// was certified at the earlier one, and what the product's Refresh did
// there before the next need, then the serving engine's Warm (the
// background refresh of 'needle mcp serve', run to completion; refresh
// false leaves the re-proving to the needs).
type bump struct {
	Module, From, To string
	Refresh          product.RefreshReport
	Warmed           int     // needs the serving engine readied (Engine.Warm)
	WarmMs           float64 // how long that took
	at               int     // the index of the session it came before, to keep the corpus's order
}

// appServer says which App Server the engines use.
type appServer struct {
	// command is the App Server argv (the product appends "app-server").
	command []string
	// home, when set, is the CODEX_HOME template the worker copies.
	home string
	// record, when set, receives every worker session's transcript.
	record string
	// before runs before each need (the recorder points the model at the
	// need's script); its cleanup after.
	before func(n CorpusNeed, needID string) (cleanup func(), err error)
}

// play runs every session of c against repos and returns the outcomes (in
// the corpus's order) and each module's worker totals. A module's sessions
// play in order on its own engine, repository and data directory; modules
// share nothing, so they play side by side, at most runtime.NumCPU() at
// once, unless the App Server is recording (as.before points the one fake
// model at one need at a time).
func play(ctx context.Context, c *Corpus, repos map[string]*moduleRepo, dataRoot string, as appServer, tc testsConfig, refresh bool, progress func(done, total int)) ([]outcome, []bump, map[string]product.WorkerTotals, error) {
	var modules []string
	sessions := map[string][]int{} // a module's sessions, by index in c.Sessions
	total := 0
	for i, s := range c.Sessions {
		if _, ok := sessions[s.Module]; !ok {
			modules = append(modules, s.Module)
		}
		sessions[s.Module] = append(sessions[s.Module], i)
		total += len(s.Needs)
	}
	outs := make([][]outcome, len(c.Sessions))
	played := make([]modulePlay, len(modules))
	counted := countDone(total, progress)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.NumCPU())
	if as.before != nil {
		g.SetLimit(1)
	}
	for k, m := range modules {
		g.Go(func() error {
			var err error
			played[k], err = playModule(gctx, c, repos[m], sessions[m], outs, filepath.Join(dataRoot, filepath.Base(repos[m].Dir)), as, tc, refresh, counted)
			return err
		})
	}
	err := g.Wait()
	engines := map[string]*product.Engine{}
	var bumps []bump
	for k, mp := range played {
		if mp.engine != nil {
			engines[modules[k]] = mp.engine
			defer mp.engine.Close()
		}
		bumps = append(bumps, mp.bumps...)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	slices.SortStableFunc(bumps, func(a, b bump) int { return a.at - b.at })
	var out []outcome
	for _, o := range outs {
		out = append(out, o...)
	}
	totals, err := engineWorkerTotals(ctx, engines)
	if err != nil {
		return nil, nil, nil, err
	}
	return out, bumps, totals, nil
}

// countDone returns a function that counts one more of total done and
// tells progress (which may be nil), safe for concurrent use.
func countDone(total int, progress func(done, total int)) func() {
	var mu sync.Mutex
	done := 0
	return func() {
		mu.Lock()
		defer mu.Unlock()
		done++
		if progress != nil {
			progress(done, total)
		}
	}
}

// modulePlay is what one module's sessions left: its engine (open, for
// the worker totals) and its bumps.
type modulePlay struct {
	engine *product.Engine
	bumps  []bump
}

// playModule plays the sessions of one module (indices into c.Sessions, in
// order) on one engine over dataDir, writing each session's outcomes to
// outs at its index and calling counted after each need.
func playModule(ctx context.Context, c *Corpus, repo *moduleRepo, sessions []int, outs [][]outcome, dataDir string, as appServer, tc testsConfig, refresh bool, counted func()) (modulePlay, error) {
	var mp modulePlay
	at := "" // the version checked out
	for _, i := range sessions {
		s := c.Sessions[i]
		if err := repo.checkout(ctx, s.Version); err != nil {
			return mp, err
		}
		cfg := product.Config{
			DataDir: dataDir, Repository: repo.Dir,
			Codex: &product.CodexConfig{Command: as.command, Home: as.home, RecordDir: as.record},
			Tests: tc.of(repo),
		}
		if mp.engine != nil && refresh && at != s.Version {
			b, err := refreshAtBump(ctx, cfg, mp.engine, s.Module, at, s.Version)
			if err != nil {
				return mp, err
			}
			b.at = i
			mp.bumps = append(mp.bumps, b)
		}
		at = s.Version
		if mp.engine == nil {
			var err error
			if mp.engine, err = product.Open(ctx, cfg); err != nil {
				return mp, err
			}
		}
		for _, n := range s.Needs {
			o, err := playNeed(ctx, mp.engine, s, n, as)
			if err != nil {
				return mp, fmt.Errorf("session %s need %s: %w", s.ID, n.ID, err)
			}
			outs[i] = append(outs[i], o)
			counted()
		}
	}
	return mp, nil
}

// refreshAtBump runs the product's Refresh for module moved from one
// version to another, then warms the serving engine e, as needle mcp
// serve does in the background.
func refreshAtBump(ctx context.Context, cfg product.Config, e *product.Engine, module, from, to string) (bump, error) {
	// The refresh runs on an engine of its own over the same store,
	// as needle mcp serve's background refresher does: the serving
	// engine's caches learn of the change only by asking.
	rep, err := refreshModule(ctx, cfg)
	if err != nil {
		return bump{}, fmt.Errorf("refresh of %s at %s: %w", module, to, err)
	}
	// Then the serving engine readies itself for the renewed needs,
	// as needle mcp serve's does after its refresher's report.
	started := time.Now()
	warmed, err := e.Warm(ctx)
	if err != nil {
		return bump{}, fmt.Errorf("warm-up of %s at %s: %w", module, to, err)
	}
	return bump{Module: module, From: from, To: to, Refresh: rep,
		Warmed: warmed, WarmMs: float64(time.Since(started).Microseconds()) / 1000}, nil
}

// engineWorkerTotals are the worker-run totals of each module's engine.
func engineWorkerTotals(ctx context.Context, engines map[string]*product.Engine) (map[string]product.WorkerTotals, error) {
	totals := map[string]product.WorkerTotals{}
	for m, e := range engines {
		t, err := e.WorkerTotals(ctx)
		if err != nil {
			return nil, err
		}
		totals[m] = t
	}
	return totals, nil
}

// refreshModule runs the product's Refresh on an engine of its own.
func refreshModule(ctx context.Context, cfg product.Config) (product.RefreshReport, error) {
	cfg.Codex, cfg.CacheOnly = nil, true // a refresh never runs a worker
	e, err := product.Open(ctx, cfg)
	if err != nil {
		return product.RefreshReport{}, err
	}
	defer e.Close()
	return e.Refresh(ctx)
}

func playNeed(ctx context.Context, e *product.Engine, s Session, n CorpusNeed, as appServer) (outcome, error) {
	o := outcome{Session: s.ID, Developer: s.Developer, Need: n.ID, Pattern: n.Pattern, Module: s.Module, Version: s.Version}
	req, raw, err := n.request()
	if err != nil {
		return o, err
	}
	o.Raw, o.SubjectKind, o.SubjectName = raw, req.Subject.Kind, req.Subject.Name
	need, err := product.Compile(req, product.AllRoutes())
	if err != nil {
		return o, err
	}
	o.NeedID = need.ID
	for _, ob := range need.IR.Obligations {
		if ob.Strength == product.StrengthRequired { // preferred ones never spawn a worker
			o.Kinds = append(o.Kinds, string(ob.Kind))
		}
	}
	if as.before != nil {
		cleanup, err := as.before(n, need.ID)
		if err != nil {
			return o, err
		}
		defer cleanup()
	}
	start := time.Now()
	// Each developer's session is its own ledger.
	o.Result, err = e.NeedContext(ctx, s.ID, req)
	o.LatencyMs = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return o, err
	}
	if o.Result.Failure.Reason == product.FailureWorker {
		// A worker that failed under replay means the frozen transcripts do
		// not match what the product does now: never a silent bypass.
		return o, fmt.Errorf("the worker failed (%s): the frozen transcripts do not match; re-record them with needlebench record", o.Result.Failure.Detail)
	}
	return o, nil
}

// request decodes the need as its developer wrote it.
func (n CorpusNeed) request() (product.NeedRequest, string, error) {
	if n.Marker != "" {
		req, err := product.ParseMarker(n.Marker)
		return req, n.Marker, err
	}
	req, err := product.DecodeNeedRequest(n.Request)
	return req, string(n.Request), err
}

// Token usage the scripted model reports for each worker turn: a read of
// the cited file, then the answer. A turn costs turnTokens in total.
var (
	usageRead   = map[string]int{"input": 1800, "cached": 0, "output": 40, "reasoning": 0}
	usageAnswer = map[string]int{"input": 2600, "cached": 1600, "output": 120, "reasoning": 0}
)

var turnTokens = int64(usageRead["input"] + usageRead["output"] + usageAnswer["input"] + usageAnswer["output"])

// needScript is the fake model's script for one need: for each capability
// kind, keyed on the need id and the kind's turn prompt, a read of the
// cited file and the scripted answer.
func needScript(n CorpusNeed, needID string) []byte {
	var responses []any
	for _, kind := range slices.Sorted(mapKeys(n.Answers)) {
		reply := n.Answers[kind]
		match := []string{needID, "Propose " + kind + " evidence"}
		args, _ := json.Marshal(map[string]any{"cmd": readCommand(reply.Proposal), "yield_time_ms": 1000})
		responses = append(responses,
			map[string]any{"match": match, "function_call": map[string]any{"call_id": "call_read_" + kind, "name": "exec_command",
				"arguments": string(args), "usage": usageRead}},
			map[string]any{"match": match, "message": map[string]any{"text": string(reply.Proposal), "usage": usageAnswer}})
	}
	script, _ := json.Marshal(map[string]any{"responses": responses})
	return script
}

// readCommand is the scripted worker's look at the source before it
// answers: the cited lines with some context around them (a location, a
// flow's first step), or the test functions of the cited test file.
func readCommand(raw json.RawMessage) string {
	var cited proposal // the truth's reading of a proposal
	_ = json.Unmarshal(raw, &cited)
	if len(cited.Steps) > 0 {
		cited.Path, cited.StartLine, cited.EndLine = cited.Steps[0].Path, cited.Steps[0].StartLine, cited.Steps[0].EndLine
	}
	if cited.Path == "" && len(cited.Tests) > 0 {
		return "grep -n '^func Test' " + cited.Tests[0].Path
	}
	return fmt.Sprintf("sed -n '%d,%dp' %s", max(cited.StartLine-10, 1), cited.EndLine+10, cited.Path)
}

// recordingServer returns the App Server of a recording: the real codex,
// talking to a fake model started for each need with the need's script,
// recording every worker session into out.
func recordingServer(codex, home, out string) appServer {
	return appServer{command: []string{codex}, home: home, record: out, before: func(n CorpusNeed, needID string) (func(), error) {
		m, err := codextest.StartFakeModel(needScript(n, needID))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(m.ConfigTOML()), 0o600); err != nil {
			m.Close()
			return nil, err
		}
		return func() { m.Close() }, nil
	}}
}
