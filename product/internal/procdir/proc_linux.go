package procdir

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether the process pid, started at start (Start's value;
// "" when unknown), may still be running. A pid alone is not enough: in a container every run of needle may
// get the same small pid, so whatever a crashed run left would look alive
// forever. The start time tells a reused pid apart. Whenever the answer is
// uncertain the process counts as alive, since a wrong "dead" deletes what a
// live process is using.
func Alive(pid int, start string) bool {
	if pid <= 0 {
		return true // signal 0 to pid 0 or -1 probes a whole group, which always "lives"
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	state, now, err := procStat(pid)
	switch {
	case err != nil:
		return true
	case state == "Z": // exited, not yet reaped
		return false
	default:
		return start == "" || now == start
	}
}

// Start returns the start time of process pid, in clock ticks since
// boot: with the pid it names one process for the life of the machine.
func Start(pid int) (string, error) {
	_, start, err := procStat(pid)
	return start, err
}

// procStat returns the state (field 3) and start time (field 22) from
// /proc/<pid>/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func procStat(pid int) (state, start string, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", err
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return "", "", fmt.Errorf("parse /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return "", "", fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return fields[0], fields[19], nil
}
