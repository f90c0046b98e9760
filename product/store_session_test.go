package product

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// MustCreateSession creates session id under definition defID.
func MustCreateSession(tb testing.TB, s *store, id, defID string) {
	tb.Helper()
	if err := s.CreateSession(context.Background(), id, defID, "mcp", []string{"locate.implementation"}, "gpt-5"); err != nil {
		tb.Fatal(err)
	}
}

func TestStore_CreateSession(t *testing.T) {
	ctx := context.Background()
	s := MustOpenStore(t, t.TempDir())
	def := MustPutDefinition(t, s, `{}`)
	MustCreateSession(t, s, "s1", def)
	t.Run("NilRoutes", func(t *testing.T) {
		if err := s.CreateSession(ctx, "s2", def, "hook", nil, ""); err != nil {
			t.Fatal(err)
		}
		var routes string
		s.db.QueryRow("SELECT routes FROM sessions WHERE session_id = 's2'").Scan(&routes)
		if routes != "[]" {
			t.Errorf("routes = %q, want []", routes)
		}
	})
	t.Run("ErrDuplicate", func(t *testing.T) {
		err := s.CreateSession(ctx, "s1", def, "cli", nil, "")
		wantStoreError(t, err, kindStore, "session s1 already exists")
	})
	t.Run("ErrUnknownDefinition", func(t *testing.T) {
		err := s.CreateSession(ctx, "s3", contentid.OfBytes("x", nil), "cli", nil, "")
		wantStoreError(t, err, kindNotFound, "not found")
	})
}

func TestStore_AppendStep(t *testing.T) {
	ctx := context.Background()
	s := MustOpenStore(t, t.TempDir())
	def := MustPutDefinition(t, s, `{}`)
	need := MustPutNeed(t, s, def, `{}`)
	MustCreateSession(t, s, "a", def)
	MustCreateSession(t, s, "b", def)
	t.Run("OK", func(t *testing.T) {
		var got []int
		for _, session := range []string{"a", "a", "b", "a"} {
			n, err := s.AppendStep(ctx, session, need, "repeat", "find it")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		if diff := cmp.Diff([]int{1, 2, 1, 3}, got); diff != "" {
			t.Errorf("ordinals (-want +got):\n%s", diff)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		MustCreateSession(t, s, "c", def)
		const n = 16
		seen := make([]bool, n+1)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				ord, err := s.AppendStep(ctx, "c", need, "repeat", "")
				mu.Lock()
				defer mu.Unlock()
				if err != nil || ord < 1 || ord > n || seen[ord] {
					t.Errorf("AppendStep = %d, %v", ord, err)
					return
				}
				seen[ord] = true
			})
		}
		wg.Wait()
	})
	t.Run("ErrUnknownSession", func(t *testing.T) {
		_, err := s.AppendStep(ctx, "nosuch", need, "repeat", "")
		wantStoreError(t, err, kindNotFound, "session nosuch: not found")
	})
	t.Run("ErrUnknownNeed", func(t *testing.T) {
		other := contentid.OfBytes("x", nil)
		_, err := s.AppendStep(ctx, "a", other, "repeat", "")
		wantStoreError(t, err, kindNotFound, "need "+other+": not found")
	})
}

// TestSession_FreezesDigests: every session records the digest of its
// transport's contract, the marker grammar (a marker transport only) and
// the prompt profile, with its row: an MCP session frozen at initialize,
// a hook session resumed, and a session a need starts through the API.
func TestSession_FreezesDigests(t *testing.T) {
	ctx := context.Background()
	repo := MustFixtureRepo(t, "grepx", false)
	te := MustEngine(t, repo, withoutSandbox)
	rev, err := te.Profile(ctx, DefaultProfileID)
	if err != nil {
		t.Fatal(err)
	}
	frozen := func(e *Engine, id string) sessionDigests {
		t.Helper()
		if err := e.acct.flush(ctx); err != nil {
			t.Fatal(err)
		}
		f, ok, err := e.store.frozenSession(ctx, id)
		if err != nil || !ok {
			t.Fatalf("session %s: %v %v", id, ok, err)
		}
		return f.Digests
	}
	open := func(transport string) *Engine {
		e, err := openEngine(ctx, Config{DataDir: te.data, Repository: repo, Transport: transport, CacheOnly: true}, te.store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	mcp, hook := open("mcp"), open("codex-hook")
	if err := mcp.FreezeSession(ctx, "mcp-1", sessionFreeze{Profile: rev, Protocol: "2025-06-18"}); err != nil {
		t.Fatal(err)
	}
	if err := hook.ResumeSession(ctx, "codex:1", sessionFreeze{Profile: rev, Protocol: "codex-hook " + codexVersion}); err != nil {
		t.Fatal(err)
	}
	te.need(needLocateNewSearcher)
	if err := te.acct.flush(ctx); err != nil { // a session a need starts is the accounting of its answer
		t.Fatal(err)
	}
	var api string
	if err := te.store.db.QueryRow(`SELECT session_id FROM sessions WHERE session_id LIKE 'test%'`).Scan(&api); err != nil {
		t.Fatal(err)
	}
	got := map[string]sessionDigests{"mcp": frozen(mcp, "mcp-1"), "codex-hook": frozen(hook, "codex:1"), "api": frozen(te.Engine, api)}
	want := map[string]sessionDigests{
		"mcp":        currentSessionDigests("mcp", "2025-06-18", AllRoutes()),
		"codex-hook": currentSessionDigests("codex-hook", "codex-hook "+codexVersion, AllRoutes()),
		"api":        currentSessionDigests("api", "", AllRoutes()),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frozen digests (-want +got):\n%s", diff)
	}
	p := currentPromptProfile()
	for transport, d := range got {
		if d.PromptRevision != promptProfileRevision || d.PromptDigest != p.Digest || !contentid.Valid(d.Transport) ||
			(d.Grammar == markerGrammar()) != (transport == "codex-hook") {
			t.Errorf("%s session froze %+v", transport, d)
		}
	}
	if got["mcp"].Transport == got["api"].Transport || got["api"].Transport == got["codex-hook"].Transport {
		t.Errorf("transports share a contract digest: %+v", got)
	}
	// Another protocol or route set is another contract.
	if currentSessionDigests("mcp", "2024-11-05", AllRoutes()).Transport == got["mcp"].Transport ||
		currentSessionDigests("mcp", "2025-06-18", routeSet{routeLocateImplementation}).Transport == got["mcp"].Transport {
		t.Error("the MCP contract digest ignores the protocol or the routes")
	}
}
