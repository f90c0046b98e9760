package procid

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func alive(pid int, start string) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	state, now, err := procStat(pid)
	switch {
	case err != nil:
		return true // uncertain: count it alive
	case state == "Z": // exited, not yet reaped
		return false
	default:
		return start == "" || now == start
	}
}

func start(pid int) (string, error) {
	_, s, err := procStat(pid)
	return s, err
}

// procStat returns the state (field 3) and start time (field 22) from
// /proc/<pid>/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func procStat(pid int) (state, start string, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", err
	}
	return parseStat(pid, string(data))
}

func parseStat(pid int, data string) (state, start string, err error) {
	i := strings.LastIndexByte(data, ')')
	if i < 0 {
		return "", "", fmt.Errorf("parse /proc/%d/stat", pid)
	}
	fields := strings.Fields(data[i+1:])
	if len(fields) < 20 {
		return "", "", fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return fields[0], fields[19], nil
}
