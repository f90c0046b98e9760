// Package threadprio lowers the CPU priority of the calling goroutine's
// thread, for background work that must not delay requests on a machine
// with few cores: the scheduler runs the other threads of the process
// (and other processes) first when they compete for a core, and gives the
// lowered thread the cores nobody else wants.
package threadprio

// Lower locks the calling goroutine to its OS thread and raises that
// thread's nice value by delta (Linux: setpriority on the thread id,
// which affects that thread alone). The goroutine keeps the thread until
// it exits; the runtime then ends the thread instead of reusing it, so no
// other goroutine ever runs at the lowered priority. It reports whether
// the priority was lowered; where it cannot be (another OS), the
// goroutine runs as before, locked to its thread.
func Lower(delta int) bool { return lower(delta) }
