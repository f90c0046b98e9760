package product

import (
	"reflect"
	"strings"
	"testing"
)

func TestDecodeLifecycleEvent(t *testing.T) {
	states := statesByClass(t)
	t.Run("OK", func(t *testing.T) {
		for _, class := range allLifecycleClasses {
			for _, kind := range lifecycleEventKinds {
				ev := wellFormed(states[class], kind)
				k, payload, digest := EncodeLifecycleEvent(ev)
				got, err := DecodeLifecycleEvent(string(k), payload)
				if err != nil {
					t.Fatalf("%s: %v\n%s", k, err, payload)
				}
				if LifecycleEventDigest(got) != digest {
					t.Fatalf("%s: the decoded event has another digest", k)
				}
			}
		}
	})
	s := states["verify/1"]
	verify := wellFormed(s, LifecycleEventVerifyCompleted)
	_, payload, _ := EncodeLifecycleEvent(verify)
	_, review, _ := EncodeLifecycleEvent(wellFormed(states["review/1"], LifecycleEventReviewCompleted))
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
		{"Oversized", "cancel_requested", `{"note":"` + strings.Repeat("a", LifecycleMaxEventBytes) + `"}`},
		{"OverlongNote", "cancel_requested", `{"note":"` + strings.Repeat("a", LifecycleMaxTextBytes+1) + `"}`},
		{"Null", "cancel_requested", `null`},
		{"Array", "cancel_requested", `[]`},
	}
	for _, tt := range bad {
		t.Run("Err"+tt.name, func(t *testing.T) {
			ev, err := DecodeLifecycleEvent(tt.kind, []byte(tt.payload))
			if err == nil {
				t.Fatalf("accepted %+v", ev)
			}
			if KindOf(err) != KindInvalidInput {
				t.Fatalf("error kind %s: %v", KindOf(err), err)
			}
		})
	}
}

// TestLifecycleEventDigest: the digest covers the kind and every field, so
// a journal row whose payload was edited no longer matches its digest.
func TestLifecycleEventDigest(t *testing.T) {
	s := statesByClass(t)["verify/1"]
	ev := wellFormed(s, LifecycleEventVerifyCompleted).(LifecycleVerifyCompleted)
	d := LifecycleEventDigest(ev)
	edited := ev
	edited.Verification.Criteria = append([]LifecycleCriterionJudgement(nil), ev.Verification.Criteria...)
	edited.Verification.Criteria[1].Note = "met, mostly"
	if LifecycleEventDigest(edited) == d {
		t.Fatal("editing a criterion note kept the digest")
	}
	if LifecycleEventDigest(LifecycleCancelRequested{}) == LifecycleEventDigest(LifecycleApplyConflicted{}) {
		t.Fatal("two kinds of event share a digest")
	}
	// The digest is the content id of {kind, payload}, computed without
	// encoding the payload twice.
	for class, st := range statesByClass(t) {
		for _, kind := range lifecycleEventKinds {
			ev := wellFormed(st, kind)
			slow := mustID(tagLifecycleEvent, struct {
				Kind    LifecycleEventKind `json:"kind"`
				Payload LifecycleEvent     `json:"payload"`
			}{ev.Kind(), ev})
			if got := LifecycleEventDigest(ev); got != slow {
				t.Fatalf("%s %s: digest %s, the content id of {kind, payload} is %s", class, kind, got, slow)
			}
		}
	}
}

// TestLifecycleCompletions_CannotSteer: a worker completion is plain data.
// No completion type has a field that could name a next phase, a status, a
// reason, an event, an effect or a worker to start, nor any interface,
// function or channel that could carry one; the phase a failure names is
// only compared with the running phase.
func TestLifecycleCompletions_CannotSteer(t *testing.T) {
	steering := map[reflect.Type]bool{
		reflect.TypeFor[LifecycleStatus](): true, reflect.TypeFor[LifecycleReason](): true,
		reflect.TypeFor[LifecycleEventKind](): true, reflect.TypeFor[LifecycleInvoke](): true,
		reflect.TypeFor[LifecycleRole](): false, // inside a profile reference, compared with the freeze
	}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		switch {
		case steering[typ]:
			t.Errorf("%s is a %s: a completion could steer the lifecycle", path, typ)
		case typ == reflect.TypeFor[Phase]() && path != "LifecyclePhaseFailed.Phase":
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
	for _, ev := range []LifecycleEvent{LifecycleExploreCompleted{}, LifecycleImplementCompleted{}, LifecycleTestCompleted{},
		LifecycleReviewCompleted{}, LifecycleVerifyCompleted{}, LifecyclePhaseFailed{}} {
		typ := reflect.TypeOf(ev)
		walk(typ.Name(), typ)
	}
}
