//go:build !linux

package procid

// alive cannot tell a dead process from a live one portably, so it says
// alive: keeping something is safe, taking it from a live owner is not.
// Needle runs on linux; this keeps the package building.
func alive(pid int, start string) bool { return true }

// start has no portable source; IDs then carry the pid alone.
func start(pid int) (string, error) { return "", nil }
