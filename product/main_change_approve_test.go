package product

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// boundDigests is the binding needle change approve prints before it asks.
var boundDigests = regexp.MustCompile(`(?m)^approving binds:\n  patch        (b3:[0-9a-f]{64})\n  verification (b3:[0-9a-f]{64})\n  lifecycle    (b3:[0-9a-f]{64})\n`)

// fakeAwaitingApproval runs a fake lifecycle (the verified crash scenario) to
// awaiting approval with the real needle change run, in a child process,
// and returns it with the flags that name its repository and data.
func fakeAwaitingApproval(t *testing.T) (sc *crashScenario, flags []string) {
	t.Helper()
	sc = crashScenarios(t, MustFixtureRepo(t, "grepx", false))[0]
	sc.prepareOnly(t, t.TempDir())
	flags = []string{"--repository", filepath.Join(sc.base, "repo"), "--data-dir", filepath.Join(sc.base, "data")}
	cmd := needleCommand(t, append(append([]string{"change", "run"}, flags...), sc.id)...)
	cmd.Env = append(os.Environ(), "NEEDLE_FAKE_SCRIPT="+filepath.Join(sc.base, "script.json"))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "next: needle change approve ") {
		t.Fatalf("change run: %v\n%s", err, out)
	}
	return sc, flags
}

// approve runs needle change approve with stdin and returns its exit
// status, stdout and stderr.
func approve(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := needleCommand(t, append([]string{"change", "approve"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestChangeApprove_Review: needle change approve without digests shows the
// lifecycle, its patch as a diff and the digests it binds, and approves
// only on "yes"; anything else approves nothing. The next: lines change run
// and show print are this short command (issue 25, P7).
func TestChangeApprove_Review(t *testing.T) {
	sc, flags := fakeAwaitingApproval(t)
	show := needleRun(t, "", append(append([]string{"change", "show"}, flags...), sc.id)...)
	next := regexp.MustCompile(`(?m)^next: (needle change approve .*)$`).FindStringSubmatch(show)
	if next == nil || next[1] != "needle change approve --repository "+flags[1]+" --data-dir "+flags[3]+" "+sc.id {
		t.Fatalf("change show's approve line is not the short one:\n%s", show)
	}
	args := append(flags, sc.id)
	for _, answer := range []string{"", "\n", "no\n", "yes please\n", strings.Repeat("y", 300) + "\n"} {
		code, stdout, stderr := approve(t, answer, args...)
		if code != 1 || !strings.Contains(stderr, "not approved") || !strings.Contains(stderr, "Type yes to approve") {
			t.Fatalf("answer %q: exit %d, want 1 and not approved\n%s", answer, code, stderr)
		}
		// What was asked about: the patch as a diff, and the binding.
		for _, want := range []string{"--- a/search.go\n+++ b/search.go\n", "+// one\n", "new file mode", "+++ b/notes/added.txt", "deleted file mode", "criterion 1:", "verification b3:"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("answer %q: the review lacks %q:\n%s", answer, want, stdout)
			}
		}
		if boundDigests.FindStringSubmatch(stdout) == nil {
			t.Fatalf("answer %q: the review names no binding:\n%s", answer, stdout)
		}
	}
	if show2 := needleRun(t, "", append(append([]string{"change", "show"}, flags...), sc.id)...); show2 != show {
		t.Fatalf("declined approvals changed the lifecycle:\n%s\nthen\n%s", show, show2)
	}

	// Bad input: some digests but not all; --json without them.
	if code, _, stderr := approve(t, "yes\n", append([]string{"--patch", "b3:" + strings.Repeat("0", 64)}, args...)...); code != 2 || !strings.Contains(stderr, "all three digests") {
		t.Errorf("one digest: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := approve(t, "yes\n", append([]string{"--json"}, args...)...); code != 2 || !strings.Contains(stderr, "--json approves without asking") {
		t.Errorf("--json without digests: exit %d\n%s", code, stderr)
	}

	code, stdout, stderr := approve(t, " Yes \n", args...)
	m := boundDigests.FindStringSubmatch(stdout)
	if code != 0 || m == nil || !strings.Contains(stdout, "\napproved "+m[1]+" (approval ") {
		t.Fatalf("yes: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "next: needle change apply ") {
		t.Errorf("the approval prints no apply line:\n%s", stdout)
	}
	// Approved: there is nothing left to approve.
	if code, _, stderr := approve(t, "yes\n", args...); code != exitConflict || !strings.Contains(stderr, "not awaiting approval") {
		t.Errorf("approving twice: exit %d\n%s", code, stderr)
	}
}

// movingReader moves the lifecycle on (cancels it) when the prompt first
// reads its answer, then answers yes.
type movingReader struct {
	move  func()
	moved bool
	r     io.Reader
}

func (m *movingReader) Read(p []byte) (int, error) {
	if !m.moved {
		m.moved = true
		m.move()
	}
	return m.r.Read(p)
}

// TestChangeApprove_ReviewIsBound: a lifecycle that moves on while the
// person reads the review is not approved by their yes: the approval binds
// the digests printed, and nothing is recorded.
func TestChangeApprove_ReviewIsBound(t *testing.T) {
	sc, flags := fakeAwaitingApproval(t)
	in := &movingReader{r: strings.NewReader("yes\n"), move: func() {
		needleRun(t, "", append(append([]string{"change", "cancel"}, flags...), sc.id)...)
	}}
	var stdout, stderr strings.Builder
	code := Main(context.Background(), append(append([]string{"change", "approve"}, flags...), sc.id), in, &stdout, &stderr)
	if code != exitConflict || !in.moved || boundDigests.FindString(stdout.String()) == "" {
		t.Fatalf("exit %d (moved %v), want %d\n%s%s", code, in.moved, exitConflict, stdout.String(), stderr.String())
	}
	events := needleRun(t, "", append(append([]string{"change", "events"}, flags...), sc.id)...)
	if strings.Contains(events, "approval_granted") || !strings.Contains(events, "cancel") {
		t.Errorf("the journal after a yes to a moved lifecycle:\n%s", events)
	}
}
