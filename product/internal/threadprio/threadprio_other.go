//go:build !linux

package threadprio

import "runtime"

func lower(int) bool {
	runtime.LockOSThread() // never unlocked: see Lower
	return false
}
