package checkout

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestLockPath(t *testing.T) {
	ctx := context.Background()
	src := MustRepo(t, map[string]string{"a.txt": "a"})
	want := filepath.Join(MustOpen(t, src).Root(), ".git", lockName)
	if got, err := lockPath(ctx, src); got != want || err != nil {
		t.Errorf("lockPath(main) = %q, %v; want %s", got, err, want)
	}
	// A linked worktree shares the main repository's registry and lock.
	linked := filepath.Join(t.TempDir(), "linked")
	MustGit(t, src, "worktree", "add", "-q", "--detach", linked)
	if got, err := lockPath(ctx, linked); got != want || err != nil {
		t.Errorf("lockPath(linked) = %q, %v; want %s", got, err, want)
	}
	if _, err := lockPath(ctx, t.TempDir()); err == nil {
		t.Error("lockPath(plain dir) = nil error")
	}
}

func TestMutexes(t *testing.T) {
	s := &mutexes{m: make(map[string]*mutex)}
	ctx := context.Background()
	release, err := s.acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	releaseB, err := s.acquire(ctx, "b") // another name is independent
	if err != nil {
		t.Fatal(err)
	}
	releaseB()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.acquire(canceled, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire while held = %v, want context.Canceled", err)
	}
	got := make(chan error)
	go func() {
		r, err := s.acquire(ctx, "a")
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	if err := <-got; err != nil {
		t.Fatalf("acquire after release = %v", err)
	}
	if len(s.m) != 0 {
		t.Errorf("%d mutexes kept after their last release", len(s.m))
	}
}
