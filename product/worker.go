package product

import (
	"context"
	"encoding/json"
)

// WorkerPort receives worker requests for missing obligations. The Codex
// App Server evidence worker implements it; so can any bounded worker. What
// it returns is untrusted: every proposal goes through the validators.
type WorkerPort interface {
	Propose(ctx context.Context, req WorkerRequest) (WorkerResult, error)
}

// WorkerRequest asks for proposals for the missing obligations of a need.
type WorkerRequest struct {
	NeedID     string
	IR         NeedIR
	Task       string
	Missing    []Obligation
	Repository string
	// Schemas holds the strict proposal JSON Schema of each missing kind.
	Schemas map[CapabilityKind]json.RawMessage
	// Model and Effort are the role profile's worker model and reasoning
	// effort; "" leaves the worker's own default.
	Model, Effort string
}

// WorkerResult is what a worker proposed and what it cost.
type WorkerResult struct {
	Proposals  [][]byte // raw proposal JSON, one per missing obligation
	Usage      WorkerUsage
	Invocation string // the worker's identity for this request, if it has one
}

// WorkerUsage is the accounting of one worker run.
type WorkerUsage struct {
	InputTokens  int64
	OutputTokens int64
	TotalTokens  int64
	CostUSD      float64
	LatencyMs    float64
}

// add sums two runs' accounting.
func (u WorkerUsage) add(v WorkerUsage) WorkerUsage {
	return WorkerUsage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
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
