package fsinfo

import "syscall"

// stRdonly is ST_RDONLY, the read-only mount flag statfs(2) reports.
const stRdonly = 0x1

func statfs(dir string) (readOnly, full bool) {
	var s syscall.Statfs_t
	if syscall.Statfs(dir, &s) != nil {
		return false, false
	}
	readOnly = s.Flags&stRdonly != 0
	// File systems that report no inodes at all (some FUSE ones) are not
	// full for lack of them.
	full = s.Bavail == 0 || s.Files > 0 && s.Ffree == 0
	return readOnly, full
}
