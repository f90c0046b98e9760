package product

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/needle-dev/needle/product/internal/checkout"
	"github.com/needle-dev/needle/product/internal/schema"
	"github.com/needle-dev/needle/product/lifecycle"
)

// The Codex App Server adapters of the lifecycle: the evidence worker for
// explore (through the need pipeline, so only certified evidence comes
// back), the patch worker for implement, and read-only reviewer and
// verifier workers. Each runs in a disposable checkout of the frozen
// snapshot (a work tree that moved is a conflict, not a worker failure),
// with the patch in force laid on it where the phase needs it, under its
// role's model and effort. The thread carries a content id of everything
// the prompt depends on, so frozen transcripts are found again in replay.

// codexAdapters are the defaults of an engine with an App Server.
type codexAdapters struct{ e *Engine }

func (c codexAdapters) adapters(tests *testAdapter) lifecycleAdapters {
	a := lifecycleAdapters{Explore: c.explore, Test: tests.run}
	if c.e.codex != nil {
		a.Implement, a.Review, a.Verify = c.implement, c.review, c.verify
	}
	return a
}

// explore resolves the lifecycle's needs through the need pipeline (which
// runs the evidence worker for what evidence cannot answer and validates
// what it proposes) and returns the artifacts the answers cite, with the
// request's own artifacts, and what the evidence workers cost: their
// tokens, their number and their time. Each need is recorded apart
// (invocation.go, parts 1…n): every evidence worker's start and result
// are on record under the explore invocation.
func (c codexAdapters) explore(ctx context.Context, req exploreRequest) (exploreResult, error) {
	res := exploreResult{Evidence: append([]string{}, req.ArtifactIDs...)}
	var threads []string
	for i, n := range req.Needs {
		r, err := recorded(ctx, c.e, req.AdapterCall, i+1, func(ctx context.Context) (exploreResult, error) {
			return c.exploreNeed(ctx, n)
		})
		res.Usage = res.Usage.add(r.Usage)
		res.Workers += r.Workers
		if r.Thread != "" {
			threads = append(threads, r.Thread)
		}
		if err != nil {
			return res, err
		}
		res.Evidence = append(res.Evidence, r.Evidence...)
	}
	res.Thread = strings.Join(threads, " ")
	return res, nil
}

// exploreNeed resolves one need: the artifacts its answer cites (none for
// a bypass), and the evidence worker it ran, if any.
func (c codexAdapters) exploreNeed(ctx context.Context, n NeedRequest) (exploreResult, error) {
	r, run, err := c.e.needContextRun(ctx, newSessionID("lcy"), n)
	res := exploreResult{Evidence: []string{}, Usage: run.Usage}
	if run.Spawned {
		res.Workers = 1
	}
	if err != nil {
		return res, err
	}
	if r.Status != resultBypass {
		res.Evidence = r.Resolution.ArtifactIDs
	}
	return res, nil
}

func (c codexAdapters) implement(ctx context.Context, req implementRequest) (implementResult, error) {
	laid := storedOps(req.Laid)
	att := patchAttempt{revision: req.Round}
	var repair *verificationRecord
	if req.Repair != nil {
		repair = &verificationRecord{Criteria: req.Repair.Criteria, Repair: req.Repair.Instructions}
	}
	requestID := mustID(tagChangeRequest, req.Request)
	spec := sessionSpec{
		Scenario: "lifecycle-implement ",
		Invocation: func(snap string) string {
			return mustID(tagInvocation, map[string]any{"role": "lifecycle-implement", "request": requestID,
				"laid": patchIDOrNone(req.Laid), "repair": repair, "context": req.Context, "snapshot": snap})
		},
		Lay: writes(laid), LayBase: baseOf(laid), Snapshot: req.Snapshot, Model: req.Role.Model, Effort: req.Role.Effort,
		Instructions: patchInstructions,
		OnRequest:    answerWorkerRequest,
		Turns:        []turnSpec{{Label: "patch", Prompt: patchPrompt(req.Request, req.Context, repair), Schema: patchReportSchema()}},
		After:        func(ctx context.Context, co *checkout.Checkout) error { return att.build(ctx, co, req.Request, laid) },
	}
	out, err := c.e.codex.run(ctx, c.e.root, spec)
	// run made the checkout of exactly the frozen snapshot (spec.Snapshot)
	// before it laid anything: that is the patch's base.
	res := implementResult{Base: req.Snapshot, Usage: out.Usage, Thread: out.Invocation}
	if err != nil {
		return res, err
	}
	att.finish(out, nil, len(req.Request.Criteria))
	res.Report = att.raw
	if att.status == patchAccepted {
		res.Patch = patchFiles(att.ops)
	} else {
		res.Rejected = att.reasons
	}
	return res, nil
}

func patchIDOrNone(files []patchFile) string {
	if len(files) == 0 {
		return ""
	}
	return patchID(files)
}

const reviewInstructions = "You are a Needle reviewer. The current directory is a read-only checkout with a change applied. " +
	"Review the change for defects, risks and anything a careful maintainer would question; never modify anything. " +
	"You see the acceptance criteria only as opaque digests: judge the change on its own merits. Answer with exactly one " +
	"JSON object that matches the output schema: findings, each with a severity (info, minor, major), the criterion number " +
	"it concerns (0 for the change as a whole) and a one-line summary."

// reviewSchema is the outputSchema of a reviewer's final message.
// It is encoded on first use: package init runs in every needle process.
var reviewSchema = sync.OnceValue(func() json.RawMessage {
	return json.RawMessage(mustJSON(schema.Strict(map[string]any{
		"findings": map[string]any{"type": "array", "maxItems": lifecycle.MaxFindings, "items": schema.Strict(map[string]any{
			"severity":  schema.Enum(lifecycle.FindingSeverities...),
			"criterion": map[string]any{"type": "integer", "minimum": 0, "maximum": maxCriteria},
			"summary":   map[string]any{"type": "string"},
		})},
	})))
})

func (c codexAdapters) review(ctx context.Context, req reviewRequest) (reviewResult, error) {
	laid := storedOps(req.Patch)
	spec := sessionSpec{
		Scenario: "lifecycle-review ",
		Invocation: func(snap string) string {
			return mustID(tagInvocation, map[string]any{"role": "lifecycle-review", "patch": patchID(req.Patch),
				"criteria": req.Criteria, "snapshot": snap})
		},
		Lay: writes(laid), LayBase: baseOf(laid), Snapshot: req.Snapshot, Model: req.Role.Model, Effort: req.Role.Effort,
		ReadOnly:     true,
		Instructions: reviewInstructions,
		OnRequest:    answerWorkerRequest,
		Turns:        []turnSpec{{Label: "review", Prompt: reviewPrompt(req), Schema: reviewSchema()}},
	}
	out, err := c.e.codex.run(ctx, c.e.root, spec)
	res := reviewResult{Usage: out.Usage, Thread: out.Invocation}
	if err == nil {
		res.Answer = out.Finals[0]
	}
	return res, err
}

// reviewPrompt shows the reviewer the change and the redacted criteria.
func reviewPrompt(req reviewRequest) string {
	var b strings.Builder
	b.WriteString("Review this change (the checkout holds it).\nFiles:\n")
	for _, f := range req.Patch {
		fmt.Fprintf(&b, "- %s %s\n", f.Op, f.Path)
	}
	b.WriteString("Acceptance criteria (redacted digests, numbered from 1):\n")
	for i, d := range req.Criteria {
		fmt.Fprintf(&b, "%d. %s\n", i+1, d)
	}
	if req.Diff != "" {
		fmt.Fprintf(&b, "The diff:\n%s", clipLines(req.Diff, 32<<10))
	}
	return b.String()
}

func (c codexAdapters) verify(ctx context.Context, req verifyRequest) (verifierResult, error) {
	laid := storedOps(req.Patch)
	requestID := mustID(tagChangeRequest, req.Request)
	spec := sessionSpec{
		Scenario: "lifecycle-verify ",
		Invocation: func(snap string) string {
			return mustID(tagInvocation, map[string]any{"role": "lifecycle-verify", "request": requestID,
				"patch": patchID(req.Patch), "tests": req.Tests, "context": req.Context, "snapshot": snap})
		},
		Lay: writes(laid), LayBase: baseOf(laid), Snapshot: req.Snapshot, Model: req.Role.Model, Effort: req.Role.Effort,
		ReadOnly:     true,
		Instructions: verifyInstructions,
		OnRequest:    answerWorkerRequest,
		Turns:        []turnSpec{{Label: "verify", Prompt: lifecycleVerifyPrompt(req), Schema: verdictSchema()}},
	}
	out, err := c.e.codex.run(ctx, c.e.root, spec)
	res := verifierResult{Usage: out.Usage, Thread: out.Invocation}
	if err == nil {
		res.Answer = out.Finals[0]
	}
	return res, err
}

// lifecycleVerifyPrompt is the verifier's prompt: the task, the criteria,
// the files, the certified context and the outcome of every test Needle
// ran on this checkout — no review and nothing the implementer said.
func lifecycleVerifyPrompt(req verifyRequest) string {
	var b strings.Builder
	b.WriteString(verifyPrompt(req.Request, req.Context, publicOps(req.Patch)))
	b.WriteString("Tests Needle ran on this checkout (a failing test means a criterion it covers is not met):\n")
	for _, t := range req.Tests {
		fmt.Fprintf(&b, "- %s (%s): %s\n", t.Test, t.Command, t.Outcome)
	}
	return b.String()
}
