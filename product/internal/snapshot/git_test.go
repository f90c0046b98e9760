package snapshot

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRunGit(t *testing.T) {
	root := MustInit(t)
	ctx := context.Background()
	t.Run("ErrGitError", func(t *testing.T) {
		_, err := runGit(ctx, root, "rev-parse", "--verify", "no-such-ref")
		var ge *GitError
		if !errors.As(err, &ge) {
			t.Fatalf("runGit = %v; want a *GitError", err)
		}
		if ge.ExitCode != 128 || !strings.Contains(ge.Stderr, "no-such-ref") && !strings.Contains(ge.Stderr, "single revision") {
			t.Errorf("GitError = %+v; want exit 128 and git's message", ge)
		}
		if !strings.Contains(err.Error(), "rev-parse") {
			t.Errorf("Error() = %q; want the arguments", err)
		}
		if r := ge.Reason(); strings.HasPrefix(r, "fatal: ") || strings.Contains(r, "rev-parse") || strings.Contains(r, "\n") || r == "" {
			t.Errorf("Reason() = %q; want git's first line, without \"fatal: \" and the command", r)
		}
		if ge.Dir != root {
			t.Errorf("Dir = %q; want %q", ge.Dir, root)
		}
	})
	t.Run("ErrCanceled", func(t *testing.T) {
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := runGit(canceled, root, "status"); !errors.Is(err, context.Canceled) {
			t.Errorf("runGit = %v; want context.Canceled", err)
		}
	})
	t.Run("IgnoresInheritedGitEnv", func(t *testing.T) {
		// As inside a hook of another repository.
		t.Setenv("GIT_DIR", t.TempDir())
		t.Setenv("GIT_WORK_TREE", t.TempDir())
		t.Setenv("GIT_INDEX_FILE", "/nonexistent/index")
		if r := MustOpen(t, root, nil); !r.IsGit() {
			t.Error("IsGit() = false with GIT_DIR inherited")
		}
		if r := MustOpen(t, t.TempDir(), nil); r.IsGit() {
			t.Error("IsGit() = true for a plain directory with GIT_DIR inherited")
		}
	})
}

func TestSplitNUL(t *testing.T) {
	for in, want := range map[string]int{"": 0, "a\x00": 1, "a\x00b c\x00": 2, "a\nb\x00": 1} {
		if got := splitNUL([]byte(in)); len(got) != want {
			t.Errorf("splitNUL(%q) = %q; want %d records", in, got, want)
		}
	}
}
