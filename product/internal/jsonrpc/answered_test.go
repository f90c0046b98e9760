package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// brokenWriter fails every write, as a stdout whose reader is gone.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestOnAnswered checks when a handler learns that its answer was written:
// only a result that went out in full is written; a failed handler, a
// result that does not encode, a notification and any answer to a broken
// output are not; and the callback runs before the next serialized request
// starts.
func TestOnAnswered(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("Broken=%v", broken), func(t *testing.T) {
			var mu sync.Mutex
			var events []string
			note := func(s string) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, s)
			}
			handler := func(name string, result any, err error) Handler {
				return func(ctx context.Context, req Request) (any, error) {
					note("run " + name)
					if !OnAnswered(ctx, func(written bool) { note(fmt.Sprintf("answered %s %v", name, written)) }) {
						t.Errorf("%s: OnAnswered refused a handler's context", name)
					}
					return result, err
				}
			}
			srv := NewServer(map[string]Method{
				"ok":   {Handle: handler("ok", map[string]int{"n": 1}, nil), Serialized: true},
				"fail": {Handle: handler("fail", nil, &Error{Code: CodeInvalidParams, Message: "no"}), Serialized: true},
				"bad":  {Handle: handler("bad", map[string]any{"c": make(chan int)}, nil), Serialized: true},
				"note": {Handle: handler("note", nil, nil), Serialized: true, Notification: true},
				"next": {Handle: handler("next", "x", nil), Serialized: true},
			}, Options{DrainOnEOF: true})
			in := strings.NewReader(strings.Join([]string{
				`{"jsonrpc":"2.0","id":1,"method":"ok"}`,
				`{"jsonrpc":"2.0","id":2,"method":"fail"}`,
				`{"jsonrpc":"2.0","id":3,"method":"bad"}`,
				`{"jsonrpc":"2.0","method":"note"}`,
				`{"jsonrpc":"2.0","id":4,"method":"next"}`,
			}, "\n") + "\n")
			var out io.Writer = io.Discard
			if broken {
				out = brokenWriter{}
			}
			if err := srv.Serve(context.Background(), in, out); err != nil {
				t.Fatal(err)
			}
			want := []string{"run ok", "answered ok true", "run fail", "answered fail false", "run bad", "answered bad false",
				"run note", "answered note false", "run next", "answered next true"}
			if broken {
				want[1], want[9] = "answered ok false", "answered next false"
			}
			if got := strings.Join(events, "; "); got != strings.Join(want, "; ") {
				t.Errorf("events\n got %s\nwant %s", got, strings.Join(want, "; "))
			}
			if OnAnswered(context.Background(), func(bool) {}) {
				t.Error("OnAnswered accepted a context that belongs to no request")
			}
		})
	}
}
