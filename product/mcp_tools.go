package product

import (
	"context"
	"slices"
	"sync"

	"github.com/needle-dev/needle/product/internal/jsonrpc"
)

// mcpTool is one MCP tool: what tools/list says of it, when the session
// offers it and how tools/call runs it.
type mcpTool struct {
	name, title, description string
	annotations              toolAnnotations
	// available says whether the session can run the tool; a tool it
	// cannot run is neither listed nor callable (an unknown tool).
	available func(s *mcpSession) bool
	input     func(e *Engine) any // the closed inputSchema
	output    func() any          // the outputSchema, offered on 2025-06-18
	call      func(ctx context.Context, s *mcpSession, args []byte) (any, error)
}

// mcpTools is the server's tool table, in the order tools/list gives it.
var mcpTools = []mcpTool{
	{
		name:  "need_context",
		title: "Need context",
		description: "Resolve a typed need (implementation location, runtime flow, focused tests) from certified " +
			"evidence proven fresh for the current source, or a bounded read-only worker, or a typed bypass.",
		// It reads the repository (a worker reads a disposable checkout of
		// it) and never writes the work tree; what it stores is Needle's
		// own bookkeeping. The same need gets the same answer while the
		// source is unchanged.
		annotations: toolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
		available:   func(*mcpSession) bool { return true },
		input:       func(e *Engine) any { return needContextInputSchema(e.Routes()) },
		output:      func() any { return needContextOutputSchema() },
		call: typedCall("need_context", func(s *mcpSession, args []byte) (compiledNeed, error) {
			return s.compiled.compile(args, func() (compiledNeed, error) {
				req, err := DecodeNeedRequest(args)
				if err != nil {
					return compiledNeed{}, err
				}
				return Compile(req, s.cfg.Engine.Routes()) // invalid input changes nothing, not even the store
			})
		}, (*Engine).needCompiled, func(r NeedResult) string { return r.Context }),
	},
	{
		name:  "prepare_change",
		title: "Prepare change",
		description: "Have a bounded patch worker make a change in a disposable checkout, writing only the declared paths. " +
			"Needle builds the patch itself by comparing trees and rejects any write outside the scopes. The change's certified " +
			"tests are the focused_tests artifacts it cites in artifact_ids, or those Needle finds beside the scoped files. " +
			"Nothing is applied; call verify_change with the change_id for the tests and an independent verdict.",
		// Each call makes a new change (a patch in Needle's store), so it is
		// neither read-only nor idempotent; it never writes the work tree
		// or anything outside its disposable checkout, so it destroys
		// nothing, and its workers have no network.
		annotations: toolAnnotations{},
		available: func(s *mcpSession) bool {
			return s.workers() && s.cfg.Profile.Profile.Sandbox.Patch == "workspace-write"
		},
		input:  func(*Engine) any { return prepareChangeInputSchema() },
		output: func() any { return prepareChangeOutputSchema() },
		call: typedCall("prepare_change", func(_ *mcpSession, args []byte) (changeRequest, error) { return DecodeChangeRequest(args) },
			(*Engine).PrepareChange, func(r changeResult) string { return r.Context }),
	},
	{
		name:  "verify_change",
		title: "Verify change",
		description: "Verify a prepared change: Needle runs its certified tests in the sandbox on the patched checkout, then a " +
			"read-only reviewer and an independent verifier judge the patch. A first repairable verdict consumes the one repair " +
			"and one new verification; there is no second repair and no apply (the user approves and applies a verified change).",
		// It runs the change's lifecycle on and records its verdict (and
		// may spend the one repair), so it is not read-only; asking again
		// returns the recorded verdict; like prepare_change it never writes
		// the work tree.
		annotations: toolAnnotations{IdempotentHint: true},
		available:   func(s *mcpSession) bool { return s.workers() },
		input:       func(*Engine) any { return verifyChangeInputSchema() },
		output:      func() any { return verifyChangeOutputSchema() },
		call: typedCall("verify_change", func(_ *mcpSession, args []byte) (string, error) { return decodeChangeID(args) },
			(*Engine).VerifyChange, func(r verifyResult) string { return r.Context }),
	},
}

// typedCall makes a tool's call from its typed parts, so that a handler
// only decodes, calls the engine and encodes: decode turns the arguments
// into the request (an error is -32602, before anything runs), run is the
// engine's method for the session, and text is the result's content text.
// compiledArgs remembers the needs a connection compiled by the exact
// bytes of their arguments: a client asks the same needs again and again,
// and decoding and compiling them was a fifth of an exact hit's request
// path (issue 26). Decoding and Compile are pure functions of those bytes
// and the engine's routes (one per connection), so a remembered need is
// the need the bytes compile to; only what compiled is remembered (an
// invalid request is decoded again, and fails again). Nothing about the
// repository or the store is remembered: the resolution, freshness
// included, runs on every call.
type compiledArgs struct {
	mu sync.Mutex
	m  map[string]compiledNeed
}

// maxCompiledArgs bounds a connection's compiledArgs; past it the memory
// starts over.
const maxCompiledArgs = 256

// compile returns the need args compile to, remembered or by compile.
func (c *compiledArgs) compile(args []byte, compile func() (compiledNeed, error)) (compiledNeed, error) {
	c.mu.Lock()
	need, ok := c.m[string(args)]
	c.mu.Unlock()
	if ok {
		return need.clone(), nil // the caller's own
	}
	need, err := compile()
	if err != nil {
		return need, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCompiledArgs {
		c.m = map[string]compiledNeed{}
	}
	c.m[string(args)] = need.clone()
	return need, nil
}

// clone is a copy of the need that shares no slice with it.
func (n compiledNeed) clone() compiledNeed {
	n.IR.Obligations = slices.Clone(n.IR.Obligations)
	n.IR.World.Features = slices.Clone(n.IR.World.Features)
	return n
}

func typedCall[Req, Res any](tool string, decode func(s *mcpSession, args []byte) (Req, error),
	run func(e *Engine, ctx context.Context, session string, req Req) (Res, error), text func(Res) string,
) func(ctx context.Context, s *mcpSession, args []byte) (any, error) {
	return func(ctx context.Context, s *mcpSession, args []byte) (any, error) {
		req, err := decode(s, args)
		if err != nil {
			return nil, invalidParams(err)
		}
		// What the engine records about an answer (its accounting) waits
		// until the transport has written it: an answer that never reached
		// the client is never recorded.
		actx := ctx
		if hctx, hook := withAnswerHook(ctx); jsonrpc.OnAnswered(ctx, func(written bool) { hook.answered(s.cfg.Engine, written) }) {
			actx = hctx
		}
		res, err := run(s.cfg.Engine, actx, s.id, req)
		if err != nil {
			return s.callFailed(ctx, tool, err)
		}
		return s.toolResult(text(res), res), nil
	}
}
