package codexhook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The recorded payloads are what codex 0.171.0 sent a Stop hook
// (contract_test.go records them with NEEDLE_UPDATE=1), paths replaced by
// ${CWD} and ${CODEX_HOME}.
func TestDecode_Recorded(t *testing.T) {
	want := map[string]Stop{
		"stop-marker.json":    {LastAssistantMessage: "I need the implementation first.\n@@need locate.implementation symbol:Greet", HasLastAssistantMessage: true},
		"stop-active.json":    {Active: true, LastAssistantMessage: "Greet is in greet.go; done.", HasLastAssistantMessage: true},
		"stop-none.json":      {LastAssistantMessage: "Greet returns a greeting; nothing else is needed.", HasLastAssistantMessage: true},
		"stop-malformed.json": {LastAssistantMessage: "Let me ask Needle.\n@@need locate.implementation symbol:", HasLastAssistantMessage: true},
		"stop-fenced.json":    {LastAssistantMessage: "A marker looks like this:\n```\n@@need locate.implementation symbol:Greet\n```\nNo need to run it.", HasLastAssistantMessage: true},
		"stop-two.json":       {LastAssistantMessage: "@@need locate.implementation symbol:Greet\n@@need tests.relevant symbol:Greet", HasLastAssistantMessage: true},
		"stop-nomessage.json": {},
	}
	for name, stop := range want {
		t.Run(name, func(t *testing.T) {
			ev, err := Decode(mustRead(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Name != EventStop || ev.Cwd != "${CWD}" || ev.Model != "mock-model" || ev.PermissionMode != "bypassPermissions" ||
				len(ev.SessionID) != 36 || len(ev.TurnID) != 36 || !strings.HasPrefix(ev.TranscriptPath, "${CODEX_HOME}/sessions/") || ev.Unknown != nil {
				t.Errorf("event = %+v", ev)
			}
			if diff := cmp.Diff(stop, *ev.Stop); diff != "" {
				t.Errorf("stop (-want +got):\n%s", diff)
			}
		})
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const validStop = `{"session_id":"s","turn_id":"t","transcript_path":null,"cwd":"/w","hook_event_name":"Stop","model":"m","permission_mode":"default","stop_hook_active":false,"last_assistant_message":"hi"}`

func TestDecode_ForwardCompatible(t *testing.T) {
	t.Run("UnknownFieldsListed", func(t *testing.T) {
		in := strings.Replace(validStop, `{`, `{"agent_id":"a","zeta":{"x":[1]},`, 1)
		ev, err := Decode([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"agent_id", "zeta"}, ev.Unknown); diff != "" {
			t.Error(diff)
		}
		if ev.Stop.LastAssistantMessage != "hi" {
			t.Errorf("stop = %+v", ev.Stop)
		}
	})
	t.Run("OptionalFieldsAbsent", func(t *testing.T) {
		ev, err := Decode([]byte(`{"session_id":"s","cwd":"/w","hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":null}`))
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Stop.Active || ev.Stop.HasLastAssistantMessage || ev.TurnID != "" || ev.TranscriptPath != "" {
			t.Errorf("event = %+v stop = %+v", ev, ev.Stop)
		}
	})
	t.Run("UnknownPermissionMode", func(t *testing.T) {
		ev, err := Decode([]byte(strings.Replace(validStop, `"default"`, `"yolo"`, 1)))
		if err != nil || ev.PermissionMode != "yolo" {
			t.Errorf("Decode = %+v, %v", ev, err)
		}
	})
	t.Run("OtherEvent", func(t *testing.T) {
		ev, err := Decode([]byte(`{"session_id":"s","transcript_path":null,"cwd":"/w","hook_event_name":"SessionStart","model":"m","permission_mode":"default","source":"startup","stop_hook_active":"not a stop field here"}`))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Name != EventSessionStart || ev.Stop != nil || !cmp.Equal(ev.Unknown, []string{"source", "stop_hook_active"}) {
			t.Errorf("event = %+v", ev)
		}
	})
}

func TestDecode_Errors(t *testing.T) {
	for _, tc := range []struct {
		name, in, field string
	}{
		{"NotJSON", `{"session_id":`, ""},
		{"NotObject", `["Stop"]`, ""},
		{"TrailingData", validStop + ` {}`, ""},
		{"DuplicateKey", strings.Replace(validStop, `"model":"m"`, `"last_assistant_message":"@@need x","model":"m"`, 1), ""},
		{"InvalidUTF8", strings.Replace(validStop, `"hi"`, "\"h\xffi\"", 1), ""},
		{"NoEventName", strings.Replace(validStop, `"hook_event_name":"Stop",`, ``, 1), "hook_event_name"},
		{"EmptyEventName", strings.Replace(validStop, `"Stop"`, `""`, 1), "hook_event_name"},
		{"EventNameNumber", strings.Replace(validStop, `"Stop"`, `7`, 1), "hook_event_name"},
		{"NoSession", strings.Replace(validStop, `"session_id":"s",`, ``, 1), "session_id"},
		{"EmptySession", strings.Replace(validStop, `"session_id":"s"`, `"session_id":""`, 1), "session_id"},
		{"NoCwd", strings.Replace(validStop, `"cwd":"/w",`, ``, 1), "cwd"},
		{"NoStopHookActive", strings.Replace(validStop, `"stop_hook_active":false,`, ``, 1), "stop_hook_active"},
		{"StopHookActiveString", strings.Replace(validStop, `"stop_hook_active":false`, `"stop_hook_active":"false"`, 1), "stop_hook_active"},
		{"NoLastMessage", strings.Replace(validStop, `,"last_assistant_message":"hi"`, ``, 1), "last_assistant_message"},
		{"LastMessageObject", strings.Replace(validStop, `"hi"`, `{"text":"hi"}`, 1), "last_assistant_message"},
		{"TurnIDNumber", strings.Replace(validStop, `"turn_id":"t"`, `"turn_id":1`, 1), "turn_id"},
		{"TranscriptNumber", strings.Replace(validStop, `"transcript_path":null`, `"transcript_path":0`, 1), "transcript_path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("Decode = %v, want an *InputError", err)
			}
			if ie.Field != tc.field {
				t.Errorf("field = %q (%v), want %q", ie.Field, err, tc.field)
			}
		})
	}
}

func TestRead_Bounded(t *testing.T) {
	msg := strings.Repeat("x", MaxInput)
	in := strings.Replace(validStop, `"hi"`, `"`+msg+`"`, 1)
	if _, err := Read(strings.NewReader(in)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read of %d bytes = %v, want ErrTooLarge", len(in), err)
	}
	fits := strings.Replace(validStop, `"hi"`, `"`+msg[:MaxInput-len(validStop)]+`"`, 1)
	if ev, err := Read(strings.NewReader(fits)); err != nil || len(ev.Stop.LastAssistantMessage) != MaxInput-len(validStop) {
		t.Errorf("Read of %d bytes: %v", len(fits), err)
	}
}
