//go:build unix

package checkout

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/needle-dev/needle/product/internal/snapshot"
)

// Environment of a helper process (TestChurnHelper).
const (
	helperSource = "NEEDLE_TEST_HELPER_SOURCE"
	helperParent = "NEEDLE_TEST_HELPER_PARENT"
)

// churn runs workers goroutines that each create, verify and remove
// checkouts of repo under parent until each has done rounds or stop is
// closed, and returns their errors.
func churn(repo *snapshot.Repo, parent string, workers, rounds int, stop <-chan struct{}) error {
	ctx := context.Background()
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for r := range rounds {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				c, err := Create(ctx, repo, parent)
				if err == nil {
					err = errors.Join(c.Verify(ctx), c.Remove(ctx))
				}
				if err != nil {
					errs <- fmt.Errorf("pid %d worker %d round %d: %w", os.Getpid(), w, r, err)
					return
				}
			}
			errs <- nil
		}()
	}
	var all []error
	for range workers {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// TestChurnHelper is the other process of TestCreate_OtherProcesses;
// run normally, it does nothing. It says "ready", then creates and removes
// checkouts until its stdin closes.
func TestChurnHelper(t *testing.T) {
	src, parent := os.Getenv(helperSource), os.Getenv(helperParent)
	if src == "" {
		return
	}
	repo := MustOpen(t, src)
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	fmt.Println("ready")
	if err := churn(repo, parent, 1, math.MaxInt, stop); err != nil {
		t.Fatal(err)
	}
}

// TestCreate_OtherProcesses creates and removes checkouts of one
// repository from several processes at once, as concurrent needle runs do:
// the worktree lock must hold across processes, not just goroutines.
func TestCreate_OtherProcesses(t *testing.T) {
	src := MustRepo(t, map[string]string{"a.txt": "a"})
	MustWrite(t, src, map[string]string{"a.txt": "dirty"})
	repo, parent := MustOpen(t, src), t.TempDir()
	var stops []func() error
	defer func() {
		for _, stop := range stops {
			if err := stop(); err != nil {
				t.Error(err)
			}
		}
		checkNoWorktrees(t, src)
	}()
	for range 4 {
		stop, err := startChurnHelper(src, parent)
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop)
	}
	if err := churn(repo, parent, 4, 2, nil); err != nil {
		t.Error(err)
	}
}

// startChurnHelper starts TestChurnHelper on src and parent and returns
// once it is ready; stop ends it and returns its failure.
func startChurnHelper(src, parent string) (stop func() error, err error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestChurnHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperSource+"="+src, helperParent+"="+parent)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	out := bufio.NewReader(stdout)
	first, _ := out.ReadString('\n')
	stop = func() error {
		stdin.Close()
		rest, _ := io.ReadAll(out)
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("helper: %w\n%s%s%s", err, first, rest, stderr.Bytes())
		}
		return nil
	}
	if first != "ready\n" {
		return nil, errors.Join(errors.New("helper not ready"), stop())
	}
	return stop, nil
}

// holdLock takes the worktree lock file of the repository at src through an
// open file description of its own, as another process would, and returns
// its release.
func holdLock(t *testing.T, src string) (release func()) {
	t.Helper()
	path, err := lockPath(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		t.Fatalf("flock %s: %v", path, err)
	}
	return func() { f.Close() }
}

// TestCreate_WaitsForWorktreeLock: while another process holds the
// repository's worktree lock, Create adds no worktree; it waits, and gives
// up cleanly when its context ends.
func TestCreate_WaitsForWorktreeLock(t *testing.T) {
	src := MustRepo(t, map[string]string{"a.txt": "a"})
	repo, parent := MustOpen(t, src), t.TempDir()
	release := holdLock(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	go func() {
		<-ctx.Done()
		release() // let the rollback run
	}()
	c, err := Create(ctx, repo, parent)
	if err == nil {
		c.Remove(context.Background())
		t.Fatal("Create = nil error while the worktree lock was held elsewhere")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrVerify) || errors.Is(err, ErrCleanup) {
		t.Fatalf("Create = %v, want ErrVerify wrapping context.DeadlineExceeded", err)
	}
	if got := ReadTree(t, parent); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
	checkNoWorktrees(t, src)
	if admin, _ := os.ReadDir(filepath.Join(src, ".git", "worktrees")); len(admin) != 0 {
		t.Errorf(".git/worktrees holds %v", admin)
	}
	MustCreate(t, repo, parent) // the lock is free again
}
