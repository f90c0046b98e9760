// Package filelock is an exclusive lock on a file that a process waits for
// and can give up waiting on: an flock(2) of the file, which the kernel
// releases when the last descriptor closes, so a process that crashes or is
// killed leaves no lock behind. Two opens of the file exclude each other
// even within one process (a flock belongs to an open file description).
//
// The lock file itself is never deleted or replaced: the lock belongs to
// its inode, and unlinking it while another process has it open would let
// two processes hold "the" lock at once.
package filelock

import (
	"context"
	"fmt"
	"os"
)

// Lock opens (creating it 0600) the file at path and waits, until ctx
// ends, for an exclusive lock of it. The returned unlock releases it.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := LockFile(ctx, f); err != nil { // closes f on failure
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing the only descriptor releases the flock
}
