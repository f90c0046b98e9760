package appserver

import (
	"encoding/json"
	"fmt"
)

// notificationHandlers are the notifications that change turn records. The
// rest pass through to ProcSpec.OnNotification only.
var notificationHandlers = map[string]func(*Client, json.RawMessage) error{
	"turn/started":              (*Client).onTurnStarted,
	"turn/completed":            (*Client).onTurnCompleted,
	"item/started":              (*Client).onItemStarted,
	"item/completed":            (*Client).onItemCompleted,
	"item/agentMessage/delta":   (*Client).onAgentMessageDelta,
	"turn/diff/updated":         (*Client).onDiffUpdated,
	"thread/tokenUsage/updated": (*Client).onTokenUsage,
	"serverRequest/resolved":    (*Client).onRequestResolved,
}

func (c *Client) handleNotification(method string, params json.RawMessage) {
	if h := notificationHandlers[method]; h != nil {
		if err := h(c, params); err != nil {
			c.logf("%s: %v", method, err)
		}
	}
	if c.spec.OnNotification != nil {
		c.spec.OnNotification(method, params)
	}
}

// decodeParams decodes params leniently: unknown fields are ignored.
func decodeParams(params json.RawMessage, v any) error {
	if err := json.Unmarshal(params, v); err != nil {
		return fmt.Errorf("decode params: %w", err)
	}
	return nil
}

func (c *Client) onTurnStarted(params json.RawMessage) error {
	var p struct {
		ThreadID string `json:"threadId"`
		Turn     struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := decodeParams(params, &p); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.turnLocked(p.ThreadID, p.Turn.ID)
	t.markStartedLocked()
	c.threadLocked(p.ThreadID).active = t
	return nil
}

func (c *Client) onTurnCompleted(params json.RawMessage) error {
	var p struct {
		ThreadID string      `json:"threadId"`
		Turn     turnSummary `json:"turn"`
	}
	if err := decodeParams(params, &p); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	th := c.threadLocked(p.ThreadID)
	if th.active != nil && th.active.id == p.Turn.ID {
		th.active = nil
	}
	c.completeLocked(c.turnLocked(p.ThreadID, p.Turn.ID), p.Turn)
	return nil
}

// itemEvent is the envelope of item/started and item/completed.
type itemEvent struct {
	ThreadID string          `json:"threadId"`
	TurnID   string          `json:"turnId"`
	Item     json.RawMessage `json:"item"`
}

// itemHead is the part of an item the table keeps. status and text are raw
// because their JSON type varies by item type (or is null).
type itemHead struct {
	ID     string          `json:"id"`
	Type   string          `json:"type"`
	Status json.RawMessage `json:"status"`
	Text   json.RawMessage `json:"text"`
}

func (c *Client) onItemStarted(params json.RawMessage) error {
	return c.applyItem(params, false)
}

func (c *Client) onItemCompleted(params json.RawMessage) error {
	return c.applyItem(params, true)
}

// applyItem records an item/started or item/completed. The completed item
// replaces whatever the deltas built.
func (c *Client) applyItem(params json.RawMessage, completed bool) error {
	var e itemEvent
	var h itemHead
	if err := decodeParams(params, &e); err != nil {
		return err
	}
	if err := json.Unmarshal(e.Item, &h); err != nil {
		return fmt.Errorf("decode item: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.turnLocked(e.ThreadID, e.TurnID)
	it := t.itemLocked(h.ID)
	it.Type, it.Raw = h.Type, e.Item
	if s, ok := jsonString(h.Status); ok {
		it.Status = s
	}
	if s, ok := jsonString(h.Text); ok {
		it.Text = s
	}
	if completed {
		it.Completed = true
		if it.Type == "agentMessage" {
			t.final = it.Text
		}
	}
	return nil
}

func (c *Client) onAgentMessageDelta(params json.RawMessage) error {
	var p struct {
		ThreadID string `json:"threadId"`
		TurnID   string `json:"turnId"`
		ItemID   string `json:"itemId"`
		Delta    string `json:"delta"`
	}
	if err := decodeParams(params, &p); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.turnLocked(p.ThreadID, p.TurnID).itemLocked(p.ItemID)
	if it.Type == "" {
		it.Type = "agentMessage"
	}
	it.Text += p.Delta
	return nil
}

func (c *Client) onDiffUpdated(params json.RawMessage) error {
	var p struct {
		ThreadID string `json:"threadId"`
		TurnID   string `json:"turnId"`
		Diff     string `json:"diff"`
	}
	if err := decodeParams(params, &p); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turnLocked(p.ThreadID, p.TurnID).diff = p.Diff
	return nil
}

func (c *Client) onRequestResolved(params json.RawMessage) error {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := decodeParams(params, &p); err != nil {
		return err
	}
	c.cancelIncoming(p.RequestID)
	return nil
}

// jsonString decodes raw if it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
