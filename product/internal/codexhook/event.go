package codexhook

import (
	"fmt"
	"io"
	"sort"
)

// MaxInput bounds one hook event read from stdin. The largest field is the
// last assistant message, which a model keeps far below this; a longer
// input is refused rather than truncated, because a cut message could hide
// or invent a marker.
const MaxInput = 4 << 20

// ErrTooLarge is returned when an event is longer than MaxInput.
var ErrTooLarge = fmt.Errorf("codexhook: event longer than %d bytes", MaxInput)

// EventName is hook_event_name as codex writes it.
type EventName string

// The events codex 0.171.0 configures from hooks files.
const (
	EventPreToolUse        EventName = "PreToolUse"
	EventPermissionRequest EventName = "PermissionRequest"
	EventPostToolUse       EventName = "PostToolUse"
	EventPreCompact        EventName = "PreCompact"
	EventPostCompact       EventName = "PostCompact"
	EventSessionStart      EventName = "SessionStart"
	EventUserPromptSubmit  EventName = "UserPromptSubmit"
	EventStop              EventName = "Stop"
)

// label is the event's snake_case name in codex's hook keys and trust
// hashes ("stop" in "/home/u/.codex/hooks.json:stop:0:0").
var labels = map[EventName]string{
	EventPreToolUse: "pre_tool_use", EventPermissionRequest: "permission_request",
	EventPostToolUse: "post_tool_use", EventPreCompact: "pre_compact",
	EventPostCompact: "post_compact", EventSessionStart: "session_start",
	EventUserPromptSubmit: "user_prompt_submit", EventStop: "stop",
}

// Known reports whether codex 0.171.0 reads this event from a hooks file.
func (e EventName) Known() bool { _, ok := labels[e]; return ok }

// Event is one decoded hook input. Fields codex sends as null or omits
// are empty.
type Event struct {
	Name           EventName
	SessionID      string // the Codex thread id
	TurnID         string
	Cwd            string
	TranscriptPath string
	Model          string
	PermissionMode string // default | acceptEdits | plan | dontAsk | bypassPermissions, or a later value
	// Stop is set for a Stop event.
	Stop *Stop
	// Unknown lists, sorted, the top-level fields this package does not
	// model: event-specific fields of other events, and fields a later
	// codex adds. They are ignored, never an error.
	Unknown []string
}

// Stop is what a Stop event adds.
type Stop struct {
	// Active is stop_hook_active: true when this stop ends a continuation
	// that a Stop hook asked for in the same turn.
	Active bool
	// LastAssistantMessage is the text of the turn's final agent message;
	// HasLastAssistantMessage is false when codex sent null (the turn ended
	// without one).
	LastAssistantMessage    string
	HasLastAssistantMessage bool
}

// InputError says what is wrong with a hook input.
type InputError struct {
	Field string // the top-level field, or "" for the whole input
	Msg   string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return "codexhook: input: " + e.Msg
	}
	return "codexhook: input: " + e.Field + ": " + e.Msg
}

// Read reads one event from r, at most MaxInput bytes, and decodes it.
func Read(r io.Reader) (Event, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return Event{}, fmt.Errorf("codexhook: reading input: %w", err)
	}
	if len(data) > MaxInput {
		return Event{}, ErrTooLarge
	}
	return Decode(data)
}

// field says how a top-level field is checked.
type field struct {
	kind     string // "string", "nullable", "bool"
	required bool   // must be present (for every event, or for Stop)
	stop     bool   // the requirement holds for Stop events only
}

// fieldOrder lists fields in the order their absence is reported.
var fieldOrder = []string{"hook_event_name", "session_id", "cwd", "turn_id", "transcript_path",
	"model", "permission_mode", "stop_hook_active", "last_assistant_message"}

// fields are the inputs this package models. The rule (strict where Needle
// decides, tolerant where codex may grow): every modelled field that is
// present must have the type the 0.171.0 schema gives it; the fields a
// decision depends on must be present; anything else is ignored.
var fields = map[string]field{
	"hook_event_name":        {kind: "string", required: true},
	"session_id":             {kind: "string", required: true},
	"cwd":                    {kind: "string", required: true},
	"turn_id":                {kind: "string"},
	"transcript_path":        {kind: "nullable"},
	"model":                  {kind: "string"},
	"permission_mode":        {kind: "string"},
	"stop_hook_active":       {kind: "bool", required: true, stop: true},
	"last_assistant_message": {kind: "nullable", required: true, stop: true},
}

// Decode decodes one hook event: a JSON object, valid UTF-8, without
// duplicate keys (two readers could disagree about which one counts).
func Decode(data []byte) (Event, error) {
	if len(data) > MaxInput {
		return Event{}, ErrTooLarge
	}
	tree, err := parseTree(data)
	if err != nil {
		return Event{}, &InputError{Msg: err.Error()}
	}
	if tree.kind != kindObject {
		return Event{}, &InputError{Msg: "not a JSON object"}
	}
	var ev Event
	name, ok := tree.get("hook_event_name").str()
	if !ok || name == "" {
		return Event{}, &InputError{Field: "hook_event_name", Msg: "missing, empty or not a string"}
	}
	ev.Name = EventName(name)
	isStop := ev.Name == EventStop
	for _, m := range tree.members {
		f, known := fields[m.key]
		if !known || (f.stop && !isStop) {
			ev.Unknown = append(ev.Unknown, m.key)
			continue
		}
		if err := checkKind(m.key, f.kind, m.value); err != nil {
			return Event{}, err
		}
	}
	sort.Strings(ev.Unknown)
	for _, key := range fieldOrder {
		if f := fields[key]; f.required && (!f.stop || isStop) && tree.get(key) == nil {
			return Event{}, &InputError{Field: key, Msg: "missing"}
		}
	}
	ev.SessionID, _ = tree.get("session_id").str()
	ev.Cwd, _ = tree.get("cwd").str()
	ev.TurnID, _ = tree.get("turn_id").str()
	ev.TranscriptPath, _ = tree.get("transcript_path").str()
	ev.Model, _ = tree.get("model").str()
	ev.PermissionMode, _ = tree.get("permission_mode").str()
	if ev.SessionID == "" {
		return Event{}, &InputError{Field: "session_id", Msg: "empty"}
	}
	if ev.Cwd == "" {
		return Event{}, &InputError{Field: "cwd", Msg: "empty"}
	}
	if isStop {
		st := &Stop{Active: tree.get("stop_hook_active").scalar == true}
		st.LastAssistantMessage, st.HasLastAssistantMessage = tree.get("last_assistant_message").str()
		ev.Stop = st
	}
	return ev, nil
}

func checkKind(key, kind string, v *node) error {
	ok := false
	if v.kind == kindScalar {
		switch kind {
		case "string":
			_, ok = v.scalar.(string)
		case "nullable":
			_, isString := v.scalar.(string)
			ok = isString || v.scalar == nil
		case "bool":
			_, ok = v.scalar.(bool)
		}
	}
	if !ok {
		want := map[string]string{"string": "a string", "nullable": "a string or null", "bool": "a boolean"}[kind]
		return &InputError{Field: key, Msg: "not " + want}
	}
	return nil
}
