// Package procid names a process for the life of the machine: its pid and,
// on linux, its start time in clock ticks since boot. A pid alone is not
// enough to tell whether the process that wrote a record is still running:
// in a container every run may get the same small pid, so a record left by
// a crashed run would look alive forever. The start time tells a reused pid
// apart.
//
// Whenever liveness is uncertain the answer is "alive": every caller uses
// it to decide whether it may take over something (a checkout, a lock, a
// socket) and a wrong "dead" breaks a process that is still using it.
//
// This package is the shared home of the liveness check that
// product/internal/checkout also carries privately (proc_linux.go); checkout
// can switch to it without changing behaviour.
package procid

import (
	"fmt"
	"os"
	"strconv"
)

// ID names one process: PID and, where the platform tells it, Start (the
// start time as /proc/<pid>/stat field 22 spells it). An empty Start means
// unknown; Alive then trusts the pid alone.
type ID struct {
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"`
}

// String spells id for messages: "pid 42" or "pid 42 (start 1234)".
func (id ID) String() string {
	if id.Start == "" {
		return "pid " + strconv.Itoa(id.PID)
	}
	return fmt.Sprintf("pid %d (start %s)", id.PID, id.Start)
}

// Self returns the ID of the calling process.
func Self() (ID, error) {
	pid := os.Getpid()
	start, err := Start(pid)
	if err != nil {
		return ID{}, fmt.Errorf("own start time: %w", err)
	}
	return ID{PID: pid, Start: start}, nil
}

// Alive reports whether the process id names may still be running: false
// only when the pid is gone, is a zombie, or now belongs to a process that
// started at another time.
func Alive(id ID) bool {
	if id.PID <= 0 {
		return false
	}
	return alive(id.PID, id.Start)
}

// Start returns the start time of process pid, or "" where the platform
// has no source for it.
func Start(pid int) (string, error) { return start(pid) }
