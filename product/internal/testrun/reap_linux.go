package testrun

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// reapTimeout bounds the wait for a sandbox's processes to die.
const reapTimeout = 30 * time.Second

// reap kills every process whose command line holds token (a run's box
// directory, which names the sandbox's permission profile, so the
// sandbox's init and the launcher carry it) and waits until each has
// died. Killing the process group of a run does not reach the sandbox's
// processes at once: they live in a PID namespace and session of their
// own and die with the namespace's init, asynchronously. Once its init
// has died every process of the namespace has, so when reap returns
// nothing of the run writes any more: its checkout can be removed and its
// cleanup recorded. A process is waited for through a pidfd (poll says
// when it has exited), never by sleeping.
func reap(token string) error {
	deadline := time.Now().Add(reapTimeout)
	for {
		fds := sandboxProcesses(token)
		if len(fds) == 0 {
			return nil
		}
		for _, fd := range fds {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		err := waitExited(fds, deadline)
		for _, fd := range fds {
			unix.Close(fd)
		}
		if err != nil {
			return err
		}
	}
}

// sandboxProcesses opens a pidfd of every live process whose command line
// holds token.
func sandboxProcesses(token string) []int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var fds []int
	for _, name := range names {
		cmdline, err := os.ReadFile(name)
		if err != nil || !bytes.Contains(cmdline, []byte(token)) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(name)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		if exited(fd) {
			unix.Close(fd) // a zombie: dead, its parent has not reaped it
			continue
		}
		fds = append(fds, fd)
	}
	return fds
}

// exited reports whether the process of pidfd fd has exited.
func exited(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n == 1
}

// waitExited waits until every process of fds has exited.
func waitExited(fds []int, deadline time.Time) error {
	p := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		p[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	for left := len(p); left > 0; {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return fmt.Errorf("%d processes of the sandbox did not die within %s", left, reapTimeout)
		}
		n, err := unix.Poll(p, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for the sandbox's processes: %w", err)
		}
		if n == 0 {
			continue
		}
		left = 0
		for i := range p {
			if p[i].Revents != 0 {
				p[i].Fd = -1 // done: poll skips a negative fd
			}
			if p[i].Fd >= 0 {
				left++
			}
		}
	}
	return nil
}
