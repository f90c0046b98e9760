package filelock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestLockFile_Cancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	holder := open()
	if err := LockFile(context.Background(), holder); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := LockFile(canceled, open()); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockFile while held = %v, want context.Canceled", err)
	}
	holder.Close()
	// The abandoned wait gets the lock and must let go of it at once.
	f := open()
	defer f.Close()
	if err := LockFile(context.Background(), f); err != nil {
		t.Fatalf("LockFile after release = %v", err)
	}
}

// TestLock_ExcludesProcesses: while this process holds the lock, a helper
// process cannot take it (it gives up at its deadline); once unlocked, it
// can.
func TestLock_ExcludesProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := helper(t, path, 200*time.Millisecond).CombinedOutput(); err == nil {
		t.Fatalf("another process took a held lock: %s", out)
	}
	unlock()
	if out, err := helper(t, path, time.Minute).CombinedOutput(); err != nil {
		t.Fatalf("another process could not take a released lock: %v %s", err, out)
	}
}

// helper runs TestHelperLock in a child process, trying path for wait.
func helper(t *testing.T, path string, wait time.Duration) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLock$")
	cmd.Env = append(os.Environ(), "FILELOCK_HELPER_PATH="+path, "FILELOCK_HELPER_WAIT="+strconv.FormatInt(int64(wait), 10))
	return cmd
}

// TestHelperLock is not a test: TestLock_ExcludesProcesses runs it in a
// child process, which tries the lock until its deadline.
func TestHelperLock(t *testing.T) {
	path := os.Getenv("FILELOCK_HELPER_PATH")
	if path == "" {
		return
	}
	wait, _ := strconv.ParseInt(os.Getenv("FILELOCK_HELPER_WAIT"), 10, 64)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(wait))
	defer cancel()
	unlock, err := Lock(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}
