package product

import (
	"errors"
	"testing"

	"github.com/needle-dev/needle/product/lifecycle"
)

// TestStepLifecycle_ErrorKinds: the machine's refusals reach the product's
// edges as its one error type: a malformed event is invalid input, an
// event the state cannot take a conflict, and either keeps the typed
// refusal for callers that need its code.
func TestStepLifecycle_ErrorKinds(t *testing.T) {
	created := lifecycle.WellFormed(lifecycle.State{}, lifecycle.EventCreated).(lifecycle.Created)
	s, _, err := stepLifecycle(lifecycle.State{}, created)
	if err != nil {
		t.Fatal(err)
	}
	bad := created
	bad.Lifecycle = "not an id"
	for _, tt := range []struct {
		name string
		s    lifecycle.State
		ev   lifecycle.Event
		kind Kind
		code lifecycle.Refusal
	}{
		{"Malformed", lifecycle.State{}, bad, KindInvalidInput, lifecycle.RefusalInvalidPayload},
		{"Illegal", s, created, kindConflict, lifecycle.RefusalIllegalTransition},
		{"Terminal", mustCancel(t, s), lifecycle.WellFormed(s, lifecycle.EventExploreCompleted), kindConflict, lifecycle.RefusalTerminal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, fx, err := stepLifecycle(tt.s, tt.ev)
			var se *lifecycle.StepError
			switch {
			case err == nil:
				t.Fatalf("accepted; effects %v", fx)
			case KindOf(err) != tt.kind:
				t.Fatalf("kind %s, want %s: %v", KindOf(err), tt.kind, err)
			case !errors.As(err, &se) || se.Code != tt.code:
				t.Fatalf("refusal %v, want code %s", err, tt.code)
			}
		})
	}
}

func mustCancel(t *testing.T, s lifecycle.State) lifecycle.State {
	t.Helper()
	next, _, err := stepLifecycle(s, lifecycle.CancelRequested{})
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// TestDecodeLifecycle_ErrorKinds: a journal row or projection that does not
// decode is invalid input naming what did not decode.
func TestDecodeLifecycle_ErrorKinds(t *testing.T) {
	if _, err := decodeLifecycleEvent("no_such_kind", []byte(`{}`)); KindOf(err) != KindInvalidInput || !errorHasPath(err, "kind") {
		t.Fatalf("unknown kind: %v (kind %s)", err, KindOf(err))
	}
	if _, err := decodeLifecycleEvent(string(lifecycle.EventCancelRequested), []byte(`[]`)); KindOf(err) != KindInvalidInput || !errorHasPath(err, "payload") {
		t.Fatalf("bad payload: %v (kind %s)", err, KindOf(err))
	}
	if _, err := decodeLifecycleState([]byte(`{"status":`)); KindOf(err) != KindInvalidInput {
		t.Fatalf("truncated state: %v (kind %s)", err, KindOf(err))
	}
}

func errorHasPath(err error, path string) bool {
	var e *Error
	return errors.As(err, &e) && e.Path == path
}
