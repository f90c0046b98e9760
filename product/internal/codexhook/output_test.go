package codexhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// stopOutputKeys are the keys of codex 0.171.0's stop.command.output
// schema, which rejects any other (verified in the contract tier).
var stopOutputKeys = map[string]bool{"continue": true, "decision": true, "reason": true, "stopReason": true, "suppressOutput": true, "systemMessage": true}

func TestStopOutput_Encode(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  StopOutput
		want string
	}{
		{"LetStop", StopOutput{}, ""},
		{"Block", StopOutput{Block: true, Reason: "ctx <a> & b"}, `{"decision":"block","reason":"ctx <a> & b"}` + "\n"},
		{"BlockAtLimit", StopOutput{Block: true, Reason: strings.Repeat("é", MaxReason/2)}, ""},
		{"Message", StopOutput{SystemMessage: "note"}, `{"systemMessage":"note"}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.out.Encode(&b); err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && b.String() != tc.want {
				t.Errorf("Encode = %q, want %q", b.String(), tc.want)
			}
			if b.Len() == 0 {
				if tc.out.Block || tc.out.SystemMessage != "" {
					t.Error("nothing written")
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(b.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			for k := range got {
				if !stopOutputKeys[k] {
					t.Errorf("key %q is not in codex's output schema", k)
				}
			}
			if tc.out.Block && (got["decision"] != "block" || got["reason"] != tc.out.Reason) {
				t.Errorf("Encode = %s", b.Bytes())
			}
		})
	}
}

func TestStopOutput_EncodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  StopOutput
		want error
	}{
		{"EmptyReason", StopOutput{Block: true}, ErrEmptyReason},
		{"BlankReason", StopOutput{Block: true, Reason: " \n\t"}, ErrEmptyReason},
		{"LongReason", StopOutput{Block: true, Reason: strings.Repeat("x", MaxReason+1)}, ErrLongReason},
		{"BadUTF8", StopOutput{Block: true, Reason: "a\xffb"}, ErrReasonUTF8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.out.Encode(&b); !errors.Is(err, tc.want) {
				t.Errorf("Encode = %v, want %v", err, tc.want)
			}
			if b.Len() != 0 {
				t.Errorf("wrote %q on error", b.String())
			}
		})
	}
}

func TestClip(t *testing.T) {
	const tail = "\n[cut]"
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"0123456789abc", 10, "0123" + tail},
		{"ééééé", 8, "é" + tail},                // 2-byte runes: never split one
		{"abcdef", 3, "abc"},                    // tail longer than max is dropped
		{strings.Repeat("✓", 5), 9, "✓" + tail}, // 3-byte runes
	} {
		got := Clip(tc.s, tc.max, tail)
		if got != tc.want || len(got) > tc.max && len(tc.s) > tc.max || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
	}
}
