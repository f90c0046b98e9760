//go:build linux

package threadprio

import (
	"runtime"
	"syscall"
)

func lower(delta int) bool {
	runtime.LockOSThread() // never unlocked: see Lower
	tid := syscall.Gettid()
	cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return false
	}
	// The raw getpriority syscall returns 20 - nice.
	nice := 20 - cur
	return syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(nice+delta, 19)) == nil
}
