//go:build unix

package filelock

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// LockFile takes an exclusive flock of f, giving up when ctx ends, and
// owns f on failure: it is closed, now or (see below) later. A blocking
// flock cannot be interrupted, so a wait runs in a goroutine, which an
// abandoned wait leaves to close f once it finally gets the lock.
func LockFile(ctx context.Context, f *os.File) error {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		if err != nil {
			f.Close()
		}
		return err
	}
	done := make(chan error, 1)
	go func() { done <- flock(f, syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
		}
		return err
	case <-ctx.Done():
		go func() {
			<-done
			f.Close()
		}()
		return ctx.Err()
	}
}

// flock applies how to f, retrying when a signal interrupts the wait.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	cerr := rc.Control(func(fd uintptr) {
		for {
			if err = syscall.Flock(int(fd), how); !errors.Is(err, syscall.EINTR) {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}
