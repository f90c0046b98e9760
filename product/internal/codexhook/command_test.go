package codexhook

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCommand runs each command line through a real POSIX shell, the way
// codex runs hooks, and checks that the program gets exactly the argv.
func TestCommand(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal("no sh on PATH: the hook command lines cannot be checked")
	}
	for _, argv := range [][]string{
		{"printf", `%s\0`, "plain", "/abs/path-1.0_x", "--data-dir=/x"},
		{"printf", `%s\0`, "with space", "it's", `"double"`, `back\slash`, "$HOME", "`id`", "a;b", "a&&b", "~", "*", "", "é ✓", "new\nline"},
		{"printf", `%s\0`, "X=1", "#comment", "!bang", "{a,b}"},
	} {
		line := Command(argv...)
		out, err := exec.Command(sh, "-c", line).Output()
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if diff := cmp.Diff(argv[2:], got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", line, diff)
		}
	}
	if got := Command("/usr/bin/needle", "hook", "codex"); got != "/usr/bin/needle hook codex" {
		t.Errorf("plain words were quoted: %s", got)
	}
}

// TestWords: a real POSIX shell is the oracle for the lines Words splits,
// and Words inverts Command.
func TestWords(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal("no sh on PATH")
	}
	for _, line := range []string{
		`/usr/bin/needle hook codex --data-dir /x`,
		`'/opt/my needle/needle' hook codex --data-dir '/home/u/it'\''s'`,
		`"/opt/x y/needle"   hook	codex "a \" \\ b" c\ d ''`,
		`needle hook codex --routes=a,b "" x`,
	} {
		words, ok := Words(line)
		if !ok {
			t.Fatalf("Words(%q) refused", line)
		}
		out, err := exec.Command(sh, "-c", "printf '%s\\0' "+line).Output()
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if diff := cmp.Diff(got, words); diff != "" {
			t.Errorf("%s (-shell +Words):\n%s", line, diff)
		}
	}
	for _, line := range []string{`a; b`, `a | b`, `a $(b)`, "a `b`", `"a $HOME"`, `'open`, `"open`, `a \`, `a > f`, "a\nb"} {
		if words, ok := Words(line); ok {
			t.Errorf("Words(%q) = %q, want refused", line, words)
		}
	}
}

func FuzzWords(f *testing.F) {
	f.Add("/x/needle", "it's \"q\" $HOME")
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.ContainsRune(a+b, 0) {
			return
		}
		argv := []string{a, "hook", "codex", b}
		got, ok := Words(Command(argv...))
		if !ok || !cmp.Equal(got, argv) {
			t.Fatalf("Words(Command(%q)) = %q, %v", argv, got, ok)
		}
	})
}
