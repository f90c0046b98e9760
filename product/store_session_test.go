package product

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/needle-dev/needle/product/internal/contentid"
)

// MustCreateSession creates session id under definition defID.
func MustCreateSession(tb testing.TB, s *Store, id, defID string) {
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
		wantStoreError(t, err, KindStore, "session s1 already exists")
	})
	t.Run("ErrUnknownDefinition", func(t *testing.T) {
		err := s.CreateSession(ctx, "s3", contentid.OfBytes("x", nil), "cli", nil, "")
		wantStoreError(t, err, KindNotFound, "not found")
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
		wantStoreError(t, err, KindNotFound, "session nosuch: not found")
	})
	t.Run("ErrUnknownNeed", func(t *testing.T) {
		other := contentid.OfBytes("x", nil)
		_, err := s.AppendStep(ctx, "a", other, "repeat", "")
		wantStoreError(t, err, KindNotFound, "need "+other+": not found")
	})
}
