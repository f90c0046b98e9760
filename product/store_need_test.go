package product

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// MustPutDefinition stores body as a definition and returns its id.
func MustPutDefinition(tb testing.TB, s *store, body string) string {
	tb.Helper()
	id := contentid.OfBytes("needle.test.definition", []byte(body))
	if err := s.PutDefinition(context.Background(), id, "test", []byte(body)); err != nil {
		tb.Fatal(err)
	}
	return id
}

// MustPutNeed stores ir as a need under definition defID and returns its id.
func MustPutNeed(tb testing.TB, s *store, defID, ir string) string {
	tb.Helper()
	id := contentid.OfBytes("needle.test.need", []byte(ir))
	if err := s.PutNeed(context.Background(), id, defID, "locate.implementation", "symbol", "crlf", []byte(ir)); err != nil {
		tb.Fatal(err)
	}
	return id
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
		wantStoreError(t, err, kindStore, "store.put_definition", id, "already stored with different content")
	})
	t.Run("ErrMalformedID", func(t *testing.T) {
		err := s.PutDefinition(ctx, "b3:XYZ", "test", []byte(`{}`))
		wantStoreError(t, err, kindStore, "malformed definition id")
	})
	t.Run("ErrNotJSON", func(t *testing.T) {
		body := []byte(`{not json`)
		err := s.PutDefinition(ctx, contentid.OfBytes("x", body), "test", body)
		wantStoreError(t, err, kindStore, "CHECK constraint failed")
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
		wantStoreError(t, err, kindStore, "need "+id+" is already stored with different content")
	})
	t.Run("ErrUnknownDefinition", func(t *testing.T) {
		other := contentid.OfBytes("x", []byte("y"))
		err := s.PutNeed(ctx, id, other, "locate.implementation", "symbol", "crlf", []byte(`{}`))
		wantStoreError(t, err, kindNotFound, "definition "+other+": not found")
	})
}
