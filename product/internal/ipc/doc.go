// Package ipc is the resident runtime's local endpoint: HTTP over a unix
// socket in the data directory. It knows nothing about the routes it
// carries.
//
// # Why HTTP over a unix socket
//
// The runtime already serves HTTP handlers to the browser; the IPC
// endpoint serves the same handlers (and a few more: the ones only a local
// command needs) over a second listener, so a CLI command gets exactly the
// answers the API gives, with the same DTOs, status codes and errors, and
// no second protocol to keep in step. Long-lived streams (an MCP session
// tunnelled from `needle mcp serve`) use an HTTP Upgrade on that socket:
// after "101 Switching Protocols" the connection carries the stream's own
// bytes (newline-delimited JSON-RPC) both ways, so the runtime serves it
// with the same line server as stdio.
//
// # Who may connect
//
// The socket is created 0600 by binding it inside a private 0700 directory
// beside its final name, setting its mode, then renaming it into place: it
// is never reachable with a wider mode. On linux, Accept also checks the
// peer's uid (SO_PEERCRED) and closes connections from any other user, in
// case the directory or mode is later loosened. Being able to connect is
// the authentication: no token is needed on the socket.
//
// # Stale sockets
//
// A runtime that crashed leaves its socket file behind. Listen removes a
// socket at the path before binding — the caller must hold the profile
// lock, which proves no live runtime uses it — and refuses to remove
// anything that is not a socket. Close removes the socket it created.
//
// A socket path is limited by sockaddr_un (107 bytes on linux); a longer
// data directory gets a clear error rather than a truncated name.
package ipc
