package httpguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadOrCreateToken(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "token")
		tok, err := LoadOrCreateToken(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(tok) != 64 || strings.Trim(tok, "0123456789abcdef") != "" {
			t.Fatalf("token %q is not 256 bits of hex", tok)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("token file: %v, %v; want mode 0600", fi.Mode(), err)
		}
		again, err := LoadOrCreateToken(path)
		if err != nil || again != tok {
			t.Fatalf("second load = %q, %v; want the same token", again, err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("%d entries in the directory, want the token alone (no temp files)", len(entries))
		}
		if other, _ := LoadOrCreateToken(filepath.Join(t.TempDir(), "token")); other == tok {
			t.Error("two data dirs got the same token")
		}
	})
	for name, setup := range map[string]func(path string) error{
		"ErrWorldReadable": func(p string) error { return os.WriteFile(p, []byte(NewSecret()+"\n"), 0o644) },
		"ErrGroupReadable": func(p string) error {
			if err := os.WriteFile(p, []byte(NewSecret()+"\n"), 0o600); err != nil {
				return err
			}
			return os.Chmod(p, 0o640)
		},
		"ErrGarbage":   func(p string) error { return os.WriteFile(p, []byte("hunter2\n"), 0o600) },
		"ErrUpperHex":  func(p string) error { return os.WriteFile(p, []byte(strings.ToUpper(NewSecret())), 0o600) },
		"ErrDirectory": func(p string) error { return os.Mkdir(p, 0o700) },
		"ErrSymlink": func(p string) error {
			target := p + ".real"
			if err := os.WriteFile(target, []byte(NewSecret()), 0o600); err != nil {
				return err
			}
			return os.Symlink(target, p)
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "token")
			if err := setup(path); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(path)
			if tok, err := LoadOrCreateToken(path); err == nil {
				t.Fatalf("LoadOrCreateToken = %q, want an error", tok)
			}
			after, _ := os.Lstat(path)
			if before.Mode() != after.Mode() || before.Size() != after.Size() {
				t.Error("the refused token file was changed")
			}
		})
	}
}
