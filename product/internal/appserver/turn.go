package appserver

import (
	"context"
	"encoding/json"
	"errors"
)

// Turn statuses in TurnResult.Status.
const (
	StatusCompleted   = "completed"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// TurnStartParams are the turn/start parameters this client sets. The
// overrides other than OutputSchema stick to later turns of the thread.
type TurnStartParams struct {
	ThreadID       string          `json:"threadId"`
	Input          []UserInput     `json:"input"`
	OutputSchema   json.RawMessage `json:"outputSchema,omitempty"`  // this turn only
	SandboxPolicy  any             `json:"sandboxPolicy,omitempty"` // e.g. {"type":"readOnly","networkAccess":false}
	ApprovalPolicy any             `json:"approvalPolicy,omitempty"`
	Cwd            string          `json:"cwd,omitempty"`
	Model          string          `json:"model,omitempty"`
	Effort         string          `json:"effort,omitempty"`
}

// TurnResult is the record of a finished turn.
type TurnResult struct {
	Status       string // completed | interrupted | failed
	FinalMessage string // text of the last completed agentMessage
	Items        []Item // every item seen, in item/started order, orphans included
	Error        *TurnError
	Usage        Usage // this turn's share of the thread's usage
	DurationMs   int64
	Diff         string // the last turn/diff/updated
}

// Item is one entry of a turn's item table.
type Item struct {
	ID, Type, Status string
	Text             string          // agentMessage text: deltas until item/completed replaces it
	Completed        bool            // false for items still open at turn/completed
	Raw              json.RawMessage // the last item JSON seen
}

// TurnError is turn.error of a failed turn.
type TurnError struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codexErrorInfo,omitempty"` // e.g. "other" or {"httpConnectionFailed":{…}}
	AdditionalDetails json.RawMessage `json:"additionalDetails,omitempty"`
}

func (e *TurnError) Error() string { return "appserver: turn failed: " + e.Message }

// Turn is a turn of a thread as seen through its notifications. Its state is
// guarded by the client's mutex.
type Turn struct {
	c        *Client
	id       string
	threadID string
	started  chan struct{}
	done     chan struct{}

	startedClosed bool
	finished      bool
	items         []*Item
	byID          map[string]*Item
	final         string
	status        string
	turnErr       *TurnError
	usage         Usage
	durationMs    int64
	diff          string
	err           error // why the turn was never completed
}

// ID returns the turn id.
func (t *Turn) ID() string { return t.id }

// ThreadID returns the id of the turn's thread.
func (t *Turn) ThreadID() string { return t.threadID }

// Started is closed at turn/started, or when the turn ends without one, so
// waiting on it never outlives the turn.
func (t *Turn) Started() <-chan struct{} { return t.started }

// Done is closed at turn/completed or when the connection fails.
func (t *Turn) Done() <-chan struct{} { return t.done }

// Wait waits for the turn to end and returns its record. It returns ctx's
// error when ctx ends first, without interrupting the turn, and the
// connection's error (wrapping ErrClosed) together with the partial record
// when the turn can no longer complete.
func (t *Turn) Wait(ctx context.Context) (TurnResult, error) {
	select {
	case <-t.done:
	case <-ctx.Done():
		return TurnResult{}, ctx.Err()
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.resultLocked(), t.err
}

// StartTurn starts a turn (turn/start) and returns once the response has
// arrived; the turn is provisional until Started is closed. When the thread
// already has an active turn the server merges the input into it and answers
// with that turn's id: StartTurn then returns the existing *Turn.
func (c *Client) StartTurn(ctx context.Context, p TurnStartParams) (*Turn, error) {
	if p.Input == nil {
		p.Input = []UserInput{}
	}
	var t *Turn
	_, err := c.call(ctx, "turn/start", p, func(raw json.RawMessage) {
		var r struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		if json.Unmarshal(raw, &r) == nil && r.Turn.ID != "" {
			c.mu.Lock()
			t = c.turnLocked(p.ThreadID, r.Turn.ID)
			c.mu.Unlock()
		}
	})
	if err != nil {
		return nil, startError(err)
	}
	if t == nil {
		return nil, errors.New("appserver: turn/start result has no turn id")
	}
	return t, nil
}

// maxFinishedTurns bounds how many completed turns stay in the turn table
// so that late lookups by id still find them.
const maxFinishedTurns = 256

// turnLocked returns the turn with this id, creating it on first sight.
func (c *Client) turnLocked(threadID, id string) *Turn {
	if t := c.turns[id]; t != nil {
		return t
	}
	t := &Turn{
		c: c, id: id, threadID: threadID,
		started: make(chan struct{}), done: make(chan struct{}),
		byID: make(map[string]*Item),
	}
	c.turns[id] = t
	if c.err != nil {
		t.finishLocked(c.err)
	}
	return t
}

// itemLocked returns the item with this id, appending it on first sight.
func (t *Turn) itemLocked(id string) *Item {
	it := t.byID[id]
	if it == nil {
		it = &Item{ID: id}
		t.byID[id] = it
		t.items = append(t.items, it)
	}
	return it
}

func (t *Turn) markStartedLocked() {
	if !t.startedClosed {
		t.startedClosed = true
		close(t.started)
	}
}

// finishLocked ends the turn, with err when it can never complete.
func (t *Turn) finishLocked(err error) {
	if t.finished {
		return
	}
	t.finished = true
	t.err = err
	t.markStartedLocked()
	close(t.done)
}

// completeLocked applies turn/completed. Open items stay as they are: their
// Completed is false and their last status is kept.
func (c *Client) completeLocked(t *Turn, s turnSummary) {
	if t.finished {
		return // a repeated turn/completed
	}
	t.status = s.Status
	t.turnErr = s.Error.normalized()
	if s.DurationMs != nil {
		t.durationMs = *s.DurationMs
	}
	if t.final == "" {
		t.final = s.lastAgentText()
	}
	t.finishLocked(nil)
	c.finished = append(c.finished, t.id)
	if len(c.finished) > maxFinishedTurns {
		delete(c.turns, c.finished[0])
		c.finished = c.finished[1:]
	}
}

func (t *Turn) resultLocked() TurnResult {
	items := make([]Item, len(t.items))
	for i, it := range t.items {
		items[i] = *it
	}
	return TurnResult{
		Status: t.status, FinalMessage: t.final, Items: items,
		Error: t.turnErr, Usage: t.usage, DurationMs: t.durationMs, Diff: t.diff,
	}
}

// turnSummary is the turn object of turn/completed.
type turnSummary struct {
	ID    string `json:"id"`
	Items []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"items"`
	Status     string     `json:"status"`
	Error      *TurnError `json:"error"`
	DurationMs *int64     `json:"durationMs"`
}

// lastAgentText is the fallback final message: the summary's last item,
// which the server fills with the final agent message.
func (s turnSummary) lastAgentText() string {
	if n := len(s.Items); n > 0 && s.Items[n-1].Type == "agentMessage" {
		return s.Items[n-1].Text
	}
	return ""
}

// normalized drops JSON nulls so absent details are nil.
func (e *TurnError) normalized() *TurnError {
	if e == nil {
		return nil
	}
	out := *e
	out.CodexErrorInfo = nonNull(out.CodexErrorInfo)
	out.AdditionalDetails = nonNull(out.AdditionalDetails)
	return &out
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}
