package fakeanthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MessagesRequest is the part of a POST /v1/messages body the fake reads.
// Decoding is lenient about fields it does not know (the client sends many:
// metadata, thinking, betas …) and strict about the shapes it uses.
type MessagesRequest struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	Stream    bool      `json:"stream"`
	Messages  []Message `json:"messages"`
	Tools     []Tool    `json:"tools"`
	// System is "system" as sent: a string or a list of text blocks.
	System json.RawMessage `json:"system"`
}

// Message is one conversation turn. Content is always a list of blocks: the
// API's string shorthand is decoded as one text block.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Block is a content block of a message, of a request or of a reply.
type Block struct {
	Type string `json:"type"`
	// Text of a "text" block.
	Text string `json:"text,omitempty"`
	// ID, Name and Input of a "tool_use" block.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError of a "tool_result" block; Content is a
	// string or a list of blocks, as sent.
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// ToolName of a "tool_reference" block: a tool_result of the client's
	// tool search names the deferred tools it loads this way, and the API
	// expands each into that tool's definition for the model.
	ToolName string `json:"tool_name,omitempty"`
}

// Tool is a tool the client offers the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	// DeferLoading marks a tool the model knows only by name until a
	// tool_reference loads it.
	DeferLoading bool `json:"defer_loading"`
}

// UnmarshalJSON accepts content as a string or as a list of blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	blocks, err := decodeContent(raw.Content)
	if err != nil {
		return fmt.Errorf("message content: %w", err)
	}
	m.Content = blocks
	return nil
}

func decodeContent(raw json.RawMessage) ([]Block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{{Type: "text", Text: s}}, nil
	}
	var blocks []Block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errors.New("neither a string nor a list of blocks")
	}
	return blocks, nil
}

// Tool returns the offered tool called name.
func (r MessagesRequest) Tool(name string) (Tool, bool) {
	for _, t := range r.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// ToolResult returns the tool_result block for the tool_use id in the
// request's last user message: a client answers a tool call in the very
// next user turn.
func (r MessagesRequest) ToolResult(id string) (Block, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != "user" {
			continue
		}
		for _, b := range r.Messages[i].Content {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return b, true
			}
		}
		break
	}
	return Block{}, false
}

// ResultBlocks is the content of a tool_result block as blocks (a string
// content is one text block).
func (b Block) ResultBlocks() []Block {
	blocks, err := decodeContent(b.Content)
	if err != nil {
		return []Block{{Type: "text", Text: string(b.Content)}}
	}
	return blocks
}

// ResultText is the text of a tool_result block: its string content, or its text
// blocks joined by newlines.
func (b Block) ResultText() string {
	var parts []string
	for _, c := range b.ResultBlocks() {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Reply is what the model answers: its content blocks, in order ("text" and
// "tool_use" blocks; a tool_use block's Input is a JSON object). The stop
// reason follows from the content: "tool_use" if it calls a tool, else
// "end_turn".
type Reply struct {
	Content []Block
}

// Say is a reply of one text block.
func Say(text string) Reply { return Reply{Content: []Block{{Type: "text", Text: text}}} }

// Call is a reply that calls tool name with input (a JSON object), after an
// optional text block.
func Call(text, id, name string, input json.RawMessage) Reply {
	var r Reply
	if text != "" {
		r.Content = append(r.Content, Block{Type: "text", Text: text})
	}
	r.Content = append(r.Content, Block{Type: "tool_use", ID: id, Name: name, Input: input})
	return r
}

// check rejects a reply the real API could not send, so a bad model fails
// at the fake, not as a confusing client error.
func (r Reply) check() error {
	if len(r.Content) == 0 {
		return errors.New("empty reply")
	}
	for i, b := range r.Content {
		switch b.Type {
		case "text":
		case "tool_use":
			var obj map[string]json.RawMessage
			if b.ID == "" || b.Name == "" || json.Unmarshal(b.Input, &obj) != nil || obj == nil {
				return fmt.Errorf("content[%d]: a tool_use block needs an id, a name and an object input", i)
			}
		default:
			return fmt.Errorf("content[%d]: unsupported block type %q", i, b.Type)
		}
	}
	return nil
}

func (r Reply) stopReason() string {
	for _, b := range r.Content {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}
