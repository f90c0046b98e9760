// Package fsinfo says what state the file system holding a directory is
// in — full, mounted read-only, not writable by this process — so that a
// failure to write there can be told as what it is rather than as the error
// code of whatever library hit it (SQLite's "disk I/O error (4874)"). It is
// asked after a failure, never before an operation: the state can change in
// between, and the answer is only an explanation.
package fsinfo

import "syscall"

// State is what Of found; the zero value means nothing is known to be wrong.
type State struct {
	Full     bool // no blocks or no inodes left for this user
	ReadOnly bool // mounted read-only
	Denied   bool // not writable by this process (permissions)
}

// Of returns the state of the file system holding dir. A dir it cannot
// examine reports nothing.
func Of(dir string) State {
	var st State
	st.ReadOnly, st.Full = statfs(dir)
	if !st.ReadOnly && syscall.Access(dir, 2 /* W_OK */) == syscall.EACCES {
		st.Denied = true
	}
	return st
}
