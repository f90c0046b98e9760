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
