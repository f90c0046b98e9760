package codexhook

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// needleSpec is the hook as Needle installs it; any `… hook codex` command
// is Needle's, wherever the binary lives.
func needleSpec(bin string) Spec {
	return Spec{
		Event:   EventStop,
		Handler: Handler{Command: Command(bin, "hook", "codex", "--data-dir", "/home/u/.needle"), Timeout: 180, StatusMessage: "Needle"},
		Owns:    func(c string) bool { return strings.Contains(c, " hook codex") },
	}
}

// theirs is a user's hooks file: other events, another Stop group with a
// matcher-less handler and keys Needle does not know, in a deliberate order.
const theirs = `{
  "zz_comment": "kept",
  "hooks": {
    "PreToolUse": [{"matcher": "^Bash$", "hooks": [{"type": "command", "command": "audit.sh", "timeout": 5}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "async": false, "x-extra": [1, 2.50, null]}]}],
    "SessionStart": []
  }
}
`

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decoded is the file as plain JSON data, for comparisons that do not
// depend on this package's own parser.
func decoded(t *testing.T, path string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func stopHandlers(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	groups, _ := decoded(t, path)["hooks"].(map[string]any)["Stop"].([]any)
	for _, g := range groups {
		hs, _ := g.(map[string]any)["hooks"].([]any)
		for _, h := range hs {
			out = append(out, h.(map[string]any))
		}
	}
	return out
}

func TestInstall_NewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".codex", "hooks.json")
	spec := needleSpec("/opt/needle")
	res, err := Install(path, spec)
	if err != nil || !res.Changed {
		t.Fatalf("Install = %+v, %v", res, err)
	}
	want := map[string]any{"hooks": map[string]any{"Stop": []any{map[string]any{"hooks": []any{map[string]any{
		"type": "command", "command": "/opt/needle hook codex --data-dir /home/u/.needle", "timeout": 180.0, "statusMessage": "Needle"}}}}}}
	if diff := cmp.Diff(want, decoded(t, path)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if res.Key != path+":stop:0:0" || res.Hash != TrustHash(EventStop, nil, spec.Handler) || res.Moved != nil {
		t.Errorf("Result = %+v", res)
	}
}

func TestInstall_KeepsOtherHooks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hooks.json")
	writeFile(t, path, theirs)
	before := decoded(t, path)
	res, err := Install(path, needleSpec("/opt/needle"))
	if err != nil || !res.Changed {
		t.Fatalf("Install = %+v, %v", res, err)
	}
	if res.Key != path+":stop:1:0" {
		t.Errorf("key = %s: Needle's group must come after the user's", res.Key)
	}
	after := decoded(t, path)
	// Everything but the appended group is as it was.
	stop := after["hooks"].(map[string]any)["Stop"].([]any)
	after["hooks"].(map[string]any)["Stop"] = stop[:1]
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("other content changed (-before +after):\n%s", diff)
	}
	// And in its order: the user's keys keep their places.
	text := readFile(t, path)
	if i, j, k := strings.Index(text, "zz_comment"), strings.Index(text, "PreToolUse"), strings.Index(text, "SessionStart"); !(i < j && j < k) {
		t.Errorf("key order changed:\n%s", text)
	}
}

func TestInstall_Twice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hooks.json")
	writeFile(t, path, theirs)
	first, err := Install(path, needleSpec("/opt/needle"))
	if err != nil {
		t.Fatal(err)
	}
	text := readFile(t, path)
	second, err := Install(path, needleSpec("/opt/needle"))
	if err != nil || second.Changed || second.Key != first.Key || second.Hash != first.Hash {
		t.Errorf("second Install = %+v, %v; first %+v", second, err, first)
	}
	if got := readFile(t, path); got != text {
		t.Errorf("second Install rewrote the file:\n%s", got)
	}
	if n := len(stopHandlers(t, path)); n != 2 {
		t.Errorf("%d Stop handlers, want the user's and one of Needle's", n)
	}
}

func TestInstall_UpdatesInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hooks.json")
	writeFile(t, path, theirs)
	first, _ := Install(path, needleSpec("/opt/needle"))
	writeFile(t, path, strings.Replace(readFile(t, path), `"hooks": {`, `"hooks": {"PostToolUse": [],`, 1))
	moved, err := Install(path, needleSpec("/usr/local/bin/needle"))
	if err != nil || !moved.Changed || moved.Key != first.Key || moved.Hash == first.Hash {
		t.Fatalf("Install of a new binary = %+v, %v; first %+v", moved, err, first)
	}
	hs := stopHandlers(t, path)
	if len(hs) != 2 || !strings.HasPrefix(hs[1]["command"].(string), "/usr/local/bin/needle ") {
		t.Errorf("handlers = %v", hs)
	}
}

func TestInstall_CollapsesDuplicates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hooks.json")
	writeFile(t, path, `{"hooks":{"Stop":[
	  {"hooks":[{"type":"command","command":"/a/needle hook codex"}]},
	  {"hooks":[{"type":"command","command":"mine.sh"},{"type":"command","command":"/b/needle hook codex"}]},
	  {"hooks":[{"type":"command","command":"last.sh"}]}]}}`)
	res, err := Install(path, needleSpec("/opt/needle"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, h := range stopHandlers(t, path) {
		cmds = append(cmds, h["command"].(string))
	}
	want := []string{"/opt/needle hook codex --data-dir /home/u/.needle", "mine.sh", "last.sh"}
	if diff := cmp.Diff(want, cmds); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if res.Key != path+":stop:0:0" {
		t.Errorf("key = %s", res.Key)
	}
	// mine.sh did not move (group 1, now handler 0 instead of 0: it was
	// first already); nothing after the dropped duplicate moved groups.
	if len(res.Moved) != 0 {
		t.Errorf("Moved = %v", res.Moved)
	}
}

func TestUninstall(t *testing.T) {
	t.Run("RemovesOnlyNeedle", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hooks.json")
		writeFile(t, path, theirs)
		before := decoded(t, path)
		in, err := Install(path, needleSpec("/opt/needle"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Uninstall(path, needleSpec("/elsewhere/needle"))
		if err != nil || !res.Changed || res.Moved != nil {
			t.Fatalf("Uninstall = %+v, %v", res, err)
		}
		if want := []Trusted{{in.Key, in.Hash}}; !cmp.Equal(want, res.Removed) {
			t.Errorf("Removed = %v, want the installed handler's trust %v", res.Removed, want)
		}
		if diff := cmp.Diff(before, decoded(t, path)); diff != "" {
			t.Errorf("file after install+uninstall (-before +after):\n%s", diff)
		}
	})
	t.Run("NothingToRemove", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "hooks.json")
		writeFile(t, path, theirs)
		res, err := Uninstall(path, needleSpec("/opt/needle"))
		if err != nil || res.Changed || readFile(t, path) != theirs {
			t.Errorf("Uninstall = %+v, %v; file changed", res, err)
		}
		other := filepath.Join(dir, "other.json")
		writeFile(t, other, `{"x": 1}`)
		if res, err := Uninstall(other, needleSpec("/opt/needle")); err != nil || res.Changed || readFile(t, other) != `{"x": 1}` {
			t.Errorf("Uninstall of a file without hooks = %+v, %v: %s", res, err, readFile(t, other))
		}
		missing := filepath.Join(dir, "none", "hooks.json")
		if res, err := Uninstall(missing, needleSpec("/opt/needle")); err != nil || res.Changed {
			t.Errorf("Uninstall of a missing file = %+v, %v", res, err)
		}
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Uninstall created %s", missing)
		}
	})
	t.Run("EmptyEventRemoved", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hooks.json")
		if _, err := Install(path, needleSpec("/opt/needle")); err != nil {
			t.Fatal(err)
		}
		if _, err := Uninstall(path, needleSpec("/opt/needle")); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"hooks": map[string]any{}}, decoded(t, path)); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("ReportsMovedHooks", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hooks.json")
		writeFile(t, path, `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"a.sh"}]},
		  {"hooks":[{"type":"command","command":"/x/needle hook codex"}]},
		  {"hooks":[{"type":"command","command":"b.sh"},{"type":"prompt"}]}]}}`)
		res, err := Uninstall(path, needleSpec("/opt/needle"))
		if err != nil {
			t.Fatal(err)
		}
		want := []Moved{{path + ":stop:2:0", path + ":stop:1:0"}, {path + ":stop:2:1", path + ":stop:1:1"}}
		if diff := cmp.Diff(want, res.Moved); diff != "" {
			t.Errorf("Moved (-want +got):\n%s", diff)
		}
	})
}

func TestInstall_MalformedChangesNothing(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"NotJSON", `{"hooks": {`, "not valid JSON"},
		{"DuplicateKey", `{"hooks": {}, "hooks": {"Stop": []}}`, "duplicate key"},
		{"TopArray", `[]`, "top level"},
		{"HooksArray", `{"hooks": []}`, `"hooks" is not an object`},
		{"StopObject", `{"hooks": {"Stop": {}}}`, "hooks.Stop is not an array"},
		{"GroupString", `{"hooks": {"Stop": ["x"]}}`, "hooks.Stop[0] is not an object"},
		{"MatcherNumber", `{"hooks": {"Stop": [{"matcher": 1, "hooks": []}]}}`, "matcher"},
		{"HandlersObject", `{"hooks": {"Stop": [{"hooks": {}}]}}`, "hooks.Stop[0].hooks is not an array"},
		{"HandlerNoType", `{"hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}}`, "type"},
		{"CommandNotString", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": ["x"]}]}]}}`, "command"},
		{"BadUTF8", "{\"hooks\": {\"x\": \"\xff\"}}", "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hooks.json")
			writeFile(t, path, tc.data)
			for _, op := range []func(string, Spec) (Result, error){Install, Uninstall} {
				_, err := op(path, needleSpec("/opt/needle"))
				var fe *FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v, want a *FileError about %q", err, tc.want)
				}
				if got := readFile(t, path); got != tc.data {
					t.Errorf("the file changed: %q", got)
				}
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("left files behind: %v", entries)
			}
		})
	}
}

func TestInstall_FollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "hooks.json")
	writeFile(t, real, theirs)
	link := filepath.Join(dir, "home", "hooks.json")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	res, err := Install(link, needleSpec("/opt/needle"))
	if err != nil || res.Key != link+":stop:1:0" {
		t.Fatalf("Install = %+v, %v", res, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if n := len(stopHandlers(t, real)); n != 2 {
		t.Errorf("the target has %d Stop handlers", n)
	}
}

func TestInstall_BadSpec(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hooks.json")
	for _, spec := range []Spec{
		{Event: "Nope", Handler: Handler{Command: "x hook codex"}, Owns: func(string) bool { return true }},
		{Event: EventStop, Handler: Handler{Command: "x"}},
		{Event: EventStop, Handler: Handler{Command: "x"}, Owns: func(string) bool { return false }},
		{Event: EventStop, Handler: Handler{Command: " "}, Owns: func(string) bool { return true }},
		{Event: EventStop, Handler: Handler{Command: "x", Timeout: -1}, Owns: func(string) bool { return true }},
	} {
		if _, err := Install(path, spec); err == nil {
			t.Errorf("Install(%+v) succeeded", spec)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("a bad spec wrote the file")
	}
}

// TestInstall_RefusesNotRegular: a hooks file or config that is not a
// regular file (a named pipe nobody writes, a directory) is refused with a
// *FileError at once; nothing blocks on it and nothing is written.
func TestInstall_RefusesNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo", "hooks.json")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("make a named pipe (Needle runs on Linux, which has them): %v", err)
	}
	asDir := filepath.Join(dir, "dir", "hooks.json")
	if err := os.MkdirAll(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
		op               func(string) error
	}{
		{"InstallFIFO", fifo, "a named pipe", func(p string) error { _, err := Install(p, needleSpec("/opt/needle")); return err }},
		{"UninstallFIFO", fifo, "a named pipe", func(p string) error { _, err := Uninstall(p, needleSpec("/opt/needle")); return err }},
		{"InspectConfigFIFO", fifo, "a named pipe", func(p string) error { _, err := InspectConfig(p); return err }},
		{"TrustFIFO", fifo, "a named pipe", func(p string) error { _, err := Trust(p, "k", "sha256:00"); return err }},
		{"InstallDir", asDir, "a directory", func(p string) error { _, err := Install(p, needleSpec("/opt/needle")); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- tc.op(tc.path) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute): // a failsafe: without the check the open blocks for ever
				t.Fatal("blocked on a file that is not a regular file")
			}
			var fe *FileError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "is not a regular file ("+tc.want+")") {
				t.Errorf("err = %v, want a *FileError naming %s", err, tc.want)
			}
		})
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", fi, err)
	}
}
