package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ThreadStartParams are the thread/start parameters this client sets. Zero
// values are omitted, so ephemeral is sent only when true.
type ThreadStartParams struct {
	Cwd                   string         `json:"cwd,omitempty"`
	Sandbox               string         `json:"sandbox,omitempty"`        // SandboxMode: read-only | workspace-write | danger-full-access
	ApprovalPolicy        string         `json:"approvalPolicy,omitempty"` // untrusted | on-request | never
	Ephemeral             bool           `json:"ephemeral,omitempty"`
	Config                map[string]any `json:"config,omitempty"` // nested config.toml overrides
	DeveloperInstructions string         `json:"developerInstructions,omitempty"`
	Model                 string         `json:"model,omitempty"`
	BaseInstructions      string         `json:"baseInstructions,omitempty"`
}

// Thread is the thread/start result.
type Thread struct {
	ID, Model, ModelProvider string
	Raw                      json.RawMessage // the whole result
}

// UserInput is one text input item. The wire form always carries
// text_elements, as an array.
type UserInput struct {
	Type         string `json:"type"`
	Text         string `json:"text"`
	TextElements []any  `json:"text_elements"`
}

// TextInput returns the text input s.
func TextInput(s string) UserInput {
	return UserInput{Type: "text", Text: s, TextElements: []any{}}
}

// MarshalJSON sends a nil TextElements as [] rather than null.
func (u UserInput) MarshalJSON() ([]byte, error) {
	type plain UserInput
	if u.TextElements == nil {
		u.TextElements = []any{}
	}
	return json.Marshal(plain(u))
}

// StartThread starts a thread (thread/start).
func (c *Client) StartThread(ctx context.Context, p ThreadStartParams) (Thread, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, "thread/start", p, &raw); err != nil {
		return Thread{}, err
	}
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
		Model         string `json:"model"`
		ModelProvider string `json:"modelProvider"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Thread{}, fmt.Errorf("appserver: decode thread/start result: %w", err)
	}
	if r.Thread.ID == "" {
		return Thread{}, errors.New("appserver: thread/start result has no thread id")
	}
	c.mu.Lock()
	c.threadLocked(r.Thread.ID)
	c.mu.Unlock()
	return Thread{ID: r.Thread.ID, Model: r.Model, ModelProvider: r.ModelProvider, Raw: raw}, nil
}

// threadState is what the client tracks per thread.
type threadState struct {
	active *Turn // between turn/started and turn/completed

	// Usage accounting: the last distinct cumulative total and the sum of
	// the deltas between totals.
	lastTotal Usage
	seenTotal bool
	usage     Usage
}

// threadLocked returns the state of a thread, creating it on first sight:
// notifications may name threads this client did not start (resumed ones).
func (c *Client) threadLocked(id string) *threadState {
	th := c.threads[id]
	if th == nil {
		th = &threadState{}
		c.threads[id] = th
	}
	return th
}

// ActiveTurn returns the thread's running turn (between turn/started and
// turn/completed), whoever started it, or nil.
func (c *Client) ActiveTurn(threadID string) *Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if th := c.threads[threadID]; th != nil {
		return th.active
	}
	return nil
}
