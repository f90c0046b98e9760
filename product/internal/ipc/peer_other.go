//go:build !linux

package ipc

import "net"

// peerAllowed has no portable peer credentials; the socket's 0600 mode is
// the guard. Needle runs on linux.
func peerAllowed(c *net.UnixConn, uid int) bool { return true }
