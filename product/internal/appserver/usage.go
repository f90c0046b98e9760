package appserver

import "encoding/json"

// Usage is a token count breakdown, as in the server's TokenUsageBreakdown.
// InputTokens includes CachedInputTokens; OutputTokens includes
// ReasoningOutputTokens.
type Usage struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

func (u Usage) add(v Usage) Usage {
	return Usage{
		TotalTokens:           u.TotalTokens + v.TotalTokens,
		InputTokens:           u.InputTokens + v.InputTokens,
		CachedInputTokens:     u.CachedInputTokens + v.CachedInputTokens,
		OutputTokens:          u.OutputTokens + v.OutputTokens,
		ReasoningOutputTokens: u.ReasoningOutputTokens + v.ReasoningOutputTokens,
	}
}

func (u Usage) sub(v Usage) Usage {
	return u.add(Usage{
		TotalTokens:           -v.TotalTokens,
		InputTokens:           -v.InputTokens,
		CachedInputTokens:     -v.CachedInputTokens,
		OutputTokens:          -v.OutputTokens,
		ReasoningOutputTokens: -v.ReasoningOutputTokens,
	})
}

// covers reports whether no counter of u is below v's.
func (u Usage) covers(v Usage) bool {
	d := u.sub(v)
	return d.TotalTokens >= 0 && d.InputTokens >= 0 && d.CachedInputTokens >= 0 &&
		d.OutputTokens >= 0 && d.ReasoningOutputTokens >= 0
}

// advance takes the thread's next cumulative total and returns the usage it
// adds. A repeated total adds nothing. A total below the previous one (never
// observed) is taken as a new baseline rather than as negative usage.
func (th *threadState) advance(total Usage) (Usage, bool) {
	if th.seenTotal && total == th.lastTotal {
		return Usage{}, false
	}
	prev := th.lastTotal
	th.lastTotal, th.seenTotal = total, true
	if !total.covers(prev) {
		return Usage{}, false
	}
	return total.sub(prev), true
}

// onTokenUsage accounts thread/tokenUsage/updated. The delta goes to the
// named turn only if it is known: a resumed thread replays old usage under
// turn ids this process never saw, and those must not become turns.
func (c *Client) onTokenUsage(params json.RawMessage) error {
	var p struct {
		ThreadID   string `json:"threadId"`
		TurnID     string `json:"turnId"`
		TokenUsage struct {
			Total Usage `json:"total"`
		} `json:"tokenUsage"`
	}
	if err := decodeParams(params, &p); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	th := c.threadLocked(p.ThreadID)
	delta, ok := th.advance(p.TokenUsage.Total)
	if !ok {
		return nil
	}
	th.usage = th.usage.add(delta)
	if t := c.turns[p.TurnID]; t != nil {
		t.usage = t.usage.add(delta)
	}
	return nil
}

// ThreadUsage returns the usage accumulated for a thread in this process:
// the sum of the deltas between its successive distinct totals. The first
// total counts in full, so a resumed thread's replayed history counts once.
func (c *Client) ThreadUsage(threadID string) Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	if th := c.threads[threadID]; th != nil {
		return th.usage
	}
	return Usage{}
}
