//go:build !linux

package snapshot

import (
	"io/fs"
	"os/exec"
)

// sysStat falls back to the portable fields: without ctime and inode the
// cache still detects changes through size and mtime, and the racy window
// still guards same-tick rewrites. Needle runs on linux; this keeps the
// package building elsewhere.
func sysStat(fi fs.FileInfo) (mtimeNs, ctimeNs int64, inode uint64) {
	return fi.ModTime().UnixNano(), fi.ModTime().UnixNano(), 0
}

// setProcessGroup leaves cmd as is; cancellation kills only git itself.
func setProcessGroup(cmd *exec.Cmd) {}
