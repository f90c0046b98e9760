package product

import (
	"context"
	"slices"
)

// Reply decides and records what Needle answers to a main model's message
// (reply.go):
//
//   - no marker at the message's top level (markerLines): nothing;
//   - the user turn already had its last reply, or replyLimit replies:
//     nothing;
//   - more than one marker, or one that does not parse or compile: the
//     problem, named in a bounded text;
//   - a need this turn was already answered: nothing (the model has it);
//   - otherwise the need is resolved like an MCP need_context call of the
//     session (the same ledger and limits, the same workers) and the reply
//     is its FrontierView or its typed bypass. A bypass because the
//     session's need limit is reached is the turn's last reply.
//
// The last reply a turn may get says so. Every reply is recorded
// (replies) before it is returned, so a process that answers the next stop
// of the turn counts it.
func (e *Engine) Reply(ctx context.Context, m markerMessage) (reply, error) {
	lines := markerLines(m.Text)
	if len(lines) == 0 {
		return reply{Kind: replyNone, Why: "no @@need marker"}, nil
	}
	var need compiledNeed
	var invalid error
	if len(lines) > 1 {
		invalid = invalidf(opMarker, "marker", "%d @@need marker lines; want exactly one", len(lines))
	} else {
		need, invalid = compileMarker(lines[0], e.cfg.Routes)
	}
	if err := e.turn.lock(ctx); err != nil {
		return reply{}, err
	}
	defer e.turn.unlock()
	ledger, err := e.ledger(ctx, m.Session)
	if err != nil {
		return reply{}, err
	}
	done, err := e.store.turnReplies(ctx, m.Session, m.Turn)
	switch {
	case err != nil:
		return reply{}, err
	case done.Final || done.Count >= replyLimit(e.cfg.Limits):
		return reply{Kind: replyNone, Why: "this turn had its last reply"}, nil
	case invalid == nil && slices.Contains(done.Needs, need.ID):
		return reply{Kind: replyNone, Why: "this need was answered in this turn"}, nil
	}
	last := done.Count+1 >= replyLimit(e.cfg.Limits)
	var r reply
	if invalid != nil {
		r = invalidReply(invalid, e.cfg.Routes)
		if last {
			r.Text += lastReplyNote
			r.Final = true
		}
	} else {
		res, err := e.needContext(ctx, m.Session, need)
		if err != nil {
			return reply{}, err
		}
		// The reply names its step: the answer's accounting, queued when
		// needContext returned, is written first.
		if err := e.acct.flush(context.WithoutCancel(ctx)); err != nil {
			return reply{}, err
		}
		limited := res.Status == resultBypass && ledger.Needs > e.cfg.Limits.Needs
		r = resolvedReply(res, last || limited)
	}
	if len(ledger.changes) > 0 {
		r.Text = clipReply(sessionChangesNote(ledger.changes)+r.Text, maxReplyBytes)
	}
	if err := e.store.putReply(context.WithoutCancel(ctx), m.Session, m.Turn, r); err != nil {
		return reply{}, err
	}
	return r, nil
}
