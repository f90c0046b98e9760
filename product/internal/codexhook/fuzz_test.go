package codexhook

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecode: any input either decodes to an event with its required
// fields, or fails with an *InputError or ErrTooLarge; never a panic.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"stop-marker.json", "stop-active.json", "stop-nomessage.json", "stop-fenced.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(validStop))
	f.Add([]byte(`{"hook_event_name":"SessionStart","session_id":"s","cwd":"/","source":{"a":[1,{"b":null}]}}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Decode(data)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if ev.Name == "" || ev.SessionID == "" || ev.Cwd == "" || (ev.Name == EventStop) != (ev.Stop != nil) {
			t.Fatalf("incomplete event %+v", ev)
		}
		again, err := Decode(data)
		if err != nil || again.SessionID != ev.SessionID {
			t.Fatal("decoding is not deterministic")
		}
	})
}

// FuzzInstall: whatever the hooks file holds, Install either refuses it
// with a *FileError and leaves it byte for byte, or leaves exactly one
// Needle handler, which Uninstall then removes.
func FuzzInstall(f *testing.F) {
	f.Add([]byte(theirs))
	f.Add([]byte(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/x/needle hook codex"}]},{"hooks":[]}]}}`))
	f.Add([]byte(`{"hooks":{"Stop":[{"matcher":null}]},"x":[1e400]}`))
	f.Add([]byte(``))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "hooks.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		spec := needleSpec("/opt/needle")
		res, err := Install(path, spec)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Install: untyped error %v", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatal("a refused file changed")
			}
			return
		}
		text, _ := os.ReadFile(path)
		tree, err := parseTree(text)
		if err != nil {
			t.Fatalf("Install wrote invalid JSON: %v\n%s", err, text)
		}
		if n := countOwned(tree, spec); n != 1 {
			t.Fatalf("%d Needle handlers after Install:\n%s", n, text)
		}
		if !strings.HasSuffix(res.Key, ":stop:"+strings.SplitN(res.Key, ":stop:", 2)[1]) {
			t.Fatalf("key %s", res.Key)
		}
		if _, err := Uninstall(path, spec); err != nil {
			t.Fatalf("Uninstall after Install: %v", err)
		}
		text, _ = os.ReadFile(path)
		if tree, err = parseTree(text); err != nil || countOwned(tree, spec) != 0 {
			t.Fatalf("Uninstall left %v:\n%s", err, text)
		}
	})
}

func countOwned(root *node, spec Spec) int {
	n := 0
	groups := root.get("hooks").get(string(spec.Event))
	if groups == nil {
		return 0
	}
	for _, g := range groups.items {
		if hs := g.get("hooks"); hs != nil {
			for _, h := range hs.items {
				if owned(h, spec.Owns) {
					n++
				}
			}
		}
	}
	return n
}

// FuzzTrust: whatever the config holds, Trust either refuses it and leaves
// it byte for byte, or records the hash, after which Trust changes nothing.
func FuzzTrust(f *testing.F) {
	f.Add([]byte(userConfig))
	f.Add([]byte("hooks = { state = {} }\n"))
	f.Add([]byte("[hooks.state.\"" + key + "\"]\ntrusted_hash = \"sha256:old\"\n"))
	f.Add([]byte("a = \"\"\"\n[hooks.state.\"x\"]\n\"\"\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		changed, err := Trust(path, key, "sha256:new")
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Trust: untyped error %v", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatal("a refused config changed")
			}
			return
		}
		if got := trustedHash(t, path, key); got != "sha256:new" {
			t.Fatalf("trusted_hash = %v (changed %v)", got, changed)
		}
		if again, err := Trust(path, key, "sha256:new"); err != nil || again {
			t.Fatalf("second Trust = %v, %v", again, err)
		}
	})
}
