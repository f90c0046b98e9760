package codexhook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

const key = "/home/u/.codex/hooks.json:stop:1:0"

const userConfig = `# my settings
model = "gpt-5" # inline comment
[features]
hooks = true

[[hooks.Stop]]
[[hooks.Stop.hooks]]
type = "command"
command = "notify-send done"

[hooks.state."/home/u/.codex/hooks.json:stop:0:0"]
enabled = false
`

func trustedHash(t *testing.T, path, key string) any {
	t.Helper()
	var doc map[string]any
	if _, err := toml.DecodeFile(path, &doc); err != nil {
		t.Fatal(err)
	}
	hooks, _ := doc["hooks"].(map[string]any)
	state, _ := hooks["state"].(map[string]any)
	entry, _ := state[key].(map[string]any)
	return entry["trusted_hash"]
}

func TestTrust(t *testing.T) {
	t.Run("NewFile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.toml")
		if changed, err := Trust(path, key, "sha256:aa"); err != nil || !changed {
			t.Fatalf("Trust = %v, %v", changed, err)
		}
		if got := trustedHash(t, path, key); got != "sha256:aa" {
			t.Errorf("trusted_hash = %v", got)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v", fi.Mode())
		}
	})
	t.Run("KeepsTheRest", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.toml")
		writeFile(t, path, userConfig)
		if changed, err := Trust(path, key, "sha256:aa"); err != nil || !changed {
			t.Fatalf("Trust = %v, %v", changed, err)
		}
		text := readFile(t, path)
		if !strings.HasPrefix(text, userConfig) {
			t.Errorf("the user's text changed:\n%s", text)
		}
		if got := trustedHash(t, path, key); got != "sha256:aa" {
			t.Errorf("trusted_hash = %v", got)
		}
		if changed, err := Trust(path, key, "sha256:aa"); err != nil || changed || readFile(t, path) != text {
			t.Errorf("second Trust = %v, %v", changed, err)
		}
		// A new hash (the binary moved) updates the one line.
		if changed, err := Trust(path, key, "sha256:bb"); err != nil || !changed {
			t.Fatalf("Trust with a new hash = %v, %v", changed, err)
		}
		if got := trustedHash(t, path, key); got != "sha256:bb" || strings.Count(readFile(t, path), key) != 1 {
			t.Errorf("trusted_hash = %v in\n%s", got, readFile(t, path))
		}
		// Untrust removes exactly the block.
		if changed, err := Untrust(path, key, "sha256:bb"); err != nil || !changed {
			t.Fatalf("Untrust = %v, %v", changed, err)
		}
		if got := readFile(t, path); got != userConfig {
			t.Errorf("after Untrust:\n%s", got)
		}
	})
	t.Run("NoFinalNewline", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.toml")
		writeFile(t, path, `model = "x"`)
		if _, err := Trust(path, key, "sha256:aa"); err != nil {
			t.Fatal(err)
		}
		if got := trustedHash(t, path, key); got != "sha256:aa" {
			t.Errorf("trusted_hash = %v", got)
		}
	})
	t.Run("QuotedKey", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.toml")
		odd := `/home/a "b" \c/é.codex/hooks.json:stop:0:0`
		if _, err := Trust(path, odd, "sha256:aa"); err != nil {
			t.Fatal(err)
		}
		if got := trustedHash(t, path, odd); got != "sha256:aa" {
			t.Errorf("trusted_hash = %v", got)
		}
	})
}

func TestTrust_RefusesAndChangesNothing(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"NotTOML", "model = \n"},
		{"InlineHooks", "hooks = { state = {} }\n"},
		{"InlineStateDotted", "model = \"m\"\n'hooks' . state = {}\n"},
		{"InlineStateInTable", "[hooks]\nstate = { }\n[other]\nx = 1\n"},
		{"InlineEntry", "[hooks.state]\n\"" + key + "\" = { trusted_hash = \"sha256:old\" }\n"},
		{"DottedEntry", "[hooks]\nstate.\"" + key + "\".trusted_hash = \"sha256:old\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			writeFile(t, path, tc.data)
			_, err := Trust(path, key, "sha256:aa")
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Errorf("Trust = %v, want a *FileError", err)
			}
			if got := readFile(t, path); got != tc.data {
				t.Errorf("the file changed:\n%s", got)
			}
		})
	}
}

func TestUntrust_LeavesOtherForms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	data := "[hooks.state.\"" + key + "\"]\ntrusted_hash = \"sha256:aa\"\nenabled = true\n"
	writeFile(t, path, data)
	if changed, err := Untrust(path, key, "sha256:aa"); err != nil || changed || readFile(t, path) != data {
		t.Errorf("Untrust of an entry the user extended = %v, %v", changed, err)
	}
	if changed, err := Untrust(path, key, "sha256:other"); err != nil || changed {
		t.Errorf("Untrust of another hash = %v, %v", changed, err)
	}
}

func TestMoveTrust(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	const from, to, hash = "/h/hooks.json:stop:2:0", "/h/hooks.json:stop:1:0", "sha256:" + "ab"
	if _, err := Trust(path, from, hash); err != nil {
		t.Fatal(err)
	}
	changed, err := MoveTrust(path, from, to)
	if err != nil || !changed {
		t.Fatalf("MoveTrust = %v, %v", changed, err)
	}
	if got := trustedHash(t, path, to); got != hash {
		t.Errorf("moved entry hash = %v", got)
	}
	if got := trustedHash(t, path, from); got != nil {
		t.Errorf("old entry still there: %v", got)
	}
	// Another form, or a taken key: left for the user.
	hand := "[hooks.state.\"" + from + "\"]\ntrusted_hash = \"" + hash + "\"\nnote = \"mine\"\n"
	other := filepath.Join(dir, "other.toml")
	if err := os.WriteFile(other, []byte(hand), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := MoveTrust(other, from, to); err != nil || changed {
		t.Errorf("MoveTrust of a hand-written entry = %v, %v", changed, err)
	}
	if _, err := Trust(path, from, hash); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if changed, err := MoveTrust(path, from, to); err != nil || changed {
		t.Errorf("MoveTrust onto a taken key = %v, %v", changed, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("file changed:\n%s", after)
	}
}

func TestInspectConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	facts, err := InspectConfig(path)
	if err != nil || facts.TOMLHooks || len(facts.TrustedProjects) != 0 {
		t.Fatalf("missing file: %+v, %v", facts, err)
	}
	text := ProjectLine("/w/my \"repo\"") + "\n[projects.\"/other\"]\ntrust_level = \"untrusted\"\n" +
		"[hooks.state.\"k\"]\ntrusted_hash = \"h\"\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	facts, err = InspectConfig(path)
	if err != nil || facts.TOMLHooks || !facts.TrustedProjects["/w/my \"repo\""] || facts.TrustedProjects["/other"] {
		t.Errorf("%+v, %v", facts, err)
	}
	if err := os.WriteFile(path, []byte(text+"[[hooks.Stop]]\nhooks = []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if facts, err = InspectConfig(path); err != nil || !facts.TOMLHooks {
		t.Errorf("TOML hooks not seen: %+v, %v", facts, err)
	}
	for _, bad := range []string{"x = ", "hooks = { state = {} }\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		var fe *FileError
		if _, err := InspectConfig(path); !errors.As(err, &fe) {
			t.Errorf("InspectConfig(%q) = %v, want a FileError", bad, err)
		}
	}
}
