package product

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCodexSettings_DefaultHome: a worker command without codex.home runs
// with the home the user's own codex reads — $CODEX_HOME, else ~/.codex —
// when that is a directory; a codex.home setting wins; with none there is
// no home to copy.
func TestCodexSettings_DefaultHome(t *testing.T) {
	home, codexHome, set := t.TempDir(), t.TempDir(), t.TempDir()
	dotCodex := filepath.Join(home, ".codex")
	c := &cli{}
	cases := []struct {
		name, codexHomeEnv, setting string
		mkDotCodex                  bool
		want                        string
	}{
		{"CODEX_HOME", codexHome, "", true, codexHome},
		{"~/.codex", "", "", true, dotCodex},
		{"no ~/.codex", "", "", false, ""},
		{"CODEX_HOME not a directory", filepath.Join(codexHome, "absent"), "", true, ""},
		{"the setting wins", codexHome, set, true, set},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("CODEX_HOME", tc.codexHomeEnv)
			os.RemoveAll(dotCodex)
			if tc.mkDotCodex {
				if err := os.Mkdir(dotCodex, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			settings := map[string]string{"codex.command": "sh"}
			if tc.setting != "" {
				settings["codex.home"] = tc.setting
			}
			cfg, err := c.codexSettings(settings, "")
			if err != nil || cfg == nil {
				t.Fatalf("codexSettings: %v %v", cfg, err)
			}
			if cfg.Home != tc.want {
				t.Errorf("home %q, want %q", cfg.Home, tc.want)
			}
		})
	}
	// No worker command: no worker, whatever homes exist.
	if cfg, err := c.codexSettings(map[string]string{}, ""); cfg != nil || err != nil {
		t.Errorf("no command: %+v %v", cfg, err)
	}
}
