package procdir

import (
	"fmt"
	"os"
	"strconv"
)

// ID names one process: PID and, where the platform tells it, Start (its
// start time as Start returns it; "" when unknown). Records that must
// outlive their writer (a lock holder, a checkout marker) carry one, so a
// later reader can ask whether that very process still runs.
type ID struct {
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"`
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

// Alive reports whether the process id names may still be running (see the
// package Alive, which this calls).
func (id ID) Alive() bool { return Alive(id.PID, id.Start) }

// String spells id for messages: "pid 42" or "pid 42 (start 1234)".
func (id ID) String() string {
	if id.Start == "" {
		return "pid " + strconv.Itoa(id.PID)
	}
	return fmt.Sprintf("pid %d (start %s)", id.PID, id.Start)
}
