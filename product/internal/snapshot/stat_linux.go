package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// sysStat returns mtime and ctime in nanoseconds and the inode number. The
// ctime matters because it changes on every write, chmod and rename even
// when a tool restores the mtime (as `touch -r` or an archive extractor does).
func sysStat(fi fs.FileInfo) (mtimeNs, ctimeNs int64, inode uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.ModTime().UnixNano(), fi.ModTime().UnixNano(), 0
	}
	return st.Mtim.Nano(), st.Ctim.Nano(), st.Ino
}

// setProcessGroup puts cmd in its own process group and makes cancellation
// kill the whole group, so a helper git spawns (a hook, a credential or
// fsmonitor process) cannot outlive the context.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}
