package product

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/needle-dev/needle/product/internal/contentid"
)

// MustPutDefinition stores body as a definition and returns its id.
func MustPutDefinition(tb testing.TB, s *Store, body string) string {
	tb.Helper()
	id := contentid.OfBytes("needle.test.definition", []byte(body))
	if err := s.PutDefinition(context.Background(), id, "test", []byte(body)); err != nil {
		tb.Fatal(err)
	}
	return id
}

// MustPutNeed stores ir as a need under definition defID and returns its id.
func MustPutNeed(tb testing.TB, s *Store, defID, ir string) string {
	tb.Helper()
	id := contentid.OfBytes("needle.test.need", []byte(ir))
	if err := s.PutNeed(context.Background(), id, defID, "locate.implementation", "symbol", "crlf", []byte(ir)); err != nil {
		tb.Fatal(err)
	}
	return id
}

// MustCreateSession creates session id under definition defID.
func MustCreateSession(tb testing.TB, s *Store, id, defID string) {
	tb.Helper()
	if err := s.CreateSession(context.Background(), id, defID, "mcp", []string{"locate.implementation"}, "gpt-5"); err != nil {
		tb.Fatal(err)
	}
}

func TestStore_PutDefinition(t *testing.T) {
	ctx := context.Background()
	s := MustOpenStore(t, t.TempDir())
	id := MustPutDefinition(t, s, `{"routes":["a"]}`)
	t.Run("OK", func(t *testing.T) {
		want := "definitions [" + `"` + id + `" "test" "{\"routes\":[\"a\"]}" "` + storeTestTime.Format(time.RFC3339Nano) + `"]` + "\n"
		if diff := cmp.Diff(want, tableRows(t, s.db, "definitions")); diff != "" {
			t.Errorf("definitions (-want +got):\n%s", diff)
		}
	})
	t.Run("Idempotent", func(t *testing.T) {
		if err := s.PutDefinition(ctx, id, "other compiler", []byte(`{"routes":["a"]}`)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		err := s.PutDefinition(ctx, id, "test", []byte(`{"routes":["b"]}`))
		wantStoreError(t, err, KindStore, "store.put_definition", id, "already stored with different content")
	})
	t.Run("ErrMalformedID", func(t *testing.T) {
		err := s.PutDefinition(ctx, "b3:XYZ", "test", []byte(`{}`))
		wantStoreError(t, err, KindStore, "malformed definition id")
	})
	t.Run("ErrNotJSON", func(t *testing.T) {
		body := []byte(`{not json`)
		err := s.PutDefinition(ctx, contentid.OfBytes("x", body), "test", body)
		wantStoreError(t, err, KindStore, "CHECK constraint failed")
	})
}

func TestStore_PutNeed(t *testing.T) {
	ctx := context.Background()
	s := MustOpenStore(t, t.TempDir())
	def := MustPutDefinition(t, s, `{}`)
	id := MustPutNeed(t, s, def, `{"route":"locate.implementation"}`)
	t.Run("Idempotent", func(t *testing.T) {
		MustPutNeed(t, s, def, `{"route":"locate.implementation"}`)
		if got := tableRows(t, s.db, "needs"); strings.Count(got, "\n") != 1 {
			t.Errorf("needs after putting one need twice:\n%s", got)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		err := s.PutNeed(ctx, id, def, "locate.implementation", "symbol", "crlf", []byte(`{"route":"x"}`))
		wantStoreError(t, err, KindStore, "need "+id+" is already stored with different content")
	})
	t.Run("ErrUnknownDefinition", func(t *testing.T) {
		other := contentid.OfBytes("x", []byte("y"))
		err := s.PutNeed(ctx, id, other, "locate.implementation", "symbol", "crlf", []byte(`{}`))
		wantStoreError(t, err, KindNotFound, "definition "+other+": not found")
	})
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
