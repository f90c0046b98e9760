package lifecycle

import (
	"errors"
	"testing"
)

// FuzzStep plays event sequences drawn from arbitrary bytes
// through the machine (walk): no step may panic, leave a state
// that breaks an invariant or refuse untyped, and the journal of accepted
// events must replay to the same state digest.
func FuzzStep(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte("a lifecycle, from the bytes of a sentence, with some luck reaching the apply phase and beyond it"))
	f.Fuzz(func(t *testing.T, data []byte) {
		walk(t, data)
	})
}

// FuzzDecodeEvent feeds arbitrary journal rows to the event
// decoder. It must never panic and fail only with KindInvalidInput; what
// it accepts is valid, and is exactly its own canonical encoding.
func FuzzDecodeEvent(f *testing.F) {
	states := statesByClass(f)
	for _, class := range allClasses {
		for _, kind := range eventKinds {
			k, payload, _ := EncodeEvent(WellFormed(states[class], kind))
			f.Add(string(k), payload)
		}
	}
	f.Add("verify_completed", []byte(`{"cost":{"tokens":0,"wall_ms":0},"invocation":"b3:","verification":{}}`))
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		ev, err := DecodeEvent(kind, payload)
		if err != nil {
			if !isInvalid(err) {
				t.Fatalf("refused with %T: %v", err, err)
			}
			return
		}
		if string(ev.Kind()) != kind {
			t.Fatalf("decoded a %s from a %s row", ev.Kind(), kind)
		}
		if err := ev.validate(); err != nil {
			t.Fatalf("accepted an invalid event: %v", err)
		}
		if _, again, _ := EncodeEvent(ev); string(again) != string(payload) {
			t.Fatalf("accepted a payload that is not canonical:\n%s\n%s", payload, again)
		}
	})
}

// FuzzDecodeState feeds arbitrary projection rows to the state
// decoder: it must never panic, and whatever it accepts holds every
// invariant, is canonical, and accepts or refuses events without panicking.
func FuzzDecodeState(f *testing.F) {
	for _, s := range statesByClass(f) {
		f.Add(s.Canonical())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeState(data)
		if err != nil {
			if !isInvalid(err) {
				t.Fatalf("refused with %T: %v", err, err)
			}
			return
		}
		if err := s.check(); err != nil || string(s.Canonical()) != string(data) {
			t.Fatalf("accepted a state that is invalid (%v) or not canonical", err)
		}
		for _, kind := range eventKinds {
			if _, _, err := Step(s, WellFormed(s, kind)); err != nil {
				var se *StepError
				if !errors.As(err, &se) {
					t.Fatalf("untyped refusal: %v", err)
				}
			}
		}
	})
}
