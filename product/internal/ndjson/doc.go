// Package ndjson is line-delimited I/O with another process: the one
// bounded line reader and line writer of the JSON-RPC server, the App
// Server client, the replay server and the transcript files, and the capped
// writers that collect what a child process writes besides its lines
// (stderr, git output).
//
// A line is bytes up to a newline, which is not part of it. Lines are
// read with a bufio.Reader and a limit the caller controls, never a
// bufio.Scanner, whose token limit fails in ways that are hard to report.
// An over-long line is reported as soon as it passes the limit, without
// being kept; a reader that carries on skips the rest of it. Written lines
// are whole: one Write per line, never a line holding a newline, nothing
// after a failed write. The bytes of a line are never changed: framing is
// all this package does, so frozen transcripts replay byte for byte.
package ndjson
