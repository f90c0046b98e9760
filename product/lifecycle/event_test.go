package lifecycle

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/needle-dev/needle/product/internal/contentid"
)

func TestDecodeEvent(t *testing.T) {
	states := statesByClass(t)
	t.Run("OK", func(t *testing.T) {
		for _, class := range allClasses {
			for _, kind := range eventKinds {
				ev := WellFormed(states[class], kind)
				k, payload, digest := EncodeEvent(ev)
				got, err := DecodeEvent(string(k), payload)
				if err != nil {
					t.Fatalf("%s: %v\n%s", k, err, payload)
				}
				if EventDigest(got) != digest {
					t.Fatalf("%s: the decoded event has another digest", k)
				}
			}
		}
	})
	s := states["verify/1"]
	verify := WellFormed(s, EventVerifyCompleted)
	_, payload, _ := EncodeEvent(verify)
	_, review, _ := EncodeEvent(WellFormed(states["review/1"], EventReviewCompleted))
	text := string(payload)
	bad := []struct {
		name, kind, payload string
	}{
		{"UnknownKind", "verify_done", text},
		{"KindOfAnotherPayload", "test_completed", text},
		{"ReviewAsVerification", "verify_completed", string(review)},
		{"Whitespace", "verify_completed", strings.Replace(text, ":", ": ", 1)},
		{"TrailingData", "verify_completed", text + "{}"},
		{"TrailingNewline", "verify_completed", text + "\n"},
		{"KeysOutOfOrder", "verify_completed", `{"invocation":"x",` + strings.TrimPrefix(text, "{")},
		{"UnknownField", "verify_completed", strings.Replace(text, `{"cost"`, `{"next_phase":"apply","cost"`, 1)},
		{"MissingField", "verify_completed", strings.Replace(text, `"repair_instructions":"",`, "", 1)},
		{"DuplicateKey", "verify_completed", strings.Replace(text, `"outcome":"verified"`, `"outcome":"rejected","outcome":"verified"`, 1)},
		{"CaseFoldedKey", "verify_completed", strings.Replace(text, `"outcome"`, `"Outcome"`, 1)},
		{"NotNFC", "cancel_requested", "{\"note\":\"cafe\u0301\"}"},
		{"InvalidUTF8", "cancel_requested", "{\"note\":\"\xff\"}"},
		{"UnknownOutcome", "verify_completed", strings.Replace(text, `"outcome":"verified"`, `"outcome":"approved"`, 1)},
		{"MalformedInvocation", "verify_completed", strings.Replace(text, `"invocation":"b3:`, `"invocation":"b2:`, 1)},
		{"NegativeCost", "verify_completed", strings.Replace(text, `"tokens":400`, `"tokens":-400`, 1)},
		{"Oversized", "cancel_requested", `{"note":"` + strings.Repeat("a", MaxEventBytes) + `"}`},
		{"OverlongNote", "cancel_requested", `{"note":"` + strings.Repeat("a", MaxTextBytes+1) + `"}`},
		{"Null", "cancel_requested", `null`},
		{"Array", "cancel_requested", `[]`},
	}
	for _, tt := range bad {
		t.Run("Err"+tt.name, func(t *testing.T) {
			ev, err := DecodeEvent(tt.kind, []byte(tt.payload))
			if err == nil {
				t.Fatalf("accepted %+v", ev)
			}
			if !isInvalid(err) {
				t.Fatalf("error %T: %v", err, err)
			}
		})
	}
}

// TestEventDigest: the digest covers the kind and every field, so
// a journal row whose payload was edited no longer matches its digest.
func TestEventDigest(t *testing.T) {
	s := statesByClass(t)["verify/1"]
	ev := WellFormed(s, EventVerifyCompleted).(VerifyCompleted)
	d := EventDigest(ev)
	edited := ev
	edited.Verification.Criteria = append([]CriterionJudgement(nil), ev.Verification.Criteria...)
	edited.Verification.Criteria[1].Note = "met, mostly"
	if EventDigest(edited) == d {
		t.Fatal("editing a criterion note kept the digest")
	}
	if EventDigest(CancelRequested{}) == EventDigest(ApplyConflicted{}) {
		t.Fatal("two kinds of event share a digest")
	}
	// The digest is the content id of {kind, payload}, computed without
	// encoding the payload twice.
	for class, st := range statesByClass(t) {
		for _, kind := range eventKinds {
			ev := WellFormed(st, kind)
			slow := contentid.MustOf(tagEvent, struct {
				Kind    EventKind `json:"kind"`
				Payload Event     `json:"payload"`
			}{ev.Kind(), ev})
			if got := EventDigest(ev); got != slow {
				t.Fatalf("%s %s: digest %s, the content id of {kind, payload} is %s", class, kind, got, slow)
			}
		}
	}
}

// TestCompletions_CannotSteer: a worker completion is plain data.
// No completion type has a field that could name a next phase, a status, a
// reason, an event, an effect or a worker to start, nor any interface,
// function or channel that could carry one; the phase a failure names is
// only compared with the running phase.
func TestCompletions_CannotSteer(t *testing.T) {
	steering := map[reflect.Type]bool{
		reflect.TypeFor[Status](): true, reflect.TypeFor[Reason](): true,
		reflect.TypeFor[EventKind](): true, reflect.TypeFor[Invoke](): true,
		reflect.TypeFor[Role](): false, // inside a profile reference, compared with the freeze
	}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		switch {
		case steering[typ]:
			t.Errorf("%s is a %s: a completion could steer the lifecycle", path, typ)
		case typ == reflect.TypeFor[Phase]() && path != "PhaseFailed.Phase":
			t.Errorf("%s names a phase", path)
		}
		switch typ.Kind() {
		case reflect.Interface, reflect.Func, reflect.Chan, reflect.Map, reflect.Pointer:
			t.Errorf("%s is a %s: not plain bounded data", path, typ.Kind())
		case reflect.Slice:
			walk(path+"[]", typ.Elem())
		case reflect.Struct:
			for i := range typ.NumField() {
				walk(path+"."+typ.Field(i).Name, typ.Field(i).Type)
			}
		}
	}
	for _, ev := range []Event{ExploreCompleted{}, ImplementCompleted{}, TestCompleted{},
		ReviewCompleted{}, VerifyCompleted{}, PhaseFailed{}} {
		typ := reflect.TypeOf(ev)
		walk(typ.Name(), typ)
	}
}

// isInvalid reports whether err is the decoders' typed failure.
func isInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}
