package codexhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxReason is the longest continuation codex passes to the model whole.
// Codex 0.171.0 counts hook text as ceil(bytes/4) tokens and, over 2,500,
// keeps a head and tail preview and writes the full text to a file under
// its home (verified: 10,000 bytes arrive whole, 10,001 are cut). Needle
// never relies on that file, so it keeps its answers within the limit.
const MaxReason = 10000

// Errors of StopOutput.Encode.
var (
	ErrEmptyReason = errors.New("codexhook: block without a reason (codex rejects it)")
	ErrLongReason  = fmt.Errorf("codexhook: reason longer than %d bytes (codex would cut it)", MaxReason)
	ErrReasonUTF8  = errors.New("codexhook: reason is not valid UTF-8")
)

// StopOutput is the answer to a Stop event.
//
// Codex 0.171.0 reads the hook's stdout only when it exits 0: empty stdout
// lets the turn end; {"decision":"block","reason":R} continues the same turn
// with R as a new user-role input ("<hook_prompt hook_run_id=…>R</hook_prompt>",
// R with <, > and & escaped) and runs the Stop hooks again afterwards with
// stop_hook_active true. Output that is not a JSON object of the known keys
// (an unknown key included), a block with a blank reason, a non-zero exit
// other than 2, or a timeout all count as a failed hook and let the turn
// end. Codex puts no bound on how often a hook may block: the caller must.
type StopOutput struct {
	// Block continues the turn with Reason.
	Block  bool
	Reason string
	// SystemMessage is shown to the user, never to the model.
	SystemMessage string
}

// Encode writes the answer: nothing when there is nothing to say, else one
// JSON object with only the keys codex knows.
func (o StopOutput) Encode(w io.Writer) error {
	if o.Block {
		switch {
		case strings.TrimSpace(o.Reason) == "":
			return ErrEmptyReason
		case len(o.Reason) > MaxReason:
			return ErrLongReason
		case !utf8.ValidString(o.Reason):
			return ErrReasonUTF8
		}
	}
	if !utf8.ValidString(o.SystemMessage) {
		return errors.New("codexhook: system message is not valid UTF-8")
	}
	if !o.Block && o.SystemMessage == "" {
		return nil
	}
	var wire struct {
		Decision      string `json:"decision,omitempty"`
		Reason        string `json:"reason,omitempty"`
		SystemMessage string `json:"systemMessage,omitempty"`
	}
	if o.Block {
		wire.Decision, wire.Reason = "block", o.Reason
	}
	wire.SystemMessage = o.SystemMessage
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wire); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Clip returns s cut to at most max bytes on a rune boundary, ending with
// tail when it had to be cut (tail counts towards max, and is dropped
// when it alone is longer). It is how a caller
// keeps a reason within MaxReason.
func Clip(s string, max int, tail string) string {
	if len(s) <= max {
		return s
	}
	if len(tail) > max {
		tail = ""
	}
	cut := max - len(tail)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + tail
}
