//go:build !linux

package checkout

// processAlive cannot tell a dead process from a live one portably, so it
// says alive and Sweep keeps every checkout: leaking one is safe, deleting
// one in use is not. Needle runs on linux; this keeps the package building.
func processAlive(pid int, start string) bool { return true }

// processStart has no portable source; markers then carry the pid alone.
func processStart(pid int) (string, error) { return "", nil }
