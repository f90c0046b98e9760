package appserver

import (
	"context"
	"errors"
)

type steerParams struct {
	ThreadID       string      `json:"threadId"`
	ExpectedTurnID string      `json:"expectedTurnId"`
	Input          []UserInput `json:"input"`
}

// Steer appends input to the thread's active turn (turn/steer), which makes
// the server abandon the in-flight model request and re-sample with it. It
// returns the steered turn's id. Refusals come back as ErrNoActiveTurn,
// *TurnMismatchError or *NotSteerableError; other error replies as *RPCError.
func (c *Client) Steer(ctx context.Context, threadID, expectedTurnID string, input []UserInput) (string, error) {
	if input == nil {
		input = []UserInput{}
	}
	p := steerParams{ThreadID: threadID, ExpectedTurnID: expectedTurnID, Input: input}
	var r struct {
		TurnID string `json:"turnId"`
	}
	if err := c.Call(ctx, "turn/steer", p, &r); err != nil {
		return "", steerError(err)
	}
	return r.TurnID, nil
}

// SteerOrStart delivers input to the thread as soon as the model can see
// it. While active (default: the thread's active turn) runs, it steers that
// turn, first waiting for turn/started because a steer in the window after
// the turn/start response is refused. If the turn is not steerable (a
// compaction) or already gone, it waits for the turn to complete and starts
// a new one with next, whose ThreadID and Input are set from threadID and
// input. A turn/start can still be merged into a turn that became active
// meanwhile; the result tells by the turn id, and steered is true whenever
// the input went into the already-active turn. ctx bounds all the waiting.
func (c *Client) SteerOrStart(ctx context.Context, threadID string, active *Turn, input []UserInput, next TurnStartParams) (*Turn, bool, error) {
	if active == nil {
		active = c.ActiveTurn(threadID)
	}
	if active != nil && !active.isDone() {
		err := c.steerTurn(ctx, threadID, active, input)
		if err == nil {
			return active, true, nil
		}
		if !canFallBack(err) {
			return nil, false, err
		}
		if err := waitClosed(ctx, active.Done()); err != nil {
			return nil, false, err
		}
	}
	prev := c.ActiveTurn(threadID)
	next.ThreadID, next.Input = threadID, input
	t, err := c.StartTurn(ctx, next)
	if err != nil {
		return nil, false, err
	}
	return t, prev != nil && prev.ID() == t.ID(), nil
}

func (c *Client) steerTurn(ctx context.Context, threadID string, active *Turn, input []UserInput) error {
	if err := waitClosed(ctx, active.Started()); err != nil {
		return err
	}
	_, err := c.Steer(ctx, threadID, active.ID(), input)
	return err
}

// canFallBack reports whether a steer refusal means "start a turn instead".
func canFallBack(err error) bool {
	var notSteerable *NotSteerableError
	return errors.Is(err, ErrNoActiveTurn) || errors.As(err, &notSteerable)
}

// Interrupt asks the server to stop a turn (turn/interrupt). The turn ends
// with turn/completed status "interrupted": wait for it on the Turn.
func (c *Client) Interrupt(ctx context.Context, threadID, turnID string) error {
	p := struct {
		ThreadID string `json:"threadId"`
		TurnID   string `json:"turnId"`
	}{threadID, turnID}
	return c.Call(ctx, "turn/interrupt", p, nil)
}

func (t *Turn) isDone() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func waitClosed(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
