package product

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const markerNewSearcher = "I need to see where a Searcher is built.\n@@need locate.implementation symbol:NewSearcher"

// reply answers one message of the session's turn; with fresh it does so in
// a new engine, as the Codex hook does once per stop.
func (te *testEngine) reply(session, turn, text string) reply {
	te.tb.Helper()
	rev, err := te.Profile(context.Background(), DefaultProfileID)
	if err != nil {
		te.tb.Fatal(err)
	}
	if err := te.ResumeSession(context.Background(), session, sessionFreeze{Profile: rev, Protocol: "test"}); err != nil {
		te.tb.Fatal(err)
	}
	r, err := te.Reply(context.Background(), markerMessage{Session: session, Turn: turn, Text: text})
	if err != nil {
		te.tb.Fatalf("Reply(%q): %v", text, err)
	}
	if len(r.Text) > maxReplyBytes || (r.Kind == replyNone) != (r.Text == "") {
		te.tb.Fatalf("reply %+v: text of %d bytes", r, len(r.Text))
	}
	return r
}

func (te *testEngine) replyRows(session string) (n int) {
	te.tb.Helper()
	if err := te.store.db.QueryRow(`SELECT count(*) FROM replies WHERE session_id = ?`, session).Scan(&n); err != nil {
		te.tb.Fatal(err)
	}
	return n
}

func TestReply_Hit(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true))
	te.mustCertify(locNewSearcher)
	s := codexSession("t1")
	r := te.reply(s, "turn1", markerNewSearcher)
	if r.Kind != replyContext || r.Final || r.Result == nil || r.Result.Resolution.Kind != ResolutionCoverage {
		t.Fatalf("reply %+v", r)
	}
	if !strings.Contains(r.Text, "search.go:15-17") || !strings.HasPrefix(r.Text, "Needle answered your @@need marker") ||
		!strings.HasSuffix(r.Text, r.Result.Context) {
		t.Errorf("reply text:\n%s", r.Text)
	}
	// The model repeats the marker in the same turn: it has the answer.
	if again := te.reply(s, "turn1", "Thanks.\n"+markerNewSearcher); again.Kind != replyNone {
		t.Errorf("a need answered in this turn was answered again: %+v", again)
	}
	// A later user turn may ask again: an exact hit, free of the need limit.
	te.reopen()
	later := te.reply(s, "turn2", markerNewSearcher)
	if later.Kind != replyContext || later.Result.Resolution.Kind != ResolutionExact || later.Result.Step.Relation != relationRepeat {
		t.Errorf("later turn: %+v", later)
	}
	if n := te.replyRows(s); n != 2 {
		t.Errorf("%d replies recorded, want 2", n)
	}
}

func TestReply_Nothing(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	s := codexSession("t2")
	for _, msg := range []string{"", "Done: NewSearcher builds it.", "Ask like this:\n```\n@@need locate.implementation symbol:X\n```",
		"> @@need locate.implementation symbol:X"} {
		if r := te.reply(s, "turn", msg); r.Kind != replyNone {
			t.Errorf("Reply(%q) = %+v", msg, r)
		}
	}
	if n := te.replyRows(s); n != 0 {
		t.Errorf("%d replies recorded", n)
	}
}

func TestReply_Invalid(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	s := codexSession("t3")
	for name, tc := range map[string]struct{ msg, says string }{
		"Malformed": {"Let me ask.\n@@need locate.implementation symbol:", "subject"},
		"Two":       {"@@need locate.implementation symbol:A\n\n@@need tests.relevant symbol:A", "2 @@need marker lines; want exactly one"},
		"Route":     {"@@need locate.everything symbol:A", "route"},
		"Long":      {"@@need locate.implementation symbol:" + strings.Repeat("é", maxMarkerBytes), "bytes"},
	} {
		r := te.reply(s, "turn-"+name, tc.msg)
		if r.Kind != replyInvalid || r.Result != nil || !strings.Contains(r.Text, tc.says) ||
			!strings.HasPrefix(r.Text, "Needle could not read your @@need marker") || len(r.Text) > maxInvalidReplyBytes+len(lastReplyNote) {
			t.Errorf("%s: reply %+v (%d bytes)", name, r, len(r.Text))
		}
	}
}

// TestReply_AsksForever: a model that answers every reply with another
// marker is answered replyLimit times in one turn, the last reply says so,
// and then it gets nothing — whether it asks for new needs, repeats
// itself or writes markers that do not read, and whether the engine lives
// on or each stop runs in a new process.
func TestReply_AsksForever(t *testing.T) {
	limit := replyLimit(Limits{}.clamp())
	for _, fresh := range []bool{false, true} {
		for name, next := range map[string]func(i int) string{
			"NewNeeds":  func(i int) string { return fmt.Sprintf("@@need locate.implementation symbol:F%d", i) },
			"Malformed": func(int) string { return "@@need locate.implementation" },
		} {
			t.Run(fmt.Sprintf("%s/fresh=%v", name, fresh), func(t *testing.T) {
				te := MustEngine(t, MustFixtureRepo(t, "grepx", false), func(c *Config) { c.CacheOnly = true })
				s := codexSession("forever")
				var got []reply
				for i := range 3 * limit {
					if fresh {
						te.reopen(func(c *Config) { c.CacheOnly = true })
					}
					got = append(got, te.reply(s, "turn", next(i)))
				}
				for i, r := range got {
					if answered := r.Kind != replyNone; answered != (i < limit) {
						t.Fatalf("reply %d of %d: %+v (limit %d)", i, len(got), r, limit)
					}
					final := i == limit-1
					if r.Final != final || strings.HasSuffix(r.Text, lastReplyNote) != final {
						t.Errorf("reply %d: final %v, text %q", i, r.Final, r.Text)
					}
				}
				if name == "NewNeeds" && !strings.Contains(got[limit-1].Text, "session need limit (3) reached") {
					t.Errorf("the last reply does not name the limit:\n%s", got[limit-1].Text)
				}
				// Another user turn of the session: its needs are used up, so
				// it gets the typed bypass once, as its last reply.
				if name == "NewNeeds" {
					r := te.reply(s, "turn2", next(99))
					if r.Kind != replyBypass || !r.Final {
						t.Errorf("next turn: %+v", r)
					}
					if again := te.reply(s, "turn2", next(100)); again.Kind != replyNone {
						t.Errorf("next turn after its last reply: %+v", again)
					}
				}
			})
		}
	}
}

// TestReply_SharesTheLedger: replies resolve in the session's ledger like
// MCP calls, rebuilt from the store by a new process.
func TestReply_SharesTheLedger(t *testing.T) {
	w := &scriptedWorker{answers: map[CapabilityKind]string{capImplementationLocation: locNewSearcher}}
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true), func(c *Config) { c.Worker = w })
	s := codexSession("ledger")
	r := te.reply(s, "turn", markerNewSearcher)
	if r.Kind != replyContext || !r.Result.WorkerSpawned || r.Result.Status != resultWorker {
		t.Fatalf("reply %+v", r)
	}
	te.reopen(func(c *Config) { c.Worker = w })
	l, err := te.ledger(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if l.Needs != 1 || l.Workers != 1 || len(l.Entries) != 1 || l.Entries[0].NeedID != r.Result.NeedID {
		t.Errorf("rebuilt ledger %+v", l)
	}
	// The same need through the engine's MCP path is a repeat of it.
	again := te.needIn(s, needLocateNewSearcher)
	if again.Step.Relation != relationRepeat || again.Step.Ordinal != 2 {
		t.Errorf("step %+v", again.Step)
	}
}

func TestResumeSession_OtherRepository(t *testing.T) {
	te := MustEngine(t, MustFixtureRepo(t, "grepx", false))
	s := codexSession("moved")
	te.reply(s, "turn", "nothing")
	other := MustFixtureRepo(t, "grepx", false)
	te.reopen(func(c *Config) { c.Repository = other })
	rev, _ := te.Profile(context.Background(), DefaultProfileID)
	err := te.ResumeSession(context.Background(), s, sessionFreeze{Profile: rev})
	if KindOf(err) != kindConflict {
		t.Errorf("ResumeSession in another repository: %v", err)
	}
}

// TestReply_SessionResumedUnderChanges: a Codex session resumed by a
// process whose prompt profile, marker grammar or transport contract is
// not what the session froze (an older needle started it) says so, in
// every reply; resumed under the same ones, it says nothing.
func TestReply_SessionResumedUnderChanges(t *testing.T) {
	hook := func(c *Config) { c.Transport = "codex-hook" }
	te := MustEngine(t, MustFixtureRepo(t, "grepx", true), hook)
	te.mustCertify(locNewSearcher)
	s := codexSession("t-changes")
	first := te.reply(s, "turn1", markerNewSearcher)
	te.reopen(hook)
	again := te.reply(s, "turn2", markerNewSearcher)
	if strings.Contains(first.Text+again.Text, "Needle note") || len(te.SessionChanges(s)) != 0 {
		t.Fatalf("a session resumed under what it froze reports changes: %v\n%s", te.SessionChanges(s), again.Text)
	}
	// What an older needle froze: other digests of each kind.
	for _, col := range []string{"transport_digest", "grammar_digest", "prompt_profile_digest"} {
		if _, err := te.store.db.Exec(`UPDATE session_digests SET `+col+` = 'b3:`+strings.Repeat("e", 64)+`' WHERE session_id = ?`, s); err != nil {
			t.Fatal(err)
		}
	}
	te.reopen(hook)
	r := te.reply(s, "turn3", markerNewSearcher)
	changes := te.SessionChanges(s)
	for _, want := range []string{"the codex-hook transport's contract (b3:eeeeeeeeeeee… then", "the @@need marker grammar (b3:eeeeeeeeeeee… then",
		"the worker prompt profile (revision 1 b3:eeeeeeeeeeee… then, revision 1 " + shortDigest(currentPromptProfile().Digest) + " now)"} {
		if !slices.ContainsFunc(changes, func(c string) bool { return strings.HasPrefix(c, want) }) {
			t.Errorf("changes %q lack %q", changes, want)
		}
	}
	if len(changes) != 3 || !strings.HasPrefix(r.Text, "Needle note: since this session started, the codex-hook transport's contract") ||
		!strings.Contains(r.Text, "\nNeedle answered your @@need marker") || r.Kind != replyContext {
		t.Errorf("the reply does not say what changed first:\n%s", r.Text)
	}
}
