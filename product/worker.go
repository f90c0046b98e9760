package product

import (
	"context"
	"encoding/json"
)

// workerPort receives worker requests for missing obligations. The Codex
// App Server evidence worker implements it; so can any bounded worker. What
// it returns is untrusted: every proposal goes through the validators.
type workerPort interface {
	Propose(ctx context.Context, req workerRequest) (workerResult, error)
}

// workerRequest asks for proposals for the missing obligations of a need.
type workerRequest struct {
	NeedID     string
	IR         needIR
	Task       string
	Missing    []obligation
	Repository string
	// Schemas holds the strict proposal JSON Schema of each missing kind.
	Schemas map[CapabilityKind]json.RawMessage
	// Model and Effort are the role profile's worker model and reasoning
	// effort; "" leaves the worker's own default.
	Model, Effort string
	// Session is the session the need was asked in, and Continues the
	// earlier needs of that session this one is a residual or an extension
	// of (ledger.continues): a worker that still holds the thread one of
	// them ran in may continue it rather than start afresh. Neither is
	// part of the invocation identity: the prompt of a fresh worker does
	// not depend on them.
	Session   string
	Continues []string
}

// workerResult is what a worker proposed and what it cost.
type workerResult struct {
	Proposals  [][]byte // raw proposal JSON, one per missing obligation
	Usage      workerUsage
	Invocation string // the worker's identity for this request, if it has one
}

// workerUsage is the accounting of one worker run.
type workerUsage struct {
	InputTokens  int64
	OutputTokens int64
	TotalTokens  int64
	CostUSD      float64
	LatencyMs    float64
}

// add sums two runs' accounting.
func (u workerUsage) add(v workerUsage) workerUsage {
	return workerUsage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		TotalTokens: u.TotalTokens + v.TotalTokens, CostUSD: u.CostUSD + v.CostUSD, LatencyMs: u.LatencyMs + v.LatencyMs}
}

// WorkerTotals sums the worker runs recorded for the engine's repository.
func (e *Engine) WorkerTotals(ctx context.Context) (WorkerTotals, error) {
	return e.store.workerTotals(ctx, e.root)
}

// WorkerTotals is the accounting of every worker run an engine's store
// recorded for its repository.
type WorkerTotals struct {
	Runs         int     `json:"runs"`
	Failed       int     `json:"failed"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	TotalTokens  int64   `json:"total_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}
