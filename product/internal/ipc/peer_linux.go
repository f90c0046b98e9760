package ipc

import (
	"net"
	"syscall"
)

// peerAllowed reports whether the process at the other end of c runs as
// uid (SO_PEERCRED); any failure to tell is a refusal.
func peerAllowed(c *net.UnixConn, uid int) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return false
	}
	return int(cred.Uid) == uid
}
