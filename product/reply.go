package product

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// A main model that runs in Codex asks for a need by writing a @@need
// marker in its message; the Codex Stop hook (hook.go) and needle exec
// (exec.go) hand that message to Engine.Reply, which decides what Needle
// says back — the continuation that makes the model go on. Both transports
// share this decision, the session ledger and its limits; they differ only
// in how the reply reaches the model.

// markerMessage is a message of a main model that may hold a marker.
type markerMessage struct {
	// Session is the Needle session: "codex:" and the Codex thread id, so
	// the hook and needle exec share the ledger of one Codex session.
	Session string
	// Turn names the user turn the message belongs to: replies are
	// bounded per user turn, because each one makes the model go on
	// without the user (the Codex turn of a hook, the first turn of a
	// needle exec run).
	Turn string
	Text string
}

// codexSession is the Needle session of a Codex thread.
func codexSession(threadID string) string { return "codex:" + threadID }

// replyKind says what Needle answered.
type replyKind string

const (
	replyNone    replyKind = "none"    // nothing: the model ends its turn
	replyContext replyKind = "context" // the FrontierView of a resolved need
	replyBypass  replyKind = "bypass"  // a typed bypass: the model works natively
	replyInvalid replyKind = "invalid" // the marker does not read; the problem is named
)

// reply is Needle's answer to a marker message.
type reply struct {
	Kind replyKind
	// Text is the continuation for the main model (at most maxReplyBytes);
	// empty for replyNone.
	Text string
	// Final: this turn gets no further reply.
	Final bool
	// Result is the resolution behind a context or bypass reply.
	Result *NeedResult
	// Why says, for replyNone, why nothing is said.
	Why string
}

// maxReplyBytes bounds a reply's text: a header and a FrontierView within
// its default budget fit; it stays below what codex passes on whole to a
// model as a hook's continuation (codexhook.MaxReason).
const maxReplyBytes = 8 << 10

// maxInvalidReplyBytes bounds the reply to a marker that does not read: it
// names the problem, nothing more.
const maxInvalidReplyBytes = 1 << 10

// replyLimit is how many replies one user turn gets: one per need the
// session may resolve, and one more to say that its limit is reached (or
// that a marker does not read). Past it the model's turn simply ends, so a
// model that asks for ever is answered a bounded number of times.
func replyLimit(l Limits) int { return l.Needs + 1 }

// resolvedReply is the reply carrying a resolution: its FrontierView
// behind a line that tells the model what it is. final adds that the turn
// gets no more replies.
func resolvedReply(r NeedResult, final bool) reply {
	kind, lead := replyContext, "Needle answered your @@need marker with certified evidence, proven fresh for the current source:"
	switch {
	case r.Status == resultBypass:
		kind, lead = replyBypass, "Needle has no answer to your @@need marker; do this work yourself:"
	case r.Status == resultPartial:
		lead = "Needle answered part of your @@need marker with certified evidence, proven fresh for the current source:"
	}
	text := lead + "\n" + r.Context
	if final {
		text += lastReplyNote
	}
	return reply{Kind: kind, Text: clipReply(text, maxReplyBytes), Final: final, Result: &r}
}

// sessionChangesNote begins every reply of a session resumed under other
// definitions than it froze (Engine.ResumeSession): it says which.
func sessionChangesNote(changes []string) string {
	return "Needle note: since this session started, " + strings.Join(changes, "; ") +
		" changed; this answer follows the current ones.\n"
}

// lastReplyNote ends the last reply of a turn.
const lastReplyNote = "Needle answers no more @@need markers in this turn.\n"

// invalidReply names what is wrong with a marker, so the model can write
// it again, or go on without it.
func invalidReply(err error, routes routeSet) reply {
	var e *Error
	problem := err.Error()
	if errors.As(err, &e) && e.Err != nil {
		problem = e.Err.Error()
		if e.Path != "" && e.Path != "marker" {
			problem = e.Path + ": " + problem
		}
	}
	text := fmt.Sprintf("Needle could not read your @@need marker: %s. To ask, write exactly one line "+
		"\"@@need ROUTE KIND:NAME\" (routes: %s) on its own, outside code blocks, quotes and lists; "+
		"or continue without it.\n", oneLine(problem), strings.Join(routeNames(routes), ", "))
	return reply{Kind: replyInvalid, Text: clipReply(text, maxInvalidReplyBytes)}
}

func routeNames(rs routeSet) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// clipReply cuts text to max bytes on a rune boundary.
func clipReply(text string, max int) string {
	if len(text) <= max {
		return text
	}
	const tail = "…\n"
	cut := max - len(tail)
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + tail
}
