package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyHunks(t *testing.T) {
	text := "a\nb\nc\nd\ne\n"
	for _, tc := range []struct{ name, diff, want string }{
		{"replace", "@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n", "a\nb\nC\nd\ne\n"},
		{"insertAtStart", "@@ -1,1 +1,2 @@\n+z\n a\n", "z\na\nb\nc\nd\ne\n"},
		{"deleteLast", "@@ -4,2 +4,1 @@\n d\n-e\n", "a\nb\nc\nd\n"},
		{"twoHunks", "@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -4,2 +4,2 @@\n d\n-e\n+E\n", "A\nb\nc\nd\nE\n"},
		{"noNewlineAtEnd", "@@ -5,1 +5,1 @@\n-e\n+E\n\\ No newline at end of file\n", "a\nb\nc\nd\nE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyHunks(text, tc.diff)
			if err != nil || got != tc.want {
				t.Errorf("applyHunks = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	// After a removed line the marker is about the old file only.
	if got, err := applyHunks("a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"); err != nil || got != "a\nb\n" {
		t.Errorf("newline added at the end: %q, %v", got, err)
	}
	for name, diff := range map[string]string{
		"contextMismatch": "@@ -2,2 +2,2 @@\n x\n-c\n+C\n",
		"removedMismatch": "@@ -2,2 +2,2 @@\n b\n-x\n+C\n",
		"pastEnd":         "@@ -9,1 +9,1 @@\n-e\n+E\n",
		"outOfOrder":      "@@ -4,1 +4,1 @@\n-d\n+D\n@@ -1,1 +1,1 @@\n-a\n+A\n",
		"noHeader":        "-a\n+A\n",
		"badLine":         "@@ -1,1 +1,1 @@\n?a\n",
	} {
		if got, err := applyHunks(text, diff); err == nil {
			t.Errorf("%s: applyHunks = %q, want an error", name, got)
		}
	}
}

func fileChange(kind, path, diff string) []byte {
	line, _ := json.Marshal(map[string]any{"method": "item/completed", "params": map[string]any{"item": map[string]any{
		"type": "fileChange", "id": "call_1", "status": "completed",
		"changes": []any{map[string]any{"path": path, "kind": map[string]any{"type": kind, "move_path": nil}, "diff": diff}},
	}}})
	return line
}

// TestReenact: completed fileChange items change the working directory as
// the real server did; anything aimed outside it is refused and writes
// nothing.
func TestReenact(t *testing.T) {
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "a.go"), []byte("package a\nvar x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := [][]byte{
		fileChange("update", filepath.Join(cwd, "a.go"), "@@ -1,2 +1,2 @@\n package a\n-var x = 1\n+var x = 2\n"),
		fileChange("add", filepath.Join(cwd, "sub", "b.txt"), "hello\n"),
		fileChange("add", "c.txt", "relative\n"),
		fileChange("delete", filepath.Join(cwd, "c.txt"), "relative\n"),
	}
	for _, s := range steps {
		if err := reenact(s, cwd); err != nil {
			t.Fatalf("reenact(%s): %v", s, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "a.go")); string(b) != "package a\nvar x = 2\n" {
		t.Errorf("a.go = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "sub", "b.txt")); string(b) != "hello\n" {
		t.Errorf("sub/b.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(cwd, "c.txt")); !os.IsNotExist(err) {
		t.Errorf("c.txt still exists: %v", err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(cwd, "link")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{
		fileChange("add", filepath.Join(outside, "x.txt"), "x\n"),
		fileChange("add", "../x.txt", "x\n"),
		fileChange("add", "link/x.txt", "x\n"),
		fileChange("rename", "a.go", ""),
		fileChange("update", "a.go", "@@ -2,1 +2,1 @@\n-var x = 1\n+var x = 3\n"),
	} {
		if err := reenact(bad, cwd); err == nil {
			t.Errorf("reenact(%s) succeeded", bad)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the replay wrote outside its working directory: %v", entries)
	}
	// Other lines and unfinished items change nothing.
	declined := strings.Replace(string(fileChange("add", "d.txt", "d\n")), `"completed"`, `"declined"`, 1)
	for _, other := range []string{declined, `{"method":"turn/completed","params":{}}`, `{"id":1,"result":{"fileChange":true}}`} {
		if err := reenact([]byte(other), cwd); err != nil {
			t.Errorf("reenact(%s): %v", other, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cwd, "d.txt")); !os.IsNotExist(err) {
		t.Error("a declined file change was re-enacted")
	}
}

func FuzzApplyHunks(f *testing.F) {
	f.Add("a\nb\nc\n", "@@ -2,1 +2,1 @@\n-b\n+B\n")
	f.Add("a\n", "@@ -1,1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n")
	f.Add("", "@@ -0,0 +1,1 @@\n+x\n")
	f.Fuzz(func(t *testing.T, text, diff string) {
		out, err := applyHunks(text, diff)
		if err != nil {
			return
		}
		// A diff that only adds lines keeps every original line, in order.
		if !strings.Contains(diff, "\n-") && !strings.HasPrefix(diff, "-") && !strings.Contains(diff, `\`) {
			rest := out
			for _, l := range splitLines(text) {
				i := strings.Index(rest, strings.TrimSuffix(l, "\n"))
				if i < 0 {
					t.Fatalf("applyHunks(%q, %q) = %q lost line %q", text, diff, out, l)
				}
				rest = rest[i+len(strings.TrimSuffix(l, "\n")):]
			}
		}
	})
}
