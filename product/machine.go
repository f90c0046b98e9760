package product

import (
	"errors"

	"github.com/needle-dev/needle/product/lifecycle"
)

// The pure machine lives in product/lifecycle; these wrappers give its
// refusals and decode failures the product's one error type: a malformed
// event or state is invalid input, an event the state cannot take a
// conflict.

// stepLifecycle is lifecycle.Step with its refusal as an *Error.
func stepLifecycle(s lifecycle.State, ev lifecycle.Event) (lifecycle.State, []lifecycle.Effect, error) {
	next, fx, err := lifecycle.Step(s, ev)
	var se *lifecycle.StepError
	if errors.As(err, &se) {
		kind := kindConflict
		if se.Code == lifecycle.RefusalInvalidPayload {
			kind = KindInvalidInput
		}
		return next, fx, &Error{Op: "lifecycle.step", Kind: kind, Err: se}
	}
	return next, fx, err
}

// decodeLifecycleEvent is lifecycle.DecodeEvent with its failure as an *Error.
func decodeLifecycleEvent(kind string, payload []byte) (lifecycle.Event, error) {
	ev, err := lifecycle.DecodeEvent(kind, payload)
	return ev, asInvalid(err)
}

// decodeLifecycleState is lifecycle.DecodeState with its failure as an *Error.
func decodeLifecycleState(data []byte) (lifecycle.State, error) {
	s, err := lifecycle.DecodeState(data)
	return s, asInvalid(err)
}

func asInvalid(err error) error {
	var ie *lifecycle.InvalidError
	if errors.As(err, &ie) {
		return &Error{Op: ie.Op, Kind: KindInvalidInput, Path: ie.Path, Err: ie.Err}
	}
	return err
}
